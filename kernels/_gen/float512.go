package main

import "fmt"

// The AVX-512 float-weight matrix-vector kernels (float_avx512_amd64.s):
// F16 and BF16 weights times one float32 vector (8 rows at a time) or
// four or eight (6 rows at a time).
// A ZMM register holds the same 8 columns of two rows (low and high
// half), so each row keeps the AVX2 kernels' one 8-lane FMA chain over
// its columns in order, and its sum is reduced by the same HSUM steps:
// every result is bit-identical to the AVX2 tier's (float_avx2_amd64.s),
// while 4 (one vector), 12 (four) or 24 (eight) independent ZMM chains
// keep both FMA pipes busy.
// F32 has none: pairing rows costs it a shuffle per load that the AVX2
// kernel does not pay, and it measured slower (BenchmarkFloatMatVec,
// BenchmarkKernelCompute).

// floatType describes how a float weight type widens 8 columns of a row
// pair (byte offsets a and b) into ZMM register r.
type floatType struct {
	name string
	eb   int // bytes per element
	load func(a *asm, pa, pb string, r int)
}

var floatTypes = []floatType{
	{"f16", 2, func(a *asm, pa, pb string, r int) {
		a.op("VMOVDQU %s, X%d", pa, r)
		a.op("VINSERTI128 $1, %s, Y%d, Y%d", pb, r, r)
		a.op("VCVTPH2PS Y%d, Z%d", r, r)
	}},
	{"bf16", 2, func(a *asm, pa, pb string, r int) {
		a.op("VMOVDQU %s, X%d", pa, r)
		a.op("VINSERTI128 $1, %s, Y%d, Y%d", pb, r, r)
		a.op("VPMOVZXWD Y%d, Z%d", r, r)
		a.op("VPSLLD $16, Z%d, Z%d", r, r)
	}},
}

// floatPrefetch is how far ahead in each row the one-vector kernels
// prefetch. BenchmarkDecodeStream/F16/avx512 (two threads, Zen 5, two
// alternated rounds): 0.78-0.84 of the read probe without, 0.90-0.96 at
// 256, 512 or 1024 bytes (with 16 rows a group).
const floatPrefetch = 512

// offs writes a displacement as the hand-written kernels did: none for 0.
func offs(off int) string {
	if off == 0 {
		return ""
	}
	return fmt.Sprint(off)
}

func float512File() *asm {
	k := &asm{}
	k.b.WriteString(header)
	for _, t := range floatTypes {
		floatVec512(k, t)
		floatVecN512(k, t, 4)
		floatVecN512(k, t, 8)
	}
	return k
}

// hsum emits the AVX2 kernels' HSUM (avx2_amd64.h) of Y register r into
// the low float of X r, X t scratch: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
func hsum(a *asm, r, t int) {
	a.op("VEXTRACTF128 $1, Y%d, X%d", r, t)
	a.op("VADDPS X%d, X%d, X%d", t, r, r)
	a.op("VMOVHLPS X%d, X%d, X%d", r, r, t)
	a.op("VADDPS X%d, X%d, X%d", t, r, r)
	a.op("VMOVSHDUP X%d, X%d", r, t)
	a.op("VADDSS X%d, X%d, X%d", t, r, r)
}

// rows8Args loads the arguments of a one-activation-row kernel taken
// eight weight rows at a time, func(out []float32, w []byte, stride,
// count int, x []float32) with count named count: DI out, CX the sets of
// eight rows (to done if none), SI w, R8/R11 stride x1/x3, R9 count, R10 x.
func rows8Args(a *asm, count, done string) {
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ out_len+8(FP), CX")
	a.op("MOVQ w_base+24(FP), SI")
	a.op("MOVQ stride+48(FP), R8")
	a.op("MOVQ %s+56(FP), R9", count)
	a.op("MOVQ x_base+64(FP), R10")
	a.op("LEAQ (R8)(R8*2), R11")
	a.op("SHRQ $3, CX")
	a.op("JZ %s", done)
}

// floatVec512 emits <t>VecAVX512(out []float32, w []byte, stride, chunks
// int, x []float32): len(out) rows (a multiple of 8) of chunks 8-column
// chunks, four chunks (a 64-byte line of every row) a step with the
// lines floatPrefetch bytes on prefetched, then the rest one at a time.
// Eight rows, not sixteen: BenchmarkDecodeStream (two threads, two sets
// of three rounds of the two builds alternated) put sixteen-row F16 and
// BF16 at 1.03-1.19x the time of W16A16's eight-row kernel over the same
// bytes in the same run, eight-row at 0.95-1.11x (fewer streams for the
// prefetchers to follow, a reading).
// Registers: DI out, CX 8-row groups left, SI the group's first row,
// R8/R11 stride x1/x3, BX/R13 rows 0/4 of the group, R12 x, DX chunks
// left; Z0-Z3 the sums of row pairs (2p, 2p+1), Z8 the 8 activations in
// both halves, Z9-Z12 widened weights.
func floatVec512(a *asm, t floatType) {
	name := t.name + "VecAVX512"
	l := func(s string) string { return t.name + "z" + s }
	a.raw("// func %s(out []float32, w []byte, stride, chunks int, x []float32)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-88", name)
	rows8Args(a, "chunks", l("done"))
	a.label(l("group"))
	a.op("MOVQ SI, BX")
	a.op("LEAQ (SI)(R8*4), R13")
	a.op("MOVQ R10, R12")
	a.op("MOVQ R9, DX")
	for p := 0; p < 4; p++ {
		a.op("VPXORD Z%d, Z%d, Z%d", p, p, p)
	}
	bases := []string{"BX", "R13"}
	rowAddr := func(r, off int) string {
		b, o := bases[r/4], ""
		if off != 0 {
			o = fmt.Sprint(off)
		}
		switch r % 4 {
		case 0:
			return o + "(" + b + ")"
		case 1:
			return o + "(" + b + ")(R8*1)"
		case 2:
			return o + "(" + b + ")(R8*2)"
		}
		return o + "(" + b + ")(R11*1)"
	}
	// chunk emits chunk k of a step: the FMAs of all 8 rows, and with
	// prefetch the lines floatPrefetch bytes on of rows 2k and 2k+1.
	chunk := func(k int, prefetch bool) {
		a.op("VBROADCASTF64X4 %s(R12), Z8", offs(32*k))
		for p := 0; p < 4; p++ {
			r := 9 + p
			t.load(a, rowAddr(2*p, 8*t.eb*k), rowAddr(2*p+1, 8*t.eb*k), r)
			a.op("VFMADD231PS Z8, Z%d, Z%d", r, p)
		}
		if prefetch {
			for r := 2 * k; r < 2*k+2; r++ {
				a.op("PREFETCHT0 %s", rowAddr(r, 8*t.eb*k+floatPrefetch))
			}
		}
	}
	// Four chunks (a 64-byte line of every row) a step, then the rest.
	a.op("SHRQ $2, DX")
	a.op("JZ %s", l("rest"))
	a.label(l("step"))
	for k := 0; k < 4; k++ {
		chunk(k, true)
	}
	for _, b := range bases {
		a.op("ADDQ $%d, %s", 4*8*t.eb, b)
	}
	a.op("ADDQ $128, R12")
	a.op("DECQ DX")
	a.op("JNZ %s", l("step"))
	a.label(l("rest"))
	a.op("MOVQ R9, DX")
	a.op("ANDQ $3, DX")
	a.op("JZ %s", l("sums"))
	a.label(l("chunk"))
	chunk(0, false)
	for _, b := range bases {
		a.op("ADDQ $%d, %s", 8*t.eb, b)
	}
	a.op("ADDQ $32, R12")
	a.op("DECQ DX")
	a.op("JNZ %s", l("chunk"))
	a.label(l("sums"))
	for p := 0; p < 4; p++ {
		a.op("VEXTRACTF64X4 $1, Z%d, Y9", p)
		hsum(a, p, 10)
		hsum(a, 9, 10)
		a.op("VMOVSS X%d, %d(DI)", p, 8*p)
		a.op("VMOVSS X9, %d(DI)", 8*p+4)
	}
	a.op("ADDQ $32, DI")
	a.op("LEAQ (SI)(R8*8), SI")
	a.op("DECQ CX")
	a.op("JNZ %s", l("group"))
	a.label(l("done"))
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// floatVecN512 emits <t>Vec<n>AVX512(out []float32, ostride int, w
// []byte, stride, rows, chunks int, x []float32, xstride int): rows (a
// multiple of 6) times n = 4 or 8 activation rows, 6 rows at a time; each
// group of 6 rows' weights is widened once for all n rows, so 8 of them
// spend half the conversions a multiply-add that 4 do:
// BenchmarkMatMulCompute (64 rows, one thread, Zen 5) F16 79.5 -> 89-91
// and BF16 76.4 -> 89-92 GMAC/s, 0.80 of BenchmarkFMAPeak's 112 a thread.
// Registers: DI out,
// AX/R13 ostride x1/x3 in bytes, SI the group's first row, R8 stride,
// BX/R12 rows 0/3 of the group, CX rows left, R9 chunks, R10/R15
// activation rows 0/4, R11/R14 xstride x1/x3 in bytes, DX chunks left
// (then out's row 4); Z(8+n*p+i) the sums of row pair p (rows 2p, 2p+1)
// with activation row i, Z0-Z2 widened weights, Z3 8 activations in both
// halves, Z4-Z6 scratch for the sums (VEX needs registers below 16).
func floatVecN512(a *asm, t floatType, n int) {
	name := fmt.Sprintf("%sVec%dAVX512", t.name, n)
	l := func(s string) string { return fmt.Sprintf("%sz%d%s", t.name, n, s) }
	a.raw("// func %s(out []float32, ostride int, w []byte, stride, rows, chunks int, x []float32, xstride int)", name)
	sixRowKernel(a, name, l, false, func() {
		if n == 8 {
			a.op("LEAQ (R10)(R11*4), R15")
		}
		acc := func(p, i int) int { return 8 + n*p + i }
		for r := 8; r < 8+3*n; r++ {
			a.op("VPXORD Z%d, Z%d, Z%d", r, r, r)
		}
		a.label(l("chunk"))
		for p := 0; p < 3; p++ {
			t.load(a, sixRowAddr[2*p], sixRowAddr[2*p+1], p)
		}
		xAddr := []string{"(R10)", "(R10)(R11*1)", "(R10)(R11*2)", "(R10)(R14*1)",
			"(R15)", "(R15)(R11*1)", "(R15)(R11*2)", "(R15)(R14*1)"}
		for i := 0; i < n; i++ {
			a.op("VBROADCASTF64X4 %s, Z3", xAddr[i])
			for p := 0; p < 3; p++ {
				a.op("VFMADD231PS Z3, Z%d, Z%d", p, acc(p, i))
			}
		}
		a.op("ADDQ $%d, BX", 8*t.eb)
		a.op("ADDQ $%d, R12", 8*t.eb)
		a.op("ADDQ $32, R10")
		if n == 8 {
			a.op("ADDQ $32, R15")
		}
		a.op("DECQ DX")
		a.op("JNZ %s", l("chunk"))
		a.op("LEAQ (DI)(AX*4), DX")
		outAddr := []string{"(DI)", "(DI)(AX*1)", "(DI)(AX*2)", "(DI)(R13*1)",
			"(DX)", "(DX)(AX*1)", "(DX)(AX*2)", "(DX)(R13*1)"}
		for p := 0; p < 3; p++ {
			for i := 0; i < n; i++ {
				a.op("VMOVAPS Z%d, Z4", acc(p, i))
				a.op("VEXTRACTF64X4 $1, Z4, Y5")
				hsum(a, 4, 6)
				hsum(a, 5, 6)
				a.op("VMOVSS X4, %d%s", 8*p, outAddr[i])
				a.op("VMOVSS X5, %d%s", 8*p+4, outAddr[i])
			}
		}
	})
}

// sixRowAddr are the six rows of a group of sixRowKernel.
var sixRowAddr = []string{"(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(R12)", "(R12)(R8*1)", "(R12)(R8*2)"}

// sixRowKernel emits the frame of the kernels that take weight rows six
// at a time against several activation rows: TEXT name(out []float32,
// ostride int, w []byte, stride, rows, chunks int, [tail uint64,] x
// []T, xstride int), with xstride in elements of 4 bytes (float32
// activations) or, with tail, in bytes. It loads DI out, AX/R13 ostride
// x1/x3 in bytes, SI w, R8 stride, CX rows, R9 chunks, R11/R14 xstride
// x1/x3 in bytes, and with tail R15 and K1 the tail mask; then for each
// group of 6 rows it sets BX/R12 to rows 0/3, R10 to x and DX to chunks,
// runs group, and steps DI and SI on. l names its labels.
func sixRowKernel(a *asm, name string, l func(string) string, tail bool, group func()) {
	xOff, frame := 80, 112
	if tail {
		xOff, frame = 88, 120
	}
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-%d", name, frame)
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ ostride+24(FP), AX")
	a.op("SHLQ $2, AX")
	a.op("LEAQ (AX)(AX*2), R13")
	a.op("MOVQ w_base+32(FP), SI")
	a.op("MOVQ stride+56(FP), R8")
	a.op("MOVQ rows+64(FP), CX")
	a.op("MOVQ chunks+72(FP), R9")
	if tail {
		a.op("MOVQ tail+80(FP), R15")
		a.op("KMOVD R15, K1")
	}
	a.op("MOVQ xstride+%d(FP), R11", xOff+24)
	if !tail {
		a.op("SHLQ $2, R11")
	}
	a.op("LEAQ (R11)(R11*2), R14")
	a.op("TESTQ CX, CX")
	a.op("JZ %s", l("done"))
	a.label(l("group"))
	a.op("MOVQ SI, BX")
	a.op("LEAQ (SI)(R8*2), R12")
	a.op("ADDQ R8, R12")
	a.op("MOVQ x_base+%d(FP), R10", xOff)
	a.op("MOVQ R9, DX")
	group()
	a.op("ADDQ $24, DI")
	a.op("LEAQ (SI)(R8*4), SI")
	a.op("LEAQ (SI)(R8*2), SI")
	a.op("SUBQ $6, CX")
	a.op("JNZ %s", l("group"))
	a.label(l("done"))
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}
