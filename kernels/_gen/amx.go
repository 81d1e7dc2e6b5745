package main

import (
	"fmt"
	"strings"
)

// The AMX kernels of the AVX-512 tier (in packk_vnni8_amd64.s, whose
// constants they share), for prefill on CPUs with AMX-INT8: Q4_K here and
// Q6_K (amx6.go), 32 activation rows at a time, and Q4_0 and Q8_0, 16.
// All read the eight-row kernels' packed layout two groups (16 weight
// rows) at a time. First Q4_K.
//
// A tile product sums over all the elements it is given, but Q4_K has a
// 6-bit scale per sub-block of 32 and weight row. Multiplying each
// sub-block's 16x16 sums by its scales afterwards (VPMULLD) cost more
// than the tile products saved. Instead each scale sc is split as
// 8*hi + lo (hi, lo < 8) and the weights are multiplied by both at the
// unpacking: q*hi and q*lo are below 106, still signed bytes, and one
// VPMULLW multiplies the two bytes of a word exactly (q0*s < 256 never
// carries into q1*s). Two tiles of products then sum over the whole
// block, and I = 8*Chi + Clo is exactly the sum over sub-blocks of sc
// times their dot products, the integer the eight-row kernel forms with
// VPDPBUSD and VPMULLD. The mins and the float steps that follow are
// q4k8z's operations in its order, so every result has vec1's bits.
//
// Per block: the 16 weight rows' nibbles become two B tiles per chunk of
// 64 elements (16 rows of 64 bytes: row k holds elements 4k..4k+3 of
// each weight row, as the packed loads are laid out), written to the
// stack once for all the activation rows, which follow 32 at a time; the
// activations are A tiles straight from the q8ka rows (16 rows of 64
// bytes). Tiles: 0 and 5 the A tiles of activation rows 0-15 and 16-31 of
// the 32, 1 and 2 the B tiles (hi, lo), 3 and 4 the C tiles (hi, lo) of
// rows 0-15, 6 and 7 of rows 16-31.
//
// The Go assembler knows no AMX instruction; they are emitted as bytes
// (amxTile, amxDot, amxZero, amxRelease, amxConfig) with the instruction
// in a comment, and TestAMXEncodings has GNU objdump read them back where
// it is installed.

// amxRegs numbers the general registers as the instruction encoding
// does.
var amxRegs = map[string]int{"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SP": 4, "BP": 5, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13, "R14": 14, "R15": 15}

// amxBytes emits b as one line of BYTE directives, with the instruction
// it encodes as a comment.
func amxBytes(a *asm, what string, b []byte) {
	parts := make([]string, len(b))
	for i, v := range b {
		parts[i] = fmt.Sprintf("BYTE $0x%02x", v)
	}
	a.op("%s // %s", strings.Join(parts, "; "), what)
}

// amxTile encodes TILELOADD (store false) or TILESTORED (store true) of
// tile t at disp(base)(index*1): VEX.128.F2 (F3 for the store).0F38.W0
// 4B with a SIB byte.
func amxTile(store bool, t int, disp int, base, index string) []byte {
	b, x := amxRegs[base], amxRegs[index]
	pp := byte(3) // F2: TILELOADD
	if store {
		pp = 2 // F3: TILESTORED
	}
	v1 := byte(0x80 | 0x02)
	if x < 8 {
		v1 |= 0x40
	}
	if b < 8 {
		v1 |= 0x20
	}
	out := []byte{0xc4, v1, 0x78 | pp, 0x4b}
	mod := byte(2)
	switch {
	case disp == 0 && b&7 != 5:
		mod = 0
	case disp >= -128 && disp < 128:
		mod = 1
	}
	out = append(out, mod<<6|byte(t&7)<<3|4, byte(x&7)<<3|byte(b&7))
	switch mod {
	case 1:
		out = append(out, byte(int8(disp)))
	case 2:
		out = append(out, byte(disp), byte(disp>>8), byte(disp>>16), byte(disp>>24))
	}
	return out
}

// amxDot encodes TDPBSSD dst, a, b (dst += a . b, signed bytes both):
// VEX.128.F2.0F38.W0 5E, b in VEX.vvvv.
func amxDot(dst, ta, tb int) []byte {
	return []byte{0xc4, 0xe2, byte(^tb&15)<<3 | 3, 0x5e, 0xc0 | byte(dst)<<3 | byte(ta)}
}

// amxZero encodes TILEZERO t; amxRelease TILERELEASE; amxConfig
// LDTILECFG (reg).
func amxZero(t int) []byte { return []byte{0xc4, 0xe2, 0x7b, 0x49, 0xc0 | byte(t)<<3} }

func amxRelease() []byte { return []byte{0xc4, 0xe2, 0x78, 0x49, 0xc0} }

func amxConfig(reg string) []byte {
	r := amxRegs[reg]
	if r == 4 || r == 5 || r >= 8 {
		panic("amxConfig: base " + reg + " needs a SIB byte or displacement")
	}
	return []byte{0xc4, 0xe2, 0x78, 0x49, byte(r)}
}

// amxConsts emits the tile configuration of q4kAMX (palette 1; all
// eight tiles 16 rows of 64 bytes) and the 0x07 bytes.
func amxConsts(a *asm) {
	var colsb, rows [8]int
	for t := range colsb {
		colsb[t], rows[t] = 64, 16
	}
	tileConfig(a, "amxcfg", colsb, rows)
	a.data64("amxk07", splat(0x07))
}

// tileConfig emits a 64-byte LDTILECFG operand, palette 1, tile t of
// rows[t] rows of colsb[t] bytes.
func tileConfig(a *asm, name string, colsb, rows [8]int) {
	var cfg [64]byte
	cfg[0] = 1
	for t := range colsb {
		cfg[16+2*t] = byte(colsb[t])
		cfg[48+t] = byte(rows[t])
	}
	for i := 0; i < 64; i += 8 {
		var q uint64
		for j := 7; j >= 0; j-- {
			q = q<<8 | uint64(cfg[i+j])
		}
		a.raw("DATA %s<>+%d(SB)/8, $0x%016x", name, i, q)
	}
	a.raw("GLOBL %s<>(SB), RODATA|NOPTR, $64\n", name)
}

// rowBase returns the register that addresses rows 4q..4q+3 of a table
// of rows stride (R11 or R8) from base (act's base): base itself for
// q = 0, else BX, set here to base + 4q*stride.
func rowBase(a *asm, base, stride string, q int) string {
	if q == 0 {
		return base
	}
	return rowBaseTo(a, base, stride, q, "BX")
}

// Scratch of q4kAMX, from the 64-byte aligned DX: the int32 scales (sc,
// 8 vectors), the min pairs (mp, 4), the B tiles of the four chunks (bt:
// chunk c's hi tile at bt+2048c, its lo tile 1024 on) and the stored C
// tiles (ct: hi and lo of rows 0-15, then of rows 16-31).
const (
	amxSc, amxMp, amxBt, amxCt, amxScratch = 0, 512, 768, 8960, 13056
)

// q4kAMX is the AMX kernel (see the top of the file), for rows
// activation rows (a multiple of 32), on amx32Kernel's skeleton; AX walks
// the activations' sums of 32 for the mins.
func q4kAMX(a *asm) {
	amx32Kernel(a, amx32{
		name: "q4kPackVec32AMX", label: "q4kamx", gb: 1152, scratch: amxScratch, sums: true,
		bt: amxBt, ct: amxCt, shift: 3,
		unpack: func(a *asm) {
			a.op("VMOVDQU64 v8k0f<>(SB), Z24")
			q4kScales8At(a, "SI", "DX", amxSc, amxMp, 64)
			q4kAMXUnpack(a)
		},
		finish: q4kAMXFloat,
	})
}

// amx32 is a kernel on amx32Kernel's skeleton: two groups (16 weight
// rows) and 32 activation rows at a time, each block's B tiles (hi and
// lo, chunk c's at bt+2048c and 1024 on) unpacked once for every group of
// 32 rows, C tiles stored at ct (amxTiles2) and combined as
// I = Chi<<shift + Clo before the float steps.
type amx32 struct {
	name, label string
	gb, scratch int  // the bytes of a group's block; of the aligned scratch
	sums        bool // AX walks the activations' sums (16 bytes a block)
	bt, ct      int
	shift       int
	loUnsigned  bool                 // the lo tiles are unsigned bytes
	unpack      func(a *asm)         // writes the block's B tiles
	group       func(a *asm)         // if not nil, starts a group's float steps
	finish      func(a *asm, m0 int) // the float steps of rows m0..m0+7
}

// amxMaxRows is the most activation rows an AMX kernel takes in a call:
// their float sums accumulate in a dense scratch of amxMaxRows*64 bytes on
// its stack, copied to out when a pair of groups is done. In out itself,
// rows a multiple of 4 KiB apart (3072 or 2048 floats) fall in one L1
// set and did not stay in L1 from one block to the next. With the scratch
// (and amxSumsStart's prefetch) pp512 of Q4_K_M ran 7% faster, Q4_0 3%.
const amxMaxRows = 256

// amxMaxRowsFunc emits amxMaxRowsAsm, which returns amxMaxRows to the Go
// wrapper that splits larger tiles, so the limit is stated once.
func amxMaxRowsFunc(a *asm) {
	a.raw("// func amxMaxRowsAsm() int")
	a.raw("TEXT ·amxMaxRowsAsm(SB), NOSPLIT, $0-8")
	a.op("MOVQ $%d, ret+0(FP)", amxMaxRows)
	a.op("RET")
	a.raw("")
}

// amx32Kernel emits k. The float sums accumulate in the scratch from fs
// (zeroed first; amxMaxRows). Registers: DI the float sums (the group's
// first row), R8 the output row stride in bytes, R15 the float sums' row
// being finished (while unpacking, the next pair's block:
// amxPrefetchPair), SI weights (group g's block),
// R10 the group stride, CX pairs of groups left, R11/R14 the activation
// row stride (x1, x3), R12 activation quants, R13 their d, AX their sums
// (k.sums), all of the group's first row, BX row addresses, DX the
// aligned scratch, R9 = 64 (the scratch tiles' row stride). Stack: the
// counts of blocks and of row groups left, the block's R12, R13, AX and
// DI, 32 rows of activations in bytes, the pair's out.
func amx32Kernel(a *asm, k amx32) {
	const bc, gc, s12, s13, sax, sdi, x32, sout, ab = 0, 8, 16, 24, 32, 40, 48, 56, 64
	fs := k.scratch
	frame := ab + 8 + 64 + fs + 64*amxMaxRows
	l := k.label
	regs, slots := []string{"R12", "R13", "DI"}, []int{s12, s13, sdi}
	steps := []string{"R12", "R13"}
	if k.sums {
		regs, slots = []string{"R12", "R13", "AX", "DI"}, []int{s12, s13, sax, sdi}
		steps = append(steps, "AX")
	}
	a.raw("// func %s(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride, rows int)", k.name)
	a.raw("TEXT ·%s(SB), 0, $%d-112", k.name, frame)
	loadArgs(a, 8)
	a.op("SHRQ $1, CX")
	a.op("MOVQ blocks+64(FP), R10")
	a.op("IMUL3Q $%d, R10, R10", k.gb)
	a.op("MOVQ $64, R9")
	a.op("LEAQ amxcfg<>(SB), BX")
	amxBytes(a, "LDTILECFG (BX)", amxConfig("BX"))
	alignedStack(a, ab)
	amxRowStep(a, 5, x32)
	a.label(l + "pair")
	amxSumsStart(a, l, fs, sout, true)
	a.op("MOVQ x_base+72(FP), R12")
	a.op("MOVQ blocks+64(FP), BX")
	a.op("MOVQ BX, %d(SP)", bc)
	a.op("IMUL3Q $256, BX, R13")
	a.op("ADDQ R12, R13")
	if k.sums {
		a.op("IMUL3Q $292, BX, AX")
		a.op("ADDQ R12, AX")
	}
	a.label(l + "block")
	amxPrefetchPair(a, k.gb)
	k.unpack(a)
	for i, r := range regs {
		a.op("MOVQ %s, %d(SP)", r, slots[i])
	}
	a.op("MOVQ rows+104(FP), BX")
	a.op("SHRQ $5, BX")
	a.op("MOVQ BX, %d(SP)", gc)
	a.label(l + "group")
	amxTiles2(a, k.bt, k.ct, k.loUnsigned)
	a.op("MOVQ DI, R15")
	if k.group != nil {
		k.group(a)
	}
	for g := 0; g < 2; g++ {
		for m := 0; m < 16; m++ {
			a.op("VPSLLD $%d, %d(DX), %s", k.shift, k.ct+2048*g+64*m, z(m))
			a.op("VPADDD %d(DX), %s, %s", k.ct+2048*g+1024+64*m, z(m), z(m))
		}
		for h := 0; h < 2; h++ {
			k.finish(a, 16*g+8*h)
		}
	}
	for _, r := range steps {
		a.op("ADDQ %d(SP), %s", x32, r)
	}
	a.op("ADDQ $%d, DI", 32*64)
	a.op("DECQ %d(SP)", gc)
	a.op("JNZ %sgroup", l)
	for i, r := range regs {
		a.op("MOVQ %d(SP), %s", slots[i], r)
	}
	a.op("ADDQ $%d, SI", k.gb)
	a.op("ADDQ $256, R12")
	a.op("ADDQ $4, R13")
	if k.sums {
		a.op("ADDQ $16, AX")
	}
	a.op("DECQ %d(SP)", bc)
	a.op("JNZ %sblock", l)
	amxCopyOut(a, l, fs, sout, "R15")
	amxEpilogue(a, l)
}

// amxCopyOut copies a pair's float sums, rows+104(FP) rows from fs(DX),
// to their output rows from the pair's out (at sout(SP), stride R8), and
// leaves that out in DI; AX, BX and r are scratch.
func amxCopyOut(a *asm, l string, fs, sout int, r string) {
	a.op("MOVQ %d(SP), DI", sout)
	a.op("MOVQ DI, %s", r)
	a.op("LEAQ %d(DX), AX", fs)
	a.op("MOVQ rows+104(FP), BX")
	a.label(l + "copy")
	a.op("VMOVAPS (AX), Z0")
	a.op("VMOVUPS Z0, (%s)", r)
	a.op("ADDQ $64, AX")
	a.op("ADDQ R8, %s", r)
	a.op("DECQ BX")
	a.op("JNZ %scopy", l)
}

// amxRowStep stores 1<<shift rows of activations (R11) in bytes at
// x(SP): a row group's step.
func amxRowStep(a *asm, shift, x int) {
	a.op("MOVQ R11, BX")
	a.op("SHLQ $%d, BX", shift)
	a.op("MOVQ BX, %d(SP)", x)
}

// amxSumsStart starts a pair of groups: its out (DI) saved at sout(SP),
// DI the float sums' scratch at fs(DX), zeroed if zero, and each output
// row's line of the pair prefetched (amxCopyOut writes them at the end;
// as store misses there they cost 5-8%). AX and BX are scratch, and R15
// and Z0 if zero.
func amxSumsStart(a *asm, l string, fs, sout int, zero bool) {
	a.op("MOVQ DI, %d(SP)", sout)
	a.op("MOVQ DI, AX")
	a.op("LEAQ %d(DX), DI", fs)
	if zero {
		a.op("MOVQ DI, R15")
		a.op("VPXORD Z0, Z0, Z0")
	}
	a.op("MOVQ rows+104(FP), BX")
	a.label(l + "outs")
	if zero {
		a.op("VMOVAPS Z0, (R15)")
		a.op("ADDQ $64, R15")
	}
	a.op("PREFETCHT0 (AX)")
	a.op("ADDQ R8, AX")
	a.op("DECQ BX")
	a.op("JNZ %souts", l)
}

// amxPrefetchPair prefetches into L2 the block of gb bytes of both groups
// of the next pair that sits where SI's block is in this pair (R15 its
// address, free before the unpacking): a pair's weights come from memory
// once per tile of activation rows, and the next pair's two streams start
// where the hardware's prefetch has not yet seen them.
func amxPrefetchPair(a *asm, gb int) {
	a.op("LEAQ (SI)(R10*2), R15")
	for off := 0; off < gb; off += 64 {
		a.op("PREFETCHT1 %d(R15)", off)
		a.op("PREFETCHT1 %d(R15)(R10*1)", off)
	}
}

// q4kAMXUnpack writes the block's B tiles: the factors hi and lo of
// sub-block j's scales as words (Z2j, Z2j+1), then each packed load of
// the pair's nibbles (low: sub-block 2c, high: 2c+1) times both.
func q4kAMXUnpack(a *asm) {
	a.op("VMOVDQU64 amxk07<>(SB), Z25")
	for j := 0; j < 8; j++ {
		a.op("VMOVDQA64 %d(DX), Z26", amxSc+64*j)
		a.op("VPSLLD $16, Z26, Z27")
		a.op("VPORD Z27, Z26, Z26")
		a.op("VPSRLW $3, Z26, %s", z(2*j))
		a.op("VPANDD Z25, Z26, %s", z(2*j+1))
	}
	for c := 0; c < 4; c++ {
		bt := amxBt + 2048*c
		for k := 0; k < 8; k++ {
			pairLoad(a, 128+256*c+32*k, 16)
			a.op("VPSRLW $4, Z16, Z17")
			a.op("VPANDD Z24, Z16, Z16")
			a.op("VPANDD Z24, Z17, Z17")
			a.op("VPMULLW %s, Z16, Z18", z(4*c))
			a.op("VPMULLW %s, Z16, Z19", z(4*c+1))
			a.op("VPMULLW %s, Z17, Z20", z(4*c+2))
			a.op("VPMULLW %s, Z17, Z21", z(4*c+3))
			a.op("VMOVDQA64 Z18, %d(DX)", bt+64*k)
			a.op("VMOVDQA64 Z20, %d(DX)", bt+512+64*k)
			a.op("VMOVDQA64 Z19, %d(DX)", bt+1024+64*k)
			a.op("VMOVDQA64 Z21, %d(DX)", bt+1536+64*k)
		}
	}
}

// q4kAMXFloat finishes the block for activation rows m0..m0+7 of the
// group, whose integer sums I are in Z(m0%16)...: their mins M (Z16+r)
// and F += (d*yd)*float(I) - (dmin*yd)*float(M), the operations of q4k8z
// in its order, F in the float sums' row at R15 (moved on a row each).
func q4kAMXFloat(a *asm, m0 int) {
	for p := 0; p < 4; p++ {
		a.op("VMOVDQA64 %d(DX), %s", amxMp+64*p, z(24+p))
	}
	var base string
	for r := 0; r < 8; r++ {
		if r%4 == 0 {
			base = rowBase(a, "AX", "R11", (m0+r)/4)
		}
		mr := z(16 + r)
		a.op("VPXORD %s, %s, %s", mr, mr, mr)
		for p := 0; p < 4; p++ {
			a.op("VPDPWSSD.BCST %s, %s, %s", act(4*p, base, r%4), z(24+p), mr)
		}
	}
	pairLoad16x(a, 0, 28)
	a.op("VCVTPH2PS Y28, Z28")
	pairLoad16x(a, 16, 29)
	a.op("VCVTPH2PS Y29, Z29")
	for r := 0; r < 8; r++ {
		m := m0 + r
		if r%4 == 0 {
			base = rowBase(a, "R13", "R11", m/4)
		}
		i, mr := z(m%16), z(16+r)
		a.op("VBROADCASTSS %s, Z30", act(0, base, r%4))
		a.op("VMOVAPS (R15), Z24")
		a.op("VMULPS Z30, Z28, Z31")
		a.op("VCVTDQ2PS %s, %s", i, i)
		a.op("VFMADD231PS %s, Z31, Z24", i)
		a.op("VMULPS Z30, Z29, Z31")
		a.op("VCVTDQ2PS %s, %s", mr, mr)
		a.op("VFNMADD231PS %s, Z31, Z24", mr)
		a.op("VMOVAPS Z24, (R15)")
		a.op("ADDQ $64, R15")
	}
}

// The Q4_0 and Q8_0 AMX kernels (also W4A8's and W8A8's, packed as Q4_0
// and Q8_0): two groups (16 weight rows) at a time, a chunk of blocks
// unpacked at once for all the activation rows, which follow sixteen at a
// time. A block is one 32-element tile product, its weights as signed
// bytes (Q4_0's unpacked as q-8, Q8_0's as they are), so the tile's sums
// are I = sum w*x, the integer the eight-row kernels form from the
// activations' offset term (-8*sum, -128*sum) and VPDPBUSD. The float step
// (F += (dw*dx)*float(I)) comes per block, as in q8z8: the C tile is
// stored and each activation row's sums finished from there in q8z8's
// operations and order, so every result has vec1's bits. Blocks run in
// pairs on two sets of tiles (A, B, C: 0-2 and 3-5), and a pair's sums
// are finished while the next pair's products run.

// amx40Consts emits the tile configuration of the 32-element kernels:
// A tiles (0, 3) 16 rows of 32 bytes, B tiles (1, 4) 8 rows of 64, C
// tiles (2, 5) 16 rows of 64.
func amx40Consts(a *asm) {
	colsb := [8]int{32, 64, 64, 32, 64, 64}
	rows := [8]int{16, 8, 16, 16, 8, 16}
	tileConfig(a, "amxcfg40", colsb, rows)
	a.data64("amxk08", splat(0x08))
}

// amx16 is a 32-element block kernel: its name and label, the bytes of a
// group's block (its d at dOff) and the unpacking of the block at
// off(SI) into the B tile at bt(base).
type amx16 struct {
	name, label string
	gb, dOff    int
	unpack      func(a *asm, off int, base string, bt int)
}

// q40AMX emits the Q4_0 AMX kernel, q80AMX the Q8_0 one.
func q40AMX(a *asm) { amx16Kernel(a, amx16{"q4_0PackVec16AMX", "q40amx", 144, 128, q40AMXUnpack}) }
func q80AMX(a *asm) { amx16Kernel(a, amx16{"q8_0PackVec16AMX", "q80amx", 272, 256, q80AMXUnpack}) }

// amx16Chunk is how many blocks' B tiles amx16Kernel unpacks at a time,
// for all the activation rows: unpacking them anew for every 16 rows
// took a third of the kernel's time.
const amx16Chunk = 16

// amx16Kernel emits k. A pair of groups is taken a chunk of blocks at a
// time: the chunk's B tiles are unpacked into the scratch, then every 16
// activation rows run over them, their float sums loaded from the scratch
// from fs (zero in the first chunk; amxMaxRows) and stored back, and at
// the end copied to out. Registers: DI the float sums (the pair's first
// row), R8 the output row stride in bytes, R9 the float sums' row of the
// 16 in progress (the unpacking's destination while unpacking), SI
// weights (group g's block), R10 the group stride, CX pairs of groups
// left, R11/R14 the activation row stride (x1, x3), R12 activation
// quants, R13 their d, AX the block's B tile, BX row addresses, R15 = 64,
// DX the aligned scratch (the chunk's B tiles, 512 bytes each, then the
// two stored C tiles). Z0+m the float sums of activation row m, Z16 0x0f
// bytes, Z23 0x08 bytes, Z17/Z18 unpacked weights, Z19-Z22 scratch, Z27
// the weights' d. Stack: counts of blocks (of the loop; left after the
// chunk; in the chunk) and of row groups, the chunk's SI, its activation
// quants and d (row 0; the row group's), whether it is the first, 16
// rows of activations in bytes and the pair's out.
func amx16Kernel(a *asm, k amx16) {
	const bc, left, cn, rc, sSI, sX, sD, sXr, sDr, first, x16, sout, ab = 0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96
	const ct = 512 * amx16Chunk
	const fs = ct + 2048
	const frame = ab + 8 + 64 + fs + 64*amxMaxRows
	l := k.label
	a.raw("// func %s(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride, rows int)", k.name)
	a.raw("TEXT ·%s(SB), 0, $%d-112", k.name, frame)
	loadArgs(a, 8)
	a.op("SHRQ $1, CX")
	a.op("MOVQ blocks+64(FP), R10")
	a.op("IMUL3Q $%d, R10, R10", k.gb)
	a.op("LEAQ amxcfg40<>(SB), BX")
	amxBytes(a, "LDTILECFG (BX)", amxConfig("BX"))
	a.op("MOVQ $64, R15")
	a.op("VMOVDQU64 v8k0f<>(SB), Z16")
	a.op("VMOVDQU64 amxk08<>(SB), Z23")
	alignedStack(a, ab)
	amxRowStep(a, 4, x16)
	a.label(l + "pair")
	amxSumsStart(a, l, fs, sout, false)
	a.op("MOVQ x_base+72(FP), R12")
	a.op("MOVQ blocks+64(FP), BX")
	a.op("MOVQ BX, %d(SP)", left)
	a.op("IMUL3Q $64, BX, R13")
	a.op("ADDQ R12, R13")
	a.op("MOVQ R12, %d(SP)", sX)
	a.op("MOVQ R13, %d(SP)", sD)
	a.op("MOVQ $1, %d(SP)", first)
	a.label(l + "chunk")
	a.op("MOVQ %d(SP), BX", left)
	a.op("MOVQ $%d, AX", amx16Chunk)
	a.op("CMPQ BX, AX")
	a.op("CMOVQLT BX, AX")
	a.op("SUBQ AX, %d(SP)", left)
	a.op("MOVQ AX, %d(SP)", cn)
	a.op("MOVQ SI, %d(SP)", sSI)
	a.op("MOVQ DX, R9")
	a.label(l + "unpack")
	k.unpack(a, 0, "R9", 0)
	a.op("ADDQ $%d, SI", k.gb)
	a.op("ADDQ $512, R9")
	a.op("DECQ AX")
	a.op("JNZ %sunpack", l)
	a.op("MOVQ %d(SP), BX", sX)
	a.op("MOVQ BX, %d(SP)", sXr)
	a.op("MOVQ %d(SP), BX", sD)
	a.op("MOVQ BX, %d(SP)", sDr)
	a.op("MOVQ DI, R9")
	a.op("MOVQ rows+104(FP), BX")
	a.op("SHRQ $4, BX")
	a.op("MOVQ BX, %d(SP)", rc)
	a.label(l + "group")
	amx16Sums(a, l, first)
	a.op("MOVQ %d(SP), R12", sXr)
	a.op("MOVQ %d(SP), R13", sDr)
	a.op("MOVQ %d(SP), SI", sSI)
	a.op("MOVQ DX, AX")
	a.op("MOVQ %d(SP), BX", cn)
	a.op("SHRQ $1, BX")
	a.op("MOVQ BX, %d(SP)", bc)
	a.op("TESTQ BX, BX")
	a.op("JZ %stail", l)
	// The first two blocks, then the loop: two more blocks' products
	// while the previous two are finished.
	amx16Tiles(a, 2)
	amx16Store(a, ct, 2)
	amx16Advance(a, k, 2)
	a.op("DECQ %d(SP)", bc)
	a.op("JZ %sdrain", l)
	a.label(l + "block")
	amx16Tiles(a, 2)
	amx16Finish(a, k, ct, 2, -2)
	amx16Store(a, ct, 2)
	amx16Advance(a, k, 2)
	a.op("DECQ %d(SP)", bc)
	a.op("JNZ %sblock", l)
	a.label(l + "drain")
	amx16Finish(a, k, ct, 2, -2)
	a.label(l + "tail")
	a.op("TESTQ $1, %d(SP)", cn)
	a.op("JZ %sstore", l)
	amx16Tiles(a, 1)
	amx16Store(a, ct, 1)
	amx16Finish(a, k, ct, 1, 0)
	a.label(l + "store")
	amx16Rows(a, "VMOVAPS %[1]s, %[2]s")
	a.op("MOVQ %d(SP), BX", x16)
	a.op("ADDQ BX, %d(SP)", sXr)
	a.op("ADDQ BX, %d(SP)", sDr)
	a.op("ADDQ $%d, R9", 16*64)
	a.op("DECQ %d(SP)", rc)
	a.op("JNZ %sgroup", l)
	// The next chunk: SI past this one, the activations on by its blocks.
	a.op("MOVQ $0, %d(SP)", first)
	a.op("MOVQ %d(SP), BX", cn)
	a.op("IMUL3Q $%d, BX, SI", k.gb)
	a.op("ADDQ %d(SP), SI", sSI)
	a.op("SHLQ $2, BX")
	a.op("ADDQ BX, %d(SP)", sD)
	a.op("SHLQ $3, BX")
	a.op("ADDQ BX, %d(SP)", sX)
	a.op("CMPQ %d(SP), $0", left)
	a.op("JNZ %schunk", l)
	amxCopyOut(a, l, fs, sout, "R9")
	amxEpilogue(a, l)
}

// amx16Sums starts a row group's float sums: zero in the first chunk,
// else the sums so far, from out.
func amx16Sums(a *asm, l string, first int) {
	a.op("CMPQ %d(SP), $0", first)
	a.op("JEQ %sload", l)
	for m := 0; m < 16; m++ {
		a.op("VPXORD %s, %s, %s", z(m), z(m), z(m))
	}
	a.op("JMP %ssums", l)
	a.label(l + "load")
	amx16Rows(a, "VMOVAPS %[2]s, %[1]s")
	a.label(l + "sums")
}

// amx16Rows emits format (a VMOVAPS between Z0+m and the row's
// address) for the 16 rows of float sums from R9.
func amx16Rows(a *asm, format string) {
	for m := 0; m < 16; m++ {
		a.op(format, z(m), fmt.Sprintf("%d(R9)", 64*m))
	}
}

// q40AMXUnpack writes the B tile of the Q4_0 block at off(SI) to
// bt(base): row k of the low nibbles (elements 4k..4k+3 of each weight
// row) and row 4+k of the high ones, each minus 8.
func q40AMXUnpack(a *asm, off int, base string, bt int) {
	for k := 0; k < 4; k++ {
		pairLoad(a, off+32*k, 17)
		a.op("VPSRLW $4, Z17, Z18")
		a.op("VPANDD Z16, Z17, Z17")
		a.op("VPANDD Z16, Z18, Z18")
		a.op("VPSUBB Z23, Z17, Z17")
		a.op("VPSUBB Z23, Z18, Z18")
		a.op("VMOVDQA64 Z17, %d(%s)", bt+64*k, base)
		a.op("VMOVDQA64 Z18, %d(%s)", bt+256+64*k, base)
	}
}

// q80AMXUnpack writes the B tile of the Q8_0 block at off(SI) to
// bt(base): its packed loads as they are, load k being row k.
func q80AMXUnpack(a *asm, off int, base string, bt int) {
	for k := 0; k < 8; k++ {
		pairLoad(a, off+32*k, 17+k%2)
		a.op("VMOVDQA64 Z%d, %d(%s)", 17+k%2, bt+64*k, base)
	}
}

// The steps of amx16Kernel on nb (1 or 2) blocks, block j on tile set j
// (its B tile at 512j(AX)): multiply, store the C tiles at ct; finish
// (the float steps) runs a loop iteration later (at = -2: the blocks
// before SI), so that a block's sums are finished while the next blocks'
// tile products run; advance moves SI, AX, R12 and R13 on by nb blocks.
func amx16Tiles(a *asm, nb int) {
	for j := 0; j < nb; j++ {
		ta, tb, tc := 3*j, 3*j+1, 3*j+2
		bt := 512 * j
		amxBytes(a, fmt.Sprintf("TILELOADD %d(AX)(R15*1), TMM%d", bt, tb), amxTile(false, tb, bt, "AX", "R15"))
		amxBytes(a, fmt.Sprintf("TILELOADD %d(R12)(R11*1), TMM%d", 32*j, ta), amxTile(false, ta, 32*j, "R12", "R11"))
		amxBytes(a, fmt.Sprintf("TILEZERO TMM%d", tc), amxZero(tc))
		amxBytes(a, fmt.Sprintf("TDPBSSD TMM%d, TMM%d, TMM%d", tb, ta, tc), amxDot(tc, ta, tb))
	}
}

func amx16Store(a *asm, ct, nb int) {
	for j := 0; j < nb; j++ {
		tc, c := 3*j+2, ct+1024*j
		amxBytes(a, fmt.Sprintf("TILESTORED TMM%d, %d(DX)(R15*1)", tc, c), amxTile(true, tc, c, "DX", "R15"))
	}
}

// amx16Finish adds the stored products of nb blocks, the first at
// block at from SI (and R13), to the float sums, in q8z8's steps.
func amx16Finish(a *asm, k amx16, ct, nb, at int) {
	for j := 0; j < nb; j++ {
		b, c := j+at, ct+1024*j
		pairLoad16x(a, k.gb*b+k.dOff, 27)
		a.op("VCVTPH2PS Y27, Z27")
		for q := 0; q < 4; q++ {
			dBase := rowBase(a, "R13", "R11", q)
			for i := 0; i < 4; i++ {
				m := 4*q + i
				I, t := z(19+m%2), z(21+m%2)
				a.op("VCVTDQ2PS %d(DX), %s", c+64*m, I)
				a.op("VMULPS.BCST %s, Z27, %s", act(4*b, dBase, i), t)
				a.op("VFMADD231PS %s, %s, %s", I, t, z(m))
			}
		}
	}
}

func amx16Advance(a *asm, k amx16, nb int) {
	a.op("ADDQ $%d, SI", k.gb*nb)
	a.op("ADDQ $%d, AX", 512*nb)
	a.op("ADDQ $%d, R12", 32*nb)
	a.op("ADDQ $%d, R13", 4*nb)
}

// rowBaseTo is rowBase with the result in dst instead of BX (q > 0).
func rowBaseTo(a *asm, base, stride string, q int, dst string) string {
	from := base
	for ; q >= 2; q -= 2 {
		a.op("LEAQ (%s)(%s*8), %s", from, stride, dst)
		from = dst
	}
	if q == 1 {
		a.op("LEAQ (%s)(%s*4), %s", from, stride, dst)
	}
	return dst
}

// amxEpilogue closes an AMX kernel's pair loop (DI and SI on to the next
// pair of groups) and releases the tiles.
func amxEpilogue(a *asm, l string) {
	a.op("ADDQ $64, DI")
	a.op("ADDQ R10, SI") // past group g+1
	a.op("DECQ CX")
	a.op("JNZ %spair", l)
	amxBytes(a, "TILERELEASE", amxRelease())
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}
