package main

import "fmt"

// The AVX-512 (F/BW/VL + VNNI) packed kernels (packk_avx512_amd64.s).
// They read the AVX2 tier's packed layout (packlayout.go) two groups of 8
// rows at a time: a ZMM register holds the same 32 bytes of group g (low
// half) and of group g+1 (high half, R10 = the group stride further on),
// so its 16 dword lanes are 16 rows that all take the same 4 activation
// bytes, which VPDPBUSD reads by embedded broadcast. The integer sums of
// a block are exact (VPDPBUSD sums u8*s8 products in 32 bits), and the
// float steps are those of the AVX2 kernels lane for lane, so each result
// is bit-identical to the AVX2 tier's (a last odd group runs the AVX2
// kernel).

func z(i int) string { return fmt.Sprintf("Z%d", i) }

// pairEnd ends a pair kernel's pass over a pair of groups: it stores the
// A rows' 16 sums (Z12+a; R8/R9 the output stride x1/x3), moves SI past
// the pair's second group and loops to pair while pairs are left (CX).
func pairEnd(a *asm, A int, pair string) {
	a.op("VMOVUPS Z12, (DI)")
	if A == 4 {
		a.op("VMOVUPS Z13, (DI)(R8*1)")
		a.op("VMOVUPS Z14, (DI)(R8*2)")
		a.op("VMOVUPS Z15, (DI)(R9*1)")
	}
	pairNext(a, pair)
}

// pairNext closes a pair kernel's loop over pairs of groups: DI past the
// pair's 16 outputs, SI past its second group, back to pair while pairs
// are left (CX), then the return.
func pairNext(a *asm, pair string) {
	a.op("ADDQ $64, DI")
	a.op("ADDQ R10, SI") // past group g+1
	a.op("DECQ CX")
	a.op("JNZ %s", pair)
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// blockPasses emits a one-row kernel's loop over the DX blocks of a pair:
// a pass of 1, 2, 4, ... blocks where DX has that bit, then passes of big
// blocks (a power of two) until none are left; pass(nb) emits nb blocks.
// It ends at the label store.
func blockPasses(a *asm, l func(string) string, big int, pass func(nb int)) {
	for nb := 1; nb < big; nb *= 2 {
		a.op("TESTQ $%d, DX", nb)
		a.op("JZ %s", l(fmt.Sprint("skip", nb)))
		pass(nb)
		a.op("SUBQ $%d, DX", nb)
		a.op("JZ %s", l("store"))
		a.label(l(fmt.Sprint("skip", nb)))
	}
	a.label(l(fmt.Sprint("pass", big)))
	pass(big)
	a.op("SUBQ $%d, DX", big)
	a.op("JNZ %s", l(fmt.Sprint("pass", big)))
	a.label(l("store"))
}

// passLines is the prefetch offsets (from a pass's base, ahead bytes on)
// of the lines whose first byte lies in blocks [b0, b1) of gb bytes.
func passLines(ahead, gb, b0, b1 int) []int {
	var lines []int
	for p := (b0*gb + 63) / 64 * 64; p < b1*gb; p += 64 {
		lines = append(lines, ahead+p)
	}
	return lines
}

// prefetchStep issues step k's share of lines spread over steps load
// steps.
func prefetchStep(a *asm, lines []int, k, steps int) {
	for _, off := range lines[k*len(lines)/steps : (k+1)*len(lines)/steps] {
		prefetchPair(a, off)
	}
}

// dwords64 emits a 64-byte constant of 16 dwords f(0..15).
func (a *asm) dwords64(name string, f func(i int) uint32) {
	for i := 0; i < 16; i += 2 {
		a.raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 4*i, uint64(f(i+1))<<32|uint64(f(i)))
	}
	a.raw("GLOBL %s<>(SB), RODATA|NOPTR, $64\n", name)
}

// data64 emits a 64-byte constant: the 32-byte v twice.
func (a *asm) data64(name string, v [32]byte) {
	for i := 0; i < 64; i += 8 {
		var q uint64
		for j := 7; j >= 0; j-- {
			q = q<<8 | uint64(v[(i+j)%32])
		}
		a.raw("DATA %s<>+%d(SB)/8, $0x%016x", name, i, q)
	}
	a.raw("GLOBL %s<>(SB), RODATA|NOPTR, $64\n", name)
}

// zConstants: the K-quant constants for ZMM registers.
func zConstants(a *asm) {
	a.data64("zk0f", splat(0x0f))
	a.data64("zk3f", splat(0x3f))
	a.data64("zkc0", splat(0xc0))
	a.data64("zk80", splat(0x80))
	a.data64("zk03", splat(0x03))
	a.data64("zk0c", splat(0x0c))
	a.data64("zk30", splat(0x30))
	a.data64("zk10", splat(0x10))
	// zkdJ: the scale of sub-block J (of 4) of each row as an int32, from
	// the decoded scale bytes (row r at bytes 4r..4r+3).
	for j := 0; j < 4; j++ {
		a.data64(fmt.Sprintf("zkd%d", j), lanes(func(i int) byte {
			if i%4 != 0 {
				return 0x80
			}
			return byte(i + j)
		}))
	}
	// zkmpQ: the pairs (m[2Q], m[2Q+1]) of each row as int16 (pkmpQ).
	for q := 0; q < 2; q++ {
		a.data64(fmt.Sprintf("zkmp%d", q), lanes(func(i int) byte {
			if i%2 == 1 {
				return 0x80
			}
			m := i / 2
			return byte(4*(m/2) + 2*q + m%2)
		}))
	}
}

// pairLoad loads 32 bytes at off of group g and of group g+1 into the two
// halves of register r.
func pairLoad(a *asm, off int, r int) {
	a.op("VMOVDQU64 %d(SI), Y%d", off, r)
	a.op("VINSERTI64X4 $1, %d(SI)(R10*1), Z%d, Z%d", off, r, r)
}

// Q4_K on 16 rows, A activation rows (1 or 4). Registers: SI weights
// (group g's block), R10 the group stride, DI out, CX pairs of groups
// left, DX blocks left, R12 activation quants, R13 their d, AX their sums
// of 32, R11/R14 and R8/R9 the activation and output row strides (x1,
// x3), BX the prefetch base (R8 its scratch at A = 1, R15 at A = 4). Z9 = 0x0f bytes; Z16-Z23 the int32
// scales of the 8 sub-blocks; Z0+a and Z24+a the sums of the low and
// high nibbles of the chunk in progress (A = 4; A = 1: Z0/Z1 and Z24/Z25
// for the low and high nibbles of even and odd loads); Z4+a the block's
// integer sums; Z12+a the float sums. Stack: the four min pair vectors.
func q4k512(a *asm, A int) { q4k512With(a, A, false) }

// q5k512 is Q5_K in q4k512's manner (the group block of packlayout.go:
// Q4_K's, then the fifth bits, which each step ORs into its quants as
// q5kHigh512 does).
func q5k512(a *asm, A int) { q45k512With(a, A, false, true) }

// q4k512Far is the four-row Q4_K kernel with a far prefetch besides the
// near one: each block also prefetches into L2 the same block of the
// next pair (kernels.farBlocks says where it pays).
func q4k512Far(a *asm) { q4k512With(a, 4, true) }

// pairNames returns the name of typ's pair kernel of A activation rows
// (with far: its far-prefetch variant) and its label maker.
func pairNames(typ string, A int, far bool) (string, func(string) string) {
	name := typ + "PackVecAVX512"
	switch {
	case far:
		name = typ + "PackVec4FarAVX512"
	case A == 4:
		name = typ + "PackVec4AVX512"
	}
	far0 := ""
	if far {
		far0 = "far"
	}
	return name + tune.suffix, func(s string) string { return fmt.Sprintf("%sz%d%s%s%s", typ, A, tune.suffix, far0, s) }
}

func q4k512With(a *asm, A int, far bool) { q45k512With(a, A, far, false) }

func q45k512With(a *asm, A int, far, five bool) {
	args := "$256-88"
	if A == 4 {
		args = "$256-104"
	}
	typ, gb := "q4k", 1152
	if five {
		typ, gb = "q5k", 1408
	}
	name, l := pairNames(typ, A, far)
	a.raw("// func %s%s", name, sig(A))
	a.raw("TEXT ·%s(SB), NOSPLIT, %s", name, args)
	loadArgs(a, A)
	a.op("SHRQ $1, CX")
	a.op("MOVQ blocks+%d(FP), R10", blocksOff(A))
	a.op("IMUL3Q $%d, R10, R10", gb)
	a.op("VMOVDQU64 zk0f<>(SB), Z9")
	entryPrefetch(a, tune.ahead(prefetchAhead)+128)
	a.label(l("pair"))
	a.op("MOVQ x_base+%d(FP), R12", xOff(A))
	a.op("MOVQ blocks+%d(FP), DX", blocksOff(A))
	a.op("MOVQ DX, R13")
	a.op("SHLQ $8, R13")
	a.op("ADDQ R12, R13")
	a.op("LEAQ (DX)(DX*8), AX")
	a.op("SHLQ $2, AX")
	a.op("ADDQ R13, AX")
	for i := 0; i < A; i++ {
		a.op("VPXORD %s, %s, %s", z(12+i), z(12+i), z(12+i))
	}
	a.label(l("block"))
	if far {
		farAhead = tune.ahead(prefetchAhead) // the next pair's block, at the lines being read
		defer func() { farAhead = 0 }()
	}
	// The block's first 128 bytes (d, dmin, scales) here; its quants'
	// 1024 chunk by chunk (q4kChunk1, q4kChunk4), and Q5_K's fifth bits a
	// line a chunk.
	pairPrefetchBase(a, gb, tune.ahead(prefetchAhead), scratchReg(A))
	if !tune.old {
		prefetchPair(a, tune.ahead(prefetchAhead))
		prefetchPair(a, tune.ahead(prefetchAhead)+64)
	}
	q4kScales512(a)
	if five {
		a.op("VMOVDQU64 zk10<>(SB), Z10")
	}
	for i := 0; i < A; i++ {
		a.op("VPXORD %s, %s, %s", z(4+i), z(4+i), z(4+i))
	}
	for c := 0; c < 4; c++ {
		if five {
			prefetchPair(a, tune.ahead(prefetchAhead)+1152+64*c)
		}
		if A == 1 {
			q4kChunk1(a, c, five)
		} else {
			q4kChunk4(a, c, five)
		}
	}
	q4kFloat512(a, A)
	a.op("ADDQ $%d, SI", gb)
	a.op("ADDQ $256, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $16, AX")
	a.op("DECQ DX")
	a.op("JNZ %s", l("block"))
	pairEnd(a, A, l("pair"))
}

// q4kScales512 decodes the scales (Z16-Z23, int32) and the min pairs
// (stack, int16 pairs) of the block's 16 rows, as q4k does for 8.
func q4kScales512(a *asm) {
	pairLoad(a, 32, 0)
	pairLoad(a, 64, 1)
	pairLoad(a, 96, 2)
	a.op("VPANDD zk3f<>(SB), Z0, Z3")
	a.op("VPANDD zkc0<>(SB), Z0, Z0")
	a.op("VPSRLW $2, Z0, Z0")
	a.op("VPANDD Z9, Z2, Z10")
	a.op("VPORD Z0, Z10, Z10")
	for j := 0; j < 8; j++ {
		src := "Z3"
		if j >= 4 {
			src = "Z10"
		}
		a.op("VPSHUFB zkd%d<>(SB), %s, %s", j%4, src, z(16+j))
	}
	a.op("VPANDD zk3f<>(SB), Z1, Z3")
	a.op("VPSRLW $4, Z2, Z2")
	a.op("VPANDD Z9, Z2, Z2")
	a.op("VPANDD zkc0<>(SB), Z1, Z1")
	a.op("VPSRLW $2, Z1, Z1")
	a.op("VPORD Z1, Z2, Z2")
	for p := 0; p < 4; p++ {
		src := "Z3"
		if p >= 2 {
			src = "Z2"
		}
		a.op("VPSHUFB zkmp%d<>(SB), %s, Z0", p%2, src)
		a.op("VMOVDQU64 Z0, %d(SP)", 64*p)
	}
}

// q4kChunk1: chunk c (sub-blocks 2c, 2c+1) of one activation row (five:
// of Q5_K).
func q4kChunk1(a *asm, c int, five bool) {
	for _, r := range []int{0, 1, 24, 25} {
		a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
	}
	for p := 0; p < 256; p += 64 {
		prefetchPair(a, tune.ahead(prefetchAhead)+128+256*c+p)
	}
	for k := 0; k < 8; k++ {
		pairLoad(a, 128+256*c+32*k, 29)
		a.op("VPSRLW $4, Z29, Z30")
		a.op("VPANDD Z9, Z29, Z29")
		a.op("VPANDD Z9, Z30, Z30")
		if five {
			q5kHigh512(a, c, k)
		}
		e := 24 * (k % 2)
		a.op("VPDPBUSD.BCST %d(R12), Z29, %s", 64*c+4*k, z(e))
		a.op("VPDPBUSD.BCST %d(R12), Z30, %s", 64*c+32+4*k, z(e+1))
	}
	for h := 0; h < 2; h++ {
		a.op("VPADDD %s, %s, %s", z(24+h), z(h), z(h))
		a.op("VPMULLD %s, %s, %s", z(16+2*c+h), z(h), z(h))
		a.op("VPADDD %s, Z4, Z4", z(h))
	}
}

// q4kChunk4: chunk c of four activation rows: each load gives both
// sub-blocks (low nibbles into Z0+r, high into Z24+r), then times their
// scales into Z4+r (five: of Q5_K).
func q4kChunk4(a *asm, c int, five bool) {
	for r := 0; r < 4; r++ {
		a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
		a.op("VPXORD %s, %s, %s", z(24+r), z(24+r), z(24+r))
	}
	for p := 0; p < 256; p += 64 {
		prefetchPair(a, tune.ahead(prefetchAhead)+128+256*c+p)
	}
	for k := 0; k < 8; k++ {
		pairLoad(a, 128+256*c+32*k, 29)
		a.op("VPSRLW $4, Z29, Z30")
		a.op("VPANDD Z9, Z29, Z29")
		a.op("VPANDD Z9, Z30, Z30")
		if five {
			q5kHigh512(a, c, k)
		}
		for r := 0; r < 4; r++ {
			a.op("VPDPBUSD.BCST %s, Z29, %s", act(64*c+4*k, "R12", r), z(r))
		}
		for r := 0; r < 4; r++ {
			a.op("VPDPBUSD.BCST %s, Z30, %s", act(64*c+32+4*k, "R12", r), z(24+r))
		}
	}
	for r := 0; r < 4; r++ {
		a.op("VPMULLD %s, %s, %s", z(16+2*c), z(r), z(r))
		a.op("VPADDD %s, %s, %s", z(r), z(4+r), z(4+r))
		a.op("VPMULLD %s, %s, %s", z(17+2*c), z(24+r), z(24+r))
		a.op("VPADDD %s, %s, %s", z(24+r), z(4+r), z(4+r))
	}
}

// q5kHigh512 ORs the fifth bits of step k of chunk c into the unpacked
// low (Z29) and high (Z30) nibbles: the pair's qh load k (Z31), bits 2c
// and 2c+1 moved to bit 4 (Z28) and kept by the 0x10 bytes in Z10, as
// q5kHigh does on AVX2.
func q5kHigh512(a *asm, c, k int) {
	pairLoad(a, 1152+32*k, 31)
	for h, dst := range []string{"Z29", "Z30"} {
		// 0xF8: dst | (src2 & src3).
		a.op("VPTERNLOGD $0xF8, Z10, %s, %s", bitTo4(a, 2*c+h, "Z31", "Z28"), dst)
	}
}

// q4kFloat512: the mins (Z0+a = sum of m * sums of 32 activations) and
// F(a) += (d*yd)*float(I(a)) - (dmin*yd)*float(M(a)), as q4k.
func q4kFloat512(a *asm, A int) {
	for p := 0; p < 4; p++ {
		for r := 0; r < A; r++ {
			a.op("VPBROADCASTD %s, Z28", act(4*p, "AX", r))
			if p == 0 {
				a.op("VPMADDWD %d(SP), Z28, %s", 64*p, z(r))
			} else {
				a.op("VPMADDWD %d(SP), Z28, Z28", 64*p)
				a.op("VPADDD Z28, %s, %s", z(r), z(r))
			}
		}
	}
	a.op("VMOVDQU (SI), X8")
	a.op("VINSERTI128 $1, (SI)(R10*1), Y8, Y8")
	a.op("VCVTPH2PS Y8, Z8")
	a.op("VMOVDQU 16(SI), X10")
	a.op("VINSERTI128 $1, 16(SI)(R10*1), Y10, Y10")
	a.op("VCVTPH2PS Y10, Z10")
	for r := 0; r < A; r++ {
		a.op("VBROADCASTSS %s, Z11", act(0, "R13", r))
		a.op("VMULPS Z11, Z8, Z28")
		a.op("VCVTDQ2PS %s, %s", z(4+r), z(4+r))
		a.op("VFMADD231PS %s, Z28, %s", z(4+r), z(12+r))
		a.op("VMULPS Z11, Z10, Z28")
		a.op("VCVTDQ2PS %s, %s", z(r), z(r))
		a.op("VFNMADD231PS %s, Z28, %s", z(r), z(12+r))
	}
}

func avx512File() *asm {
	k := &asm{}
	k.b.WriteString(header)
	zConstants(k)
	q4k512(k, 1)
	q4k512(k, 4)
	q4k512Far(k)
	q5k512(k, 1)
	q5k512(k, 4)
	q6k512(k, 1)
	q6k512(k, 4)
	q6k512Far(k)
	for _, four := range []bool{true, false} {
		if four {
			q40z1(k)
		} else {
			q8z(k, four, 1)
		}
		q8z(k, four, 4)
	}
	// The one-row kernels again with PREFETCHNTA for their stream
	// (kernels.ntaStream picks them; see streamInsn).
	tune = tuning{suffix: "NTA", insn: streamInsn}
	q4k512(k, 1)
	q5k512(k, 1)
	q6k512(k, 1)
	q40z1(k)
	tune = tuning{}
	return k
}

// streamInsn is the software prefetch of the one-row kernels' NTA
// variants, which AMD CPUs run (kernels.ntaStream). On the Zen 5 EPYC
// (2 vCPUs) a decode step with them, `siskin bench -p 0 -n 128 -r 3`,
// three alternated runs each against the PREFETCHT0 kernels: Q4_0
// 46.8-50.5 -> 54.3-56.8 tok/s, Q4_K_M 49.4-50.0 -> 53.9-55.8 (93-101%
// of the read probe's ceiling). My reading: Zen's L3 is filled by what
// L2 evicts, so every streamed line of T0 was written into L3 as well;
// NTA lines skip that. PREFETCHT1 was 0.75x; on an Intel Xeon (AMX)
// NTA read weights at 0.6x of T0's rate.
const streamInsn = "PREFETCHNTA"

// pairLoad16 loads 16 bytes at off of group g and of group g+1 into the
// two halves of Y register r.
func pairLoad16(a *asm, off int, r int) {
	a.op("VMOVDQU %d(SI), X%d", off, r)
	a.op("VINSERTI128 $1, %d(SI)(R10*1), Y%d, Y%d", off, r, r)
}

// Q6_K on 16 rows (two groups), A activation rows (1 or 4): the 6-bit
// quants q enter VPDPBUSD unsigned, sums of 16 (one scale) in 32 bits,
// times the scale (VPMULLD); the offset -32 is applied once per
// super-block as in q6k. Registers: Z4+a the block's integer sums of row
// a, Z12+a its float sums; the rest as q6kHalf1 and q6kHalf4 say.
func q6k512(a *asm, A int) { q6k512With(a, A, false) }

// q6k512Far is the four-row Q6_K kernel with the far prefetch of
// q4k512Far (kernels.farBlocks says where it pays).
func q6k512Far(a *asm) { q6k512With(a, 4, true) }

func q6k512With(a *asm, A int, far bool) {
	args := "$0-88"
	if A == 4 {
		args = "$0-104"
	}
	name, l := pairNames("q6k", A, far)
	a.raw("// func %s%s", name, sig(A))
	a.raw("TEXT ·%s(SB), NOSPLIT, %s", name, args)
	ahead := tune.ahead(prefetchAhead)
	if A == 1 {
		ahead = tune.ahead(q6kAhead)
	}
	loadArgs(a, A)
	a.op("SHRQ $1, CX")
	a.op("MOVQ blocks+%d(FP), R10", blocksOff(A))
	a.op("IMUL3Q $1680, R10, R10")
	a.op("VMOVDQU64 zk0f<>(SB), Z9")
	if A == 1 {
		a.op("VMOVDQU64 zk30<>(SB), Z18")
	} else {
		a.op("VMOVDQU64 zk30<>(SB), Z10")
	}
	entryPrefetch(a, ahead)
	a.label(l("pair"))
	a.op("MOVQ x_base+%d(FP), R12", xOff(A))
	a.op("MOVQ blocks+%d(FP), DX", blocksOff(A))
	a.op("IMUL3Q $256, DX, R13")
	a.op("ADDQ R12, R13")
	a.op("IMUL3Q $260, DX, AX")
	a.op("ADDQ R12, AX")
	for i := 0; i < A; i++ {
		a.op("VPXORD %s, %s, %s", z(12+i), z(12+i), z(12+i))
	}
	a.label(l("block"))
	if far {
		farAhead = ahead // the next pair's block, at the lines being read
		defer func() { farAhead = 0 }()
	}
	for i := 0; i < A; i++ {
		a.op("VPXORD %s, %s, %s", z(4+i), z(4+i), z(4+i))
	}
	for n := 0; n < 2; n++ {
		if n == 0 {
			pairPrefetchBase(a, 1680, ahead, scratchReg(A))
		}
		var lines []int
		for p := 0; p < 1680/2; p += 64 {
			lines = append(lines, ahead+840*n+p)
		}
		if A == 4 {
			for _, off := range lines {
				prefetchPair(a, off)
			}
		}
		if A == 1 {
			q6kHalf1(a, n, lines)
		} else {
			q6kHalf4(a, n)
		}
	}
	// I -= 32 * sum over pairs p of (scale pair) . (activation sums of 16).
	for p := 0; p < 8; p++ {
		pairLoad16(a, 1536+16*p, 8)
		a.op("VPMOVSXBW Y8, Z8")
		for r := 0; r < A; r++ {
			a.op("VPBROADCASTD %s, Z28", act(4*p, "AX", r))
			if p == 0 {
				a.op("VPMADDWD Z8, Z28, %s", z(r))
			} else {
				a.op("VPMADDWD Z8, Z28, Z28")
				a.op("VPADDD Z28, %s, %s", z(r), z(r))
			}
		}
	}
	for r := 0; r < A; r++ {
		a.op("VPSLLD $5, %s, %s", z(r), z(r))
		a.op("VPSUBD %s, %s, %s", z(r), z(4+r), z(4+r))
	}
	pairLoad16(a, 1664, 8)
	a.op("VCVTPH2PS Y8, Z8")
	for r := 0; r < A; r++ {
		a.op("VCVTDQ2PS %s, %s", z(4+r), z(4+r))
		a.op("VBROADCASTSS %s, Z28", act(0, "R13", r))
		a.op("VMULPS Z28, Z8, Z28")
		a.op("VFMADD231PS %s, Z28, %s", z(4+r), z(12+r))
	}
	a.op("ADDQ $1680, SI")
	a.op("ADDQ $256, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $32, AX")
	a.op("DECQ DX")
	a.op("JNZ %s", l("block"))
	pairEnd(a, A, l("pair"))
}

// Q4_0 and Q8_0 on 16 rows (two groups), A activation rows (1 or 4), q8a
// activations (quants at x, d at x+64nb, -8*sum at x+68nb). Q4_0: the
// nibbles enter VPDPBUSD unsigned and the offset 8 is the -8*sum term, as
// in q8. Q8_0: the signed weights enter as w+128 (XOR 0x80) and 128*sum
// (16 times the -8*sum term) is taken off. Registers: Z9 0x0f or 0x80
// bytes, Z29/Z30 weights, Z0+a/Z24+a the two sums of row a, Z12+a the
// float sums, Z8 the weights' d, Z28 scratch.
//
// The one-row Q8_0 kernel goes four blocks a pass (1088 bytes a group,
// 17 whole lines) from one prefetch base, 4 KiB ahead, its prefetches
// spread over the loads as q40z1's: BenchmarkPackedStream (256 MiB, Zen
// 5, alternated with the read-only sum, three runs of one and two
// threads) 1.22-1.33 of the sum's rate, against 0.95-1.15 for a block a
// pass with five prefetches at its top, 2176 bytes ahead, and 1.01-1.12
// for the kernel the tier ran before (one group a pass against
// activations expanded per call, AVX2's kernel, 0.74-0.94, for rows of
// more than 128 blocks); 3 and 5 KiB ahead: 1.22-1.31, 1.23-1.37.
func q8z(a *asm, four bool, A int) {
	typ, gb := "q8_0", 272
	if four {
		typ, gb = "q4_0", 144
	}
	name := typ + "PackVecAVX512" + tune.suffix
	args := "$0-88"
	if A == 4 {
		name = typ + "PackVec4AVX512"
		args = "$0-104"
	}
	l := func(s string) string { return fmt.Sprintf("%sz%d%s%s", typ, A, tune.suffix, s) }
	a.raw("// func %s%s", name, sig(A))
	a.raw("TEXT ·%s(SB), NOSPLIT, %s", name, args)
	loadArgs(a, A)
	a.op("SHRQ $1, CX")
	a.op("MOVQ blocks+%d(FP), R10", blocksOff(A))
	a.op("IMUL3Q $%d, R10, R10", gb)
	if four {
		a.op("VMOVDQU64 zk0f<>(SB), Z9")
	} else {
		a.op("VMOVDQU64 zk80<>(SB), Z9")
	}
	entryPrefetch(a, 8*gb)
	a.label(l("pair"))
	a.op("MOVQ x_base+%d(FP), R12", xOff(A))
	a.op("MOVQ blocks+%d(FP), DX", blocksOff(A))
	a.op("IMUL3Q $64, DX, R13")
	a.op("ADDQ R12, R13")
	a.op("IMUL3Q $68, DX, AX")
	a.op("ADDQ R12, AX")
	for i := 0; i < A; i++ {
		a.op("VPXORD %s, %s, %s", z(12+i), z(12+i), z(12+i))
	}
	if A == 1 && !four {
		blockPasses(a, l, 4, func(nb int) { q8Pass(a, nb, gb, tune.ahead(prefetchAhead)) })
	} else {
		a.label(l("block"))
		if A == 4 && four {
			farAhead = 8 * gb
			defer func() { farAhead = 0 }()
		}
		pairPrefetchBase(a, gb, 8*gb, scratchReg(A))
		for p := 0; p < gb; p += 64 {
			prefetchPair(a, 8*gb+p)
		}
		q8zBlock(a, four, A, nil)
		a.op("DECQ DX")
		a.op("JNZ %s", l("block"))
	}
	pairEnd(a, A, l("pair"))
}

// q8zBlock: one block of q8z, moving the pointers past it; it
// prefetches lines (offsets from BX), spread over its load steps.
func q8zBlock(a *asm, four bool, A int, lines []int) {
	gb := 272
	if four {
		gb = 144
	}
	for r := 0; r < A; r++ {
		a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
		a.op("VPXORD %s, %s, %s", z(24+r), z(24+r), z(24+r))
	}
	if four {
		for k := 0; k < 4; k++ {
			prefetchStep(a, lines, k, 4)
			pairLoad(a, 32*k, 29)
			a.op("VPSRLW $4, Z29, Z30")
			a.op("VPANDD Z9, Z29, Z29")
			a.op("VPANDD Z9, Z30, Z30")
			for r := 0; r < A; r++ {
				a.op("VPDPBUSD.BCST %s, Z29, %s", act(4*k, "R12", r), z(r))
				a.op("VPDPBUSD.BCST %s, Z30, %s", act(16+4*k, "R12", r), z(24+r))
			}
		}
	} else {
		for k := 0; k < 8; k++ {
			prefetchStep(a, lines, k, 8)
			pairLoad(a, 32*k, 29)
			a.op("VPXORD Z9, Z29, Z29")
			for r := 0; r < A; r++ {
				a.op("VPDPBUSD.BCST %s, Z29, %s", act(4*k, "R12", r), z(24*(k%2)+r))
			}
		}
	}
	for r := 0; r < A; r++ {
		a.op("VPADDD %s, %s, %s", z(24+r), z(r), z(r))
		a.op("VPBROADCASTD %s, Z28", act(0, "AX", r))
		if !four {
			a.op("VPSLLD $4, Z28, Z28")
		}
		a.op("VPADDD Z28, %s, %s", z(r), z(r))
	}
	pairLoad16(a, gb-16, 8)
	a.op("VCVTPH2PS Y8, Z8")
	for r := 0; r < A; r++ {
		a.op("VCVTDQ2PS %s, %s", z(r), z(r))
		a.op("VBROADCASTSS %s, Z28", act(0, "R13", r))
		a.op("VMULPS Z28, Z8, Z28")
		a.op("VFMADD231PS %s, Z28, %s", z(r), z(12+r))
	}
	a.op("ADDQ $%d, SI", gb)
	a.op("ADDQ $32, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $4, AX")
}

// q8Pass: nb Q8_0 blocks of the one-row q8z, its lines prefetched from
// one base (BX), each by the block whose bytes hold the line's first,
// spread over its load steps.
func q8Pass(a *asm, nb, gb, ahead int) {
	pairPrefetchBase(a, gb, ahead, "R8")
	for b := 0; b < nb; b++ {
		q8zBlock(a, false, 1, passLines(ahead, gb, b, b+1))
	}
}

// q6kHalf1: half n of a Q6_K block for one activation row. Each load of
// ql (both 32-byte halves) and qh is made once and gives the quants of
// all four types t (unpacked with VPTERNLOGD: nibble | (qh bits & 0x30)),
// summed into Z0+t over the 16 elements of one scale, then times that
// scale into Z4. Registers: Z9 0x0f, Z18 0x30, Z20+2t+h the int32 scale
// of sub-block (t, h), Z8/Z10/Z11 the loads, Z28-Z31 the unpacked
// quants, Z5 scratch. It prefetches lines (offsets from BX), spread over
// its eight load steps.
func q6kHalf1(a *asm, n int, lines []int) {
	for t := 0; t < 4; t++ {
		s := 20 + 2*t
		pairLoad16(a, 1536+16*(4*n+t), 5)
		a.op("VPMOVSXBW Y5, Z5")
		a.op("VPSLLD $16, Z5, %s", z(s))
		a.op("VPSRAD $16, %s, %s", z(s), z(s))
		a.op("VPSRAD $16, Z5, %s", z(s+1))
	}
	for h := 0; h < 2; h++ {
		for t := 0; t < 4; t++ {
			a.op("VPXORD %s, %s, %s", z(t), z(t), z(t))
		}
		for k := 4 * h; k < 4*h+4; k++ {
			prefetchStep(a, lines, k, 8)
			pairLoad(a, 512*n+32*k, 8)
			pairLoad(a, 512*n+256+32*k, 10)
			pairLoad(a, 1024+256*n+32*k, 11)
			// 0xF8: dst | (src2 & src3).
			a.op("VPANDD Z9, Z8, Z28")
			a.op("VPSLLW $4, Z11, Z29")
			a.op("VPTERNLOGD $0xF8, Z18, Z29, Z28")
			a.op("VPDPBUSD.BCST %d(R12), Z28, Z0", 128*n+4*k)
			a.op("VPANDD Z9, Z10, Z29")
			a.op("VPSLLW $2, Z11, Z30")
			a.op("VPTERNLOGD $0xF8, Z18, Z30, Z29")
			a.op("VPDPBUSD.BCST %d(R12), Z29, Z1", 128*n+32+4*k)
			a.op("VPSRLW $4, Z8, Z30")
			a.op("VPANDD Z9, Z30, Z30")
			a.op("VPTERNLOGD $0xF8, Z18, Z11, Z30")
			a.op("VPDPBUSD.BCST %d(R12), Z30, Z2", 128*n+64+4*k)
			a.op("VPSRLW $4, Z10, Z31")
			a.op("VPANDD Z9, Z31, Z31")
			a.op("VPSRLW $2, Z11, Z8")
			a.op("VPTERNLOGD $0xF8, Z18, Z8, Z31")
			a.op("VPDPBUSD.BCST %d(R12), Z31, Z3", 128*n+96+4*k)
		}
		for t := 0; t < 4; t++ {
			a.op("VPMULLD %s, %s, %s", z(20+2*t+h), z(t), z(t))
			a.op("VPADDD %s, Z4, Z4", z(t))
		}
	}
}

// q6kHalf4: half n of a Q6_K block for four activation rows, in two
// passes over the loads (types 0 and 2 from the first 32 bytes of ql,
// then 1 and 3 from the second; qh loaded in each), each summing 2 types
// x 4 rows (Z0+r and Z24+r), then times the scales into Z4+r. Registers:
// Z9 0x0f, Z10 0x30, Z16+2t+h the int32 scale of sub-block (t, h),
// Z28/Z29 the ql/qh loads, Z30/Z31 unpacked quants, Z11 scratch.
func q6kHalf4(a *asm, n int) {
	for t := 0; t < 4; t++ {
		s := 16 + 2*t
		pairLoad16(a, 1536+16*(4*n+t), 11)
		a.op("VPMOVSXBW Y11, Z11")
		a.op("VPSLLD $16, Z11, %s", z(s))
		a.op("VPSRAD $16, %s, %s", z(s), z(s))
		a.op("VPSRAD $16, Z11, %s", z(s+1))
	}
	for h := 0; h < 2; h++ {
		for pass := 0; pass < 2; pass++ {
			for r := 0; r < 4; r++ {
				a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
				a.op("VPXORD %s, %s, %s", z(24+r), z(24+r), z(24+r))
			}
			lo, hi := pass, pass+2 // the types from the low and high nibbles
			for k := 4 * h; k < 4*h+4; k++ {
				pairLoad(a, 512*n+256*pass+32*k, 28)
				pairLoad(a, 1024+256*n+32*k, 29)
				// 0xF8: dst | (src2 & src3).
				a.op("VPANDD Z9, Z28, Z30")
				a.op("VPSLLW $%d, Z29, Z31", 4-2*pass)
				a.op("VPTERNLOGD $0xF8, Z10, Z31, Z30")
				for r := 0; r < 4; r++ {
					a.op("VPDPBUSD.BCST %s, Z30, %s", act(128*n+32*lo+4*k, "R12", r), z(r))
				}
				a.op("VPSRLW $4, Z28, Z31")
				a.op("VPANDD Z9, Z31, Z31")
				qh := "Z29"
				if pass == 1 {
					a.op("VPSRLW $2, Z29, Z11")
					qh = "Z11"
				}
				a.op("VPTERNLOGD $0xF8, Z10, %s, Z31", qh)
				for r := 0; r < 4; r++ {
					a.op("VPDPBUSD.BCST %s, Z31, %s", act(128*n+32*hi+4*k, "R12", r), z(24+r))
				}
			}
			for r := 0; r < 4; r++ {
				a.op("VPMULLD %s, %s, %s", z(16+2*lo+h), z(r), z(r))
				a.op("VPADDD %s, %s, %s", z(r), z(4+r), z(4+r))
				a.op("VPMULLD %s, %s, %s", z(16+2*hi+h), z(24+r), z(24+r))
				a.op("VPADDD %s, %s, %s", z(24+r), z(4+r), z(4+r))
			}
		}
	}
}

// pairPrefetchBase sets BX to the base of the one- and four-row kernels'
// software prefetches (ahead bytes on, in each of the two groups): SI while that
// stays within group g, otherwise SI+R10, so the prefetches that run
// past the end of groups g and g+1 fetch the start of g+2 and g+3, the
// next pair, rather than the middle of g+1 (read already) and the start
// of g+2. gb is the bytes of a group block; DX the blocks left in the
// group, this one included. Clobbers tmp (and R9 with tune.stopAtEnd).
func pairPrefetchBase(a *asm, gb, ahead int, tmp string) {
	if tune.noPrefetch {
		return
	}
	a.op("IMUL3Q $%d, DX, BX", gb)
	a.op("LEAQ (SI)(R10*1), %s", tmp)
	if tune.stopAtEnd {
		a.op("LEAQ -%d(SI), R9", ahead)
		a.op("CMPQ CX, $1")
		a.op("CMOVQEQ R9, %s", tmp)
	}
	a.op("CMPQ BX, $%d", ahead)
	a.op("MOVQ SI, BX")
	a.op("CMOVQLS %s, BX", tmp)
	if farAhead > 0 {
		a.op("LEAQ (SI)(R10*2), R15") // the next pair's block
	}
}

// farAhead, when not 0, is the near prefetch distance of the Q4_0
// four-row kernel (or of the Q4_K and Q6_K far variants) being generated:
// prefetchPair then also prefetches, into L2 (T1), the line at the same
// place of the next pair (R15, set by pairPrefetchBase), as the eight-row
// kernels do (prefetch2).
// BenchmarkPackedStream8/rows=4 (one thread, 256 MiB, Zen 5, 2 vCPUs,
// alternated, four runs), from memory, multiply-adds a second before and
// after: Q4_0 123-134 and 166-231, the L2 tile level. Q8_0's measured
// 1.2-1.3x in one run and 0.88-0.99x in another, its L2 tile 0.90-0.93x;
// Q4_K's and Q6_K's (4 KiB ahead, more lines a block) 0.96-1.05x and
// 0.81-0.88x: they have none.
var farAhead int

// scratchReg is pairPrefetchBase's scratch register in a kernel of A
// activation rows (at 4, R8 holds an output stride).
func scratchReg(A int) string {
	if A == 1 {
		return "R8"
	}
	return "R15"
}

// entryPrefetch prefetches the first ahead bytes of both groups of the
// first pair (a call's first loads would otherwise wait for the
// hardware prefetcher to see the two streams).
func entryPrefetch(a *asm, ahead int) {
	if tune.noPrefetch {
		return
	}
	for off := 0; off < ahead; off += 64 {
		a.op("PREFETCHT0 %d(SI)", off)
		a.op("PREFETCHT0 %d(SI)(R10*1)", off)
	}
}

// prefetchPair prefetches byte off past BX in both groups.
func prefetchPair(a *asm, off int) {
	if tune.noPrefetch {
		return
	}
	if tune.every128 && off/64%2 == 1 {
		return
	}
	ins := "PREFETCHT0"
	if tune.insn != "" {
		ins = tune.insn
	}
	if !tune.onlySecond {
		a.op("%s %d(BX)", ins, off)
	}
	a.op("%s %d(BX)(R10*1)", ins, off)
	if farAhead > 0 {
		a.op("PREFETCHT1 %d(R15)", off-farAhead)
		a.op("PREFETCHT1 %d(R15)(R10*1)", off-farAhead)
	}
}

// prefetchAhead is how far ahead (bytes, in each of the two groups) the
// one-row kernels prefetch. Their loops run many instructions per cache
// line, so the out-of-order window alone keeps few misses in flight and
// the hardware prefetchers do not make up for it (without software
// prefetch they read at 0.45-0.6 of the read-only sum's rate on the Zen 5
// EPYC); 4 KiB per group (8 KiB per thread) covers the loaded latency at
// the per-thread bandwidth. BenchmarkPackedStream there, against the 2
// KiB this replaced: Q4_K 0.92-0.98 -> 0.98-1.10 of the sum's rate, Q6_K
// 0.93-0.95 -> 0.97-1.05 (6 or 8 KiB: no better, or worse). The
// four-row kernels (a batch of four decode streams) had none and read
// weights from memory at 0.23-0.38 of their L2 rate; with the same
// prefetches (BenchmarkPackedStream8/rows=4, one thread, 256 MiB, Zen 5,
// alternated twice against the old kernels) Q4_K 1.7-2.3x, Q6_K
// 1.8-2.4x, Q4_0 1.25x, Q8_0 1.6-1.9x from memory (Q4_K at 1, 2, 4 and 8
// KiB ahead: 146-150, 149-154, 174-178, 183-195 GMAC/s).
const prefetchAhead = 4096

// q6kAhead is prefetchAhead for the Q6_K one-row kernel, whose
// prefetches go between its loads (q6kHalf1), two or so a step, rather
// than fourteen at the top of each half block. BenchmarkPackedStream
// (256 MiB, Zen 5, alternated with the read-only sum, three runs of one
// and two threads each): 0.96-1.09 of the sum's rate as they were, 4 KiB
// spread 1.05-1.18, 5 KiB 1.06-1.24 (4.5, 6 and 8 KiB: 1.04-1.12,
// 0.98-1.08, 1.02-1.07).
const q6kAhead = 5120

// tune: variants of the one-row kernels for experiments (exp.go).
var tune tuning

type tuning struct {
	suffix     string
	aheadBytes int // 0: the kernel's default
	noPrefetch bool
	onlySecond bool
	old        bool // the kernel before the change under test
	insn       string
	every128   bool
	stopAtEnd  bool // no prefetch past the last pair of a call
}

func (t tuning) ahead(def int) int {
	if t.aheadBytes > 0 {
		return t.aheadBytes
	}
	return def
}

// q40z1 is Q4_0 on 16 rows (two groups) for one activation row, eight
// blocks per loop pass (after one, two and four as the count needs),
// two at a time: q8z's one-row kernel with its per-block overhead (loop,
// prefetch base, the -8*sum add) shared or folded. Each block's integer
// sum starts from its -8*sum term (exact, as every integer step) and its
// float step is q8z's, in block order, so the bits are q8z's. Registers:
// Z9 0x0f bytes; for block b of a two-block step Zb/Z24+b the sums of the
// low/high nibbles, Z29/Z30 weights (Z26/Z27 for b = 1); Z12 the float
// sums; Z8, Z10, Z11, Z28 the float step's scratch.
//
// Why eight: a pass of eight blocks is 1152 bytes of a group, 18 whole
// lines, like a Q4_K block, and its prefetches go one or two between the
// loads rather than five at the top of a two-block pass (4.5 lines, so
// one line in nine prefetched twice). BenchmarkPackedStream (256 MiB,
// Zen 5, alternated with the read-only sum, three runs of one and two
// threads each): 0.92-1.01 of the sum's rate with two-block passes and 3 KiB
// ahead, 0.98-1.16 with four-block passes, 1.05-1.22 with eight and 4 KiB
// ahead (1.06-1.17 at 5 KiB); Q4_K reads 1.13-1.16 there.
func q40z1(a *asm) {
	const gb = 144
	name := "q4_0PackVecAVX512" + tune.suffix
	l := func(s string) string { return fmt.Sprintf("q4_0z1%s%s", tune.suffix, s) }
	a.raw("// func %s%s", name, sig(1))
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-88", name)
	loadArgs(a, 1)
	a.op("SHRQ $1, CX")
	a.op("MOVQ blocks+%d(FP), R10", blocksOff(1))
	a.op("IMUL3Q $%d, R10, R10", gb)
	a.op("VMOVDQU64 zk0f<>(SB), Z9")
	entryPrefetch(a, tune.ahead(prefetchAhead))
	a.label(l("pair"))
	a.op("MOVQ x_base+%d(FP), R12", xOff(1))
	a.op("MOVQ blocks+%d(FP), DX", blocksOff(1))
	a.op("IMUL3Q $64, DX, R13")
	a.op("ADDQ R12, R13")
	a.op("IMUL3Q $68, DX, AX")
	a.op("ADDQ R12, AX")
	a.op("VPXORD Z12, Z12, Z12")
	blockPasses(a, l, 8, func(nb int) { q40Pass(a, nb) })
	pairEnd(a, 1, l("pair"))
}

// q40Pass: nb (1, 2, 4 or 8) Q4_0 blocks of q40z1, two at a time, moving
// the pointers past them. The pass's lines are prefetched from one base
// (BX), each by the two-block step whose bytes hold the line's first.
func q40Pass(a *asm, nb int) {
	const gb = 144
	pairPrefetchBase(a, gb, tune.ahead(prefetchAhead), "R8")
	for first := 0; first < nb; first += 2 {
		q40Blocks(a, min(2, nb), passLines(tune.ahead(prefetchAhead), gb, first, min(first+2, nb)))
	}
}

// q40Blocks: nb (1 or 2) Q4_0 blocks of q40z1, moving the pointers past
// them; it prefetches lines (offsets from BX) spread over its four load
// steps.
func q40Blocks(a *asm, nb int, lines []int) {
	const gb = 144
	for b := 0; b < nb; b++ {
		a.op("VPBROADCASTD %d(AX), %s", 4*b, z(b))
		a.op("VPXORD %s, %s, %s", z(24+b), z(24+b), z(24+b))
	}
	for k := 0; k < 4; k++ {
		prefetchStep(a, lines, k, 4)
		for b := 0; b < nb; b++ {
			lo, hi := 29, 30
			if b == 1 {
				lo, hi = 26, 27
			}
			pairLoad(a, gb*b+32*k, lo)
			a.op("VPSRLW $4, %s, %s", z(lo), z(hi))
			a.op("VPANDD Z9, %s, %s", z(lo), z(lo))
			a.op("VPANDD Z9, %s, %s", z(hi), z(hi))
			a.op("VPDPBUSD.BCST %d(R12), %s, %s", 32*b+4*k, z(lo), z(b))
			a.op("VPDPBUSD.BCST %d(R12), %s, %s", 32*b+16+4*k, z(hi), z(24+b))
		}
	}
	for b := 0; b < nb; b++ {
		a.op("VPADDD %s, %s, %s", z(24+b), z(b), z(b))
		a.op("VCVTDQ2PS %s, %s", z(b), z(b))
	}
	for b := 0; b < nb; b++ {
		d, s := 8, 28
		if b == 1 {
			d, s = 10, 11
		}
		pairLoad16(a, gb*b+gb-16, d)
		a.op("VCVTPH2PS %s, %s", y(d), z(d))
		a.op("VBROADCASTSS %d(R13), %s", 4*b, z(s))
		a.op("VMULPS %s, %s, %s", z(s), z(d), z(s))
	}
	for b := 0; b < nb; b++ {
		s := 28
		if b == 1 {
			s = 11
		}
		a.op("VFMADD231PS %s, %s, Z12", z(b), z(s))
	}
	a.op("ADDQ $%d, SI", nb*gb)
	a.op("ADDQ $%d, R12", 32*nb)
	a.op("ADDQ $%d, R13", 4*nb)
	a.op("ADDQ $%d, AX", 4*nb)
}
