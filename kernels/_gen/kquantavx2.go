package main

import "fmt"

// The AVX2 K-quant matrix-vector kernels (kquant_avx2_amd64.s): Q4_K,
// Q5_K and Q6_K weights (ggml's super-blocks of 256, one weight row after
// another at a stride) times activations in the q8ka layout (see
// kernels/actlayout.go: [nb][256]int8 quants | [nb]float32 d | [nb][16]int16
// sums of 16 quants | [nb][8]int16 sums of 32 quants), for one activation
// row (<t>VecAVX2) or four (<t>Vec4AVX2).
//
// Per super-block the integer sums (the scales and, for Q6_K, the offset
// of 32 included) are computed exactly in 8 int32 lanes; the float
// accumulator then gets acc += (d*yd) * float(lanes), and for Q4_K/Q5_K
// acc -= (dmin*yd) * float(the 4 lanes of sum m*bsum). A weight row's
// result is HSUM(acc) (avx2_amd64.h). The 4-row kernels run the same
// sequence per activation row, so their results are bit-identical to the
// 1-row kernels'.

func init() { files["kquant_avx2_amd64.s"] = kqAFile }

// kqAType is a K-quant weight type of the Q4_K family (Q4_K, Q5_K): the
// 6-bit scales and mins at bytes 4-15 of every block, the nibbles at qs.
type kqAType struct {
	name string // q4k, q5k
	size int    // bytes per super-block
	qs   int    // offset of the 128 bytes of nibbles
	high bool   // Q5_K: a fifth bit per quant in qh (bytes 16-47)
}

var (
	kqAQ4K = kqAType{"q4k", 144, 16, false}
	kqAQ5K = kqAType{"q5k", 176, 48, true}
)

func kqAFile() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`#include "avx2_amd64.h"

// Q4_K, Q5_K and Q6_K weights times activations in the q8ka layout (see
// actlayout.go). Per super-block the integer sums (scales and, for Q6_K,
// the offset of 32 included) are computed exactly in 8 int32 lanes; the
// float accumulator then gets acc += (d*yd) * float(lanes), and for Q4_K/Q5_K
// acc -= (dmin*yd) * float(the 4 lanes of sum m*bsum). The row's result
// is HSUM(acc). The 4-row kernels run the same sequence per activation
// row, so their results are bit-identical.
`)
	kqAConstants(a)
	a.raw("// kbits+32b: the byte 1<<b in every byte (Q5_K's fifth bits).")
	var kbits []byte
	for b := 0; b < 8; b++ {
		v := splat(1 << b)
		kbits = append(kbits, v[:]...)
	}
	kqAData(a, "kbits", kbits)
	a.raw("")
	a.raw(`// The one-activation-row kernels (decode: weights streamed from memory
// once) prefetch the weights 1 KiB ahead, which the hardware prefetcher
// alone does not sustain behind this much arithmetic per byte; a prefetch
// past the end of the matrix is harmless.
//
// The Q4_K and Q5_K kernels are software-pipelined: the scales of block
// b+1 are decoded (into the other of two stack buffers) before block b's
// dot products, so the decode's latency overlaps the previous block's
// work.
//
// Q5_K is Q4_K with the fifth bit of each quant from qh (bytes 16-47):
// bit 2k of qh[l] for element 64k+l (low nibble of chunk k), bit 2k+1
// for element 64k+32+l. Quants 0..31: pair sums <= 2*31*127.
`)
	for _, t := range []kqAType{kqAQ4K, kqAQ5K} {
		kqAKVec(a, t, 1)
		kqAKVec(a, t, 4)
	}
	kqAQ6Vec(a, 1)
	kqAQ6Vec(a, 4)
	return a
}

// kqAData emits a read-only table of any multiple of 8 bytes.
func kqAData(a *asm, name string, v []byte) {
	for i := 0; i < len(v); i += 8 {
		var q uint64
		for j := 7; j >= 0; j-- {
			q = q<<8 | uint64(v[i+j])
		}
		a.raw("DATA %s<>+%d(SB)/8, $0x%016x", name, i, q)
	}
	a.raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, len(v))
}

// kqAWords returns n 128-bit lanes of VPSHUFB indices, lane i
// broadcasting int16 word(i) of its source lane to all eight int16s.
func kqAWords(n int, word func(i int) int) (v []byte) {
	for i := 0; i < n; i++ {
		for j := 0; j < 8; j++ {
			w := byte(2 * word(i))
			v = append(v, w, w+1)
		}
	}
	return v
}

// kqAZext returns VPSHUFB indices that zero-extend the bytes idx(0..7)
// to int16s (0x80 zeroes the high byte).
func kqAZext(idx func(i int) int) (v []byte) {
	for i := 0; i < 8; i++ {
		v = append(v, byte(idx(i)), 0x80)
	}
	return v
}

// kqAConstants: the masks, the shuffles of the Q4_K scale decode
// (kqAScales) and the Q6_K scale broadcast (kqAQ6Scale).
func kqAConstants(a *asm) {
	for _, m := range []byte{0x0f, 0x03, 0x0c, 0x30, 0xc0} {
		a.data(fmt.Sprintf("kmask%02x", m), splat(m))
	}
	m3f := splat(0x3f)
	kqAData(a, "kmask3f", m3f[:16])
	a.raw("")
	// kshift4: the dword shifts [0, 4, 0, 0] (VPSRLVD).
	kqAData(a, "kshift4", []byte{0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	a.raw("")
	// q6kshuf+32c: lane 0 gets int16 2c in every int16, lane 1 int16
	// 2c+1 (the scales of the two 16-element halves of a 32-element chunk).
	kqAData(a, "q6kshuf", kqAWords(8, func(i int) int { return i }))
	a.raw("")
	// kscdup0/1: dword j = scale byte j (4-7 for kscdup1) as int16 in both
	// halves; kmins: the 8 min bytes (8-15) as int16.
	kqAData(a, "kscdup0", kqAZext(func(i int) int { return i / 2 }))
	kqAData(a, "kscdup1", kqAZext(func(i int) int { return 4 + i/2 }))
	kqAData(a, "kmins", kqAZext(func(i int) int { return 8 + i }))
	a.raw("")
}

// kqARow addresses activation row r (of four) at base: (base),
// (base)(R11*1), (base)(R11*2), (base)(R14*1) (R11 = the activation row
// stride, R14 = 3*R11). act (main.go) is the same with an offset.
func kqARow(base string, r int) string {
	return "(" + base + ")" + [4]string{"", "(R11*1)", "(R11*2)", "(R14*1)"}[r]
}

// kqASums is the register of the pointer to the activation sums (of 32
// for Q4_K/Q5_K, of 16 for Q6_K): AX for one row, R8 for four (where AX
// is taken by the output stride of kqAStore4).
func kqASums(rows int) string {
	if rows == 1 {
		return "AX"
	}
	return "R8"
}

// kqAPrologue emits the TEXT line and the argument loads up to the row
// loop of a <name> kernel of 1 or 4 activation rows, with the frame (the
// scale buffers of Q4_K/Q5_K) and sumsOff: sums of 32 (x + 292*nb) or of
// 16 (x + 260*nb).
//
// One row: DI out, CX rows (len(out)), SI the weight row, R8 its stride,
// R9 blocks, R10 x, R11 yd (x + 256*nb), R14 the sums; per weight row BX,
// DX, R12, R13 and AX copy SI, R9, R10, R11 and R14.
//
// Four rows: DI out, CX rows, SI the weight row, R11/R14 the activation
// row stride (x1, x3); per weight row BX the weights, DX blocks, R12 x,
// R13 yd, R8 the sums (of row 0; rows 1-3 at the activation stride too).
func kqAPrologue(a *asm, name string, rows, frame int, sums32 bool) {
	if rows == 1 {
		a.raw("// func %s(out []float32, w []byte, stride, blocks int, x []byte)", name)
		a.raw("TEXT ·%s(SB), NOSPLIT, $%d-88", name, frame)
		a.op("MOVQ out_base+0(FP), DI")
		a.op("MOVQ out_len+8(FP), CX")
		a.op("MOVQ w_base+24(FP), SI")
		a.op("MOVQ stride+48(FP), R8")
		a.op("MOVQ blocks+56(FP), R9")
		a.op("MOVQ x_base+64(FP), R10")
		a.op("MOVQ R9, R11")
		a.op("SHLQ $8, R11")
		a.op("ADDQ R10, R11              // yd: x + 256*nb")
		if sums32 {
			a.op("LEAQ (R9)(R9*8), R14")
			a.op("SHLQ $2, R14")
			a.op("ADDQ R11, R14              // sums of 32: x + 292*nb")
		} else {
			a.op("LEAQ (R11)(R9*4), R14      // sums of 16: x + 260*nb")
		}
		return
	}
	a.raw("// func %s(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $%d-112", name, frame)
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ w_base+32(FP), SI")
	a.op("MOVQ rows+64(FP), CX")
	a.op("MOVQ xstride+104(FP), R11")
	a.op("LEAQ (R11)(R11*2), R14")
}

// kqARowStart starts the loop over weight rows (label l): the pointers of
// the row, the float accumulators Y12+r zeroed.
func kqARowStart(a *asm, l string, rows int, sums32 bool) {
	a.raw("")
	a.label(l)
	a.op("MOVQ SI, BX")
	if rows == 1 {
		a.op("MOVQ R9, DX")
		a.op("MOVQ R10, R12")
		a.op("MOVQ R11, R13")
		a.op("MOVQ R14, AX")
	} else {
		a.op("MOVQ blocks+72(FP), DX")
		a.op("MOVQ x_base+80(FP), R12")
		a.op("MOVQ DX, R13")
		a.op("SHLQ $8, R13")
		a.op("ADDQ R12, R13            // yd")
		if sums32 {
			a.op("LEAQ (DX)(DX*8), R8")
			a.op("SHLQ $2, R8")
			a.op("ADDQ R13, R8             // sums of 32")
		} else {
			a.op("LEAQ (R13)(DX*4), R8     // sums of 16")
		}
	}
	for r := 0; r < rows; r++ {
		a.op("VXORPS %s, %s, %s", y(12+r), y(12+r), y(12+r))
	}
}

// kqARowEnd stores the row's result(s) (one float per activation row, at
// DI + r*ostride), moves to the next weight row and closes the row loop
// (label l).
func kqARowEnd(a *asm, l string, rows int) {
	if rows == 1 {
		a.op("HSUM(Y12, X12, X0)")
		a.op("VMOVSS X12, (DI)")
		a.op("ADDQ   $4, DI")
		a.op("ADDQ   R8, SI")
	} else {
		kqAStore4(a)
		a.op("ADDQ $4, DI")
		a.op("ADDQ stride+56(FP), SI")
	}
	a.op("DECQ CX")
	a.op("JNZ  %s", l)
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// kqAStore4 stores HSUM(Y12..Y15) to out[r*ostride] (DI), r < 4.
// Clobbers AX, R9, X0.
func kqAStore4(a *asm) {
	for r := 0; r < 4; r++ {
		a.op("HSUM(%s, X%d, X0)", y(12+r), 12+r)
	}
	a.op("MOVQ   ostride+24(FP), AX")
	a.op("SHLQ   $2, AX")
	a.op("LEAQ   (AX)(AX*2), R9")
	for r, o := range []string{"(DI)", "(DI)(AX*1)", "(DI)(AX*2)", "(DI)(R9*1)"} {
		a.op("VMOVSS X%d, %s", 12+r, o)
	}
}

// kqAKVec emits <t>VecAVX2 (rows = 1) or <t>Vec4AVX2 (rows = 4) for Q4_K
// or Q5_K. Frame: two 32-byte scale buffers (0 and 32(SP)), the mins of
// the two blocks in flight in X7 and X11 (one row) or X6 (four rows).
//
// The loop is software-pipelined and unrolled twice so that the two
// buffers alternate: the scales of block 0 are decoded before the loop;
// each step decodes block b+1 into the other buffer, then runs block b.
// DX counts the blocks left after the one in flight; the last block runs
// at <l>last0 or <l>last1, whichever buffer holds it.
//
// One row keeps the nibble mask in Y14; four rows use Y12-Y15 as float
// accumulators and read the mask from memory.
func kqAKVec(a *asm, t kqAType, rows int) {
	name, l := t.name+"VecAVX2", t.name
	if rows == 4 {
		name, l = t.name+"Vec4AVX2", t.name+"4"
	}
	kqAKLoop(a, t, rows, name, l, func() {
		if rows == 1 {
			a.op("VMOVDQU kmask0f<>(SB), Y14")
		}
	}, func(buf int, mn string) { kqAKBlock(a, t, rows, buf, mn) })
}

// kqAKLoop emits a Q4_K or Q5_K kernel named name (labels from l) for 1
// or 4 activation rows, as kqAKVec describes, with setup run after the
// arguments are loaded and block(buf, mn) emitting one super-block
// (scales in the stack buffer at buf, mins in mn).
func kqAKLoop(a *asm, t kqAType, rows int, name, l string, setup func(), block func(buf int, mn string)) {
	mn := [2]string{"X7", "X11"}
	if rows == 4 {
		mn[1] = "X6"
	}
	a.raw("// %s: %s weights times %s; the scales of block b+1 are", name, kqAUpper(t.name), kqARows(rows))
	a.raw("// decoded (into the other stack buffer) before block b's dot products.")
	kqAPrologue(a, name, rows, 64, true)
	setup()
	kqARowStart(a, l+"row", rows, true)
	kqAScales(a, 0, 0, mn[0])
	a.op("DECQ   DX")
	a.raw("")
	a.label(l + "loop")
	for p := 0; p < 2; p++ {
		last := fmt.Sprintf("%slast%d", l, p)
		a.op("JZ   %s", last)
		kqAScales(a, t.size, 32*(1-p), mn[1-p])
		block(32*p, mn[p])
		kqANext(a, t.size, 16, rows)
		a.op("DECQ DX")
	}
	a.op("JMP  %sloop", l)
	for p := 0; p < 2; p++ {
		a.raw("")
		a.label(fmt.Sprintf("%slast%d", l, p))
		block(32*p, mn[p])
		if p == 0 {
			a.op("JMP %send", l)
		}
	}
	a.raw("")
	a.label(l + "end")
	kqARowEnd(a, l+"row", rows)
}

// kqARows says "one activation row" or "four activation rows".
func kqARows(rows int) string {
	if rows == 1 {
		return "one activation row"
	}
	return "four activation rows"
}

// kqAUpper spells a type name the way the comments do (q4k -> Q4_K).
func kqAUpper(n string) string {
	return fmt.Sprintf("Q%c_K", n[1])
}

// kqANext advances to the next super-block: the weights by size, the
// activation quants by 256, yd by 4, the sums by sums (16 or 32 bytes).
func kqANext(a *asm, size, sums, rows int) {
	a.op("ADDQ $%d, BX", size)
	a.op("ADDQ $256, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $%d, %s", sums, kqASums(rows))
}

// kqAScales decodes the 12 packed 6-bit scales and mins of the block at
// woff(BX) (the words a, b, c of its bytes 4-15, little-endian):
//
//	sc[0:4] = a & 0x3f,  sc[4:8] = c & 0x0f | (a >> 6) << 4,
//	m[0:4]  = b & 0x3f,  m[4:8]  = c >> 4  | (b >> 6) << 4,
//
// bytewise. X0 = the 16 bytes at 4 (dwords a, b, c, unused); X1 = (X0 >>
// 6) & 3 << 4 (the top two bits of every byte, at bit 4); X2 = c, c >> 4
// in dwords 0, 1 (VPSRLVD by kshift4), masked to nibbles and ORed with
// X1: dword 0 = sc[4:8], dword 1 = m[4:8]; X0 & 0x3f has sc[0:4], m[0:4]
// in dwords 0, 1, and VPUNPCKLDQ interleaves the two into sc[0:8] |
// m[0:8]. Then the dword at buf+4j(SP) = scale j in both int16 halves
// (for VPBROADCASTD), mn = the 8 mins as int16. Clobbers X0-X2.
func kqAScales(a *asm, woff, buf int, mn string) {
	a.op("VMOVDQU    %d(BX), X0", woff+4)
	a.op("VPSRLD     $6, X0, X1")
	a.op("VPAND      kmask03<>(SB), X1, X1")
	a.op("VPSLLD     $4, X1, X1")
	a.op("VPSHUFD    $0xaa, X0, X2")
	a.op("VPSRLVD    kshift4<>(SB), X2, X2")
	a.op("VPAND      kmask0f<>(SB), X2, X2")
	a.op("VPOR       X1, X2, X2")
	a.op("VPAND      kmask3f<>(SB), X0, X0")
	a.op("VPUNPCKLDQ X2, X0, X0")
	a.op("VPSHUFB    kscdup0<>(SB), X0, X1")
	a.op("VPSHUFB    kscdup1<>(SB), X0, X2")
	a.op("VPSHUFB    kmins<>(SB), X0, %s", mn)
	a.op("VMOVDQU    X1, %d(SP)", buf)
	a.op("VMOVDQU    X2, %d(SP)", buf+16)
}

// kqAKBlock emits one super-block of Q4_K or Q5_K for 1 or 4 activation
// rows, scales in the stack buffer at buf and mins in mn. Integer
// accumulators: one row sums its low and high sub-blocks in Y8 and Y9
// (two independent chains, added at the end); four rows keep one each,
// Y8-Y11. Float accumulators Y12+r.
//
// Chunk k (of 4) is the 32 bytes at qs+32k: its low nibbles are
// sub-block 2k (activation bytes 64k..64k+31), its high nibbles sub-block
// 2k+1 (64k+32..64k+63).
func kqAKBlock(a *asm, t kqAType, rows, buf int, mn string) {
	mask := "kmask0f<>(SB)"
	if rows == 1 {
		for p := 1024; p < 1024+192; p += 64 {
			a.op("PREFETCHT0 %d(BX)", p)
		}
		mask = "Y14"
	}
	for r := 0; r < max(rows, 2); r++ {
		a.op("VPXOR %s, %s, %s", y(8+r), y(8+r), y(8+r))
	}
	for k := 0; k < 4; k++ {
		kqAUnpack(a, t, k, buf, mask)
		for r := 0; r < rows; r++ {
			lo, hi := y(8+r), y(8+r)
			if rows == 1 {
				hi = "Y9"
			}
			kqADot(a, act(64*k, "R12", r), act(64*k+32, "R12", r), lo, hi)
		}
	}
	if rows == 1 {
		a.op("VPADDD Y9, Y8, Y8")
	}
	// X1 = [d, dmin] of the block (its first two halves).
	a.op("VCVTPH2PS (BX), X1")
	for r := 0; r < rows; r++ {
		kqAFloat(a, kqARow("R13", r), kqARow(kqASums(rows), r), y(8+r), y(12+r), mn)
	}
}

// kqAUnpack loads chunk k of the nibbles: Y1 = the low nibbles (sub-block
// 2k), Y2 = the high ones (2k+1), Y3 and Y4 = their scales in every int16
// (from the stack buffer at buf). For Q5_K the fifth bits of the two
// sub-blocks (bits 2k and 2k+1 of qh) are ORed in at bit 4.
func kqAUnpack(a *asm, t kqAType, k, buf int, mask string) {
	a.op("VMOVDQU      %d(BX), Y1", t.qs+32*k)
	a.op("VPSRLW       $4, Y1, Y2")
	a.op("VPAND        %s, Y1, Y1", mask)
	a.op("VPAND        %s, Y2, Y2", mask)
	if t.high {
		kqAHigh(a, 2*k, "Y1")
		kqAHigh(a, 2*k+1, "Y2")
	}
	a.op("VPBROADCASTD %d(SP), Y3", buf+8*k)
	a.op("VPBROADCASTD %d(SP), Y4", buf+8*k+4)
}

// kqAHigh ORs into dst bit b of every qh byte, moved to bit 4: masked
// first (kbits+32b), so the 16-bit shift moves nothing across bytes (bit
// 4 itself stays). Clobbers Y5.
func kqAHigh(a *asm, b int, dst string) {
	a.op("VMOVDQU kbits<>+%d(SB), Y5", 32*b)
	a.op("VPAND   16(BX), Y5, Y5")
	if b < 4 {
		a.op("VPSLLW  $%d, Y5, Y5", 4-b)
	} else if b > 4 {
		a.op("VPSRLW  $%d, Y5, Y5", b-4)
	}
	a.op("VPOR    Y5, %s, %s", dst, dst)
}

// kqADot: ilo += sc*(q.x) for the low sub-block (Y1, scales Y3,
// activations at xlo), ihi for the high one (Y2, Y4, xhi). The nibbles
// are VPMADDUBSW's unsigned operand (pair sums <= 2*15*127, or 2*31*127
// for Q5_K: no saturation). Clobbers Y0, Y5.
func kqADot(a *asm, xlo, xhi, ilo, ihi string) {
	a.op("VPMADDUBSW %s, Y1, Y5", xlo)
	a.op("VPMADDWD   Y3, Y5, Y5")
	a.op("VPADDD     Y5, %s, %s", ilo, ilo)
	a.op("VPMADDUBSW %s, Y2, Y0", xhi)
	a.op("VPMADDWD   Y4, Y0, Y0")
	a.op("VPADDD     Y0, %s, %s", ihi, ihi)
}

// kqAFloat: f += (d*yd)*float(i); f -= (dmin*yd)*float(mn.bsums), with X1
// = [d, dmin]: the products d*yd and dmin*yd are rounded once (lanes of
// one VMULPS). The VEX-128 VPMADDWD/VCVTDQ2PS zero Y0's upper lane, so
// the mins subtract in 4 lanes. Clobbers i, Y0, Y2, X3, X4, Y5.
func kqAFloat(a *asm, yd, bsums, i, f, mn string) {
	a.op("VCVTDQ2PS    %s, %s", i, i)
	a.op("VBROADCASTSS %s, X3", yd)
	a.op("VMULPS       X3, X1, X4")
	a.op("VBROADCASTSS X4, Y5")
	a.op("VFMADD231PS  %s, Y5, %s", i, f)
	a.op("VPMADDWD     %s, %s, X0", bsums, mn)
	a.op("VCVTDQ2PS    X0, X0")
	a.op("VMOVSHDUP    X4, X2")
	a.op("VBROADCASTSS X2, Y2")
	a.op("VFNMADD231PS Y0, Y2, %s", f)
}

// kqAQ6Vec emits q6kVecAVX2 (rows = 1) or q6kVec4AVX2 (rows = 4). A
// Q6_K block (210 bytes): ql (0-127: low nibbles), qh (128-191: high
// two bits), 16 int8 scales (192-207), fp16 d (208). Per half (128
// elements) the 64 bytes of ql and 32 of qh give 4 chunks of 32 quants
// (kqAQ6Unpack), each chunk with two scales (one per 16 elements, one per
// 128-bit lane, kqAQ6Scale). Integer accumulators Y8+r start at the
// offset correction (kqAQ6Corr); float accumulators Y12+r.
func kqAQ6Vec(a *asm, rows int) {
	name, l := "q6kVecAVX2", "q6k"
	if rows == 4 {
		name, l = "q6kVec4AVX2", "q6k4"
	}
	a.raw("// %s: Q6_K weights times %s; the integer sums start at", name, kqARows(rows))
	a.raw("// -32*sum(sc*bsum) (the quants enter unsigned), then take the two halves")
	a.raw("// of the block, four chunks of 32 quants each.")
	kqAPrologue(a, name, rows, 0, false)
	kqARowStart(a, l+"row", rows, false)
	a.raw("")
	a.label(l + "blk")
	if rows == 1 {
		for p := 1024; p < 1024+256; p += 64 {
			a.op("PREFETCHT0 %d(BX)", p)
		}
	}
	a.op("VPMOVSXBW 192(BX), Y7")
	for r := 0; r < rows; r++ {
		kqAQ6Corr(a, kqARow(kqASums(rows), r), y(8+r))
	}
	q := [4]string{"Y1", "Y2", "Y4", "Y5"}
	for h := 0; h < 2; h++ {
		// Y6 = the 8 int8 scales of the half as int16, in both lanes.
		a.op("VPMOVSXBW %d(BX), X6", 192+8*h)
		a.op("VPERMQ    $0x44, Y6, Y6")
		kqAQ6Unpack(a, 64*h, 64*h+32, 128+32*h)
		for c := 0; c < 4; c++ {
			a.op("VPSHUFB q6kshuf<>+%d(SB), Y6, Y3", 32*c)
			for r := 0; r < rows; r++ {
				kqAQ6Dot(a, act(128*h+32*c, "R12", r), q[c], y(8+r))
			}
		}
	}
	// Y1 = d in every lane.
	a.op("VPBROADCASTW 208(BX), X1")
	a.op("VCVTPH2PS    X1, Y1")
	for r := 0; r < rows; r++ {
		kqAQ6Float(a, kqARow("R13", r), y(8+r), y(12+r))
	}
	kqANext(a, 210, 32, rows)
	a.op("DECQ DX")
	a.op("JNZ  %sblk", l)
	a.raw("")
	kqARowEnd(a, l+"row", rows)
}

// kqAQ6Corr: i = -32 * sum_g sc_g*bsum_g (the offset of the 6-bit
// quants, which enter unsigned), for the 16 scales in Y7 and the 16 sums
// of 16 at bsums. Clobbers Y0.
func kqAQ6Corr(a *asm, bsums, i string) {
	a.op("VPMADDWD %s, Y7, Y0", bsums)
	a.op("VPSLLD   $5, Y0, Y0")
	a.op("VPXOR    %s, %s, %s", i, i, i)
	a.op("VPSUBD   Y0, %s, %s", i, i)
}

// kqAQ6Unpack: the 6-bit quants (0..63) of one half super-block from 32
// bytes of low nibbles at ql, 32 more at qr and 32 bytes of high bits at
// qh: Y1, Y2, Y4, Y5 = elements 0-31, 32-63, 64-95, 96-127 (low nibbles
// of ql, of qr, high nibbles of ql, of qr), with bits 2j, 2j+1 of qh as
// bits 4-5 of quarter j (masked with kmask of 3<<2j, then shifted by 4-2j).
// Clobbers Y0, Y3.
func kqAQ6Unpack(a *asm, ql, qr, qh int) {
	a.op("VMOVDQU %d(BX), Y1", ql)
	a.op("VMOVDQU %d(BX), Y2", qr)
	a.op("VMOVDQU %d(BX), Y3", qh)
	for _, p := range [][2]string{{"Y1", "Y4"}, {"Y2", "Y5"}} {
		a.op("VPSRLW  $4, %s, %s", p[0], p[1])
		a.op("VPAND   kmask0f<>(SB), %s, %s", p[1], p[1])
		a.op("VPAND   kmask0f<>(SB), %s, %s", p[0], p[0])
	}
	for j, q := range []string{"Y1", "Y2", "Y4", "Y5"} {
		t := "Y0"
		if j == 3 {
			t = "Y3" // the last quarter takes qh itself
		}
		a.op("VPAND   kmask%02x<>(SB), Y3, %s", 3<<(2*j), t)
		switch s := 4 - 2*j; {
		case s > 0:
			a.op("VPSLLW  $%d, %s, %s", s, t, t)
		case s < 0:
			a.op("VPSRLW  $%d, %s, %s", -s, t, t)
		}
		a.op("VPOR    %s, %s, %s", t, q, q)
	}
}

// kqAQ6Dot: i += sc*(q.x), the scales in Y3. Pair sums <= 2*63*127.
// Clobbers Y0.
func kqAQ6Dot(a *asm, xaddr, q, i string) {
	a.op("VPMADDUBSW %s, %s, Y0", xaddr, q)
	a.op("VPMADDWD   Y3, Y0, Y0")
	a.op("VPADDD     Y0, %s, %s", i, i)
}

// kqAQ6Float: f += (d*yd)*float(i), with Y1 = d. Clobbers i, Y3.
func kqAQ6Float(a *asm, yd, i, f string) {
	a.op("VCVTDQ2PS    %s, %s", i, i)
	a.op("VBROADCASTSS %s, Y3", yd)
	a.op("VMULPS       Y3, Y1, Y3")
	a.op("VFMADD231PS  %s, Y3, %s", i, f)
}
