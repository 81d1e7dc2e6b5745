package main

import (
	"fmt"
	"math"
)

// Coefficients of the vectorized activations, fitted for this package
// (Chebyshev interpolation in float64, rounded to float32; the fits and
// their measured float32 errors are in kernels/ops_avx2_test.go's
// comments):
//
//	expCoef: e^r on [-ln2/2, ln2/2], degree 6 (1.25 ulp);
//	erfCoef: erf(z)/z as a polynomial in z^2 on [0, 1], degree 6;
//	erfcxCoef: erfc(z)*e^(z^2) on [0.75, 4.5] in u = z*gScale + gOff,
//	degree 12.
var (
	expCoef   = []float32{1, 1, 0.5, 0.16666415, 0.041666217, 0.008375129, 0.0013948581}
	erfCoef   = []float32{1.1283791, -0.37612626, 0.11283597, -0.026854329, 0.005189312, -0.0008018855, 7.882497e-05}
	erfcxCoef = []float32{0.20188756, -0.12838009, 0.07788864, -0.045324482, 0.025395676, -0.013692182, 0.007170726,
		-0.0038370893, 0.0019172071, -0.0006156843, 0.00027769254, -0.00037687767, 0.00017372155}
	geluT, geluZmax = float32(0.75), float32(4.5)
	gScale          = float32(2 / (4.5 - 0.75))
	gOff            = float32(-(0.75 + 4.5) / (4.5 - 0.75))
)

func splatF(v float32) (b [32]byte) {
	u := math.Float32bits(v)
	for i := 0; i < 32; i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return
}

func splatU(u uint32) [32]byte { return splatF(math.Float32frombits(u)) }

func opsFile() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`
// Vectorized activations and row operations (see ops.go and ops_amd64.go
// for the contracts and the error bounds). Every function handles
// len/8*8 elements; the Go wrappers run the tail through an 8-element
// buffer, so every element goes through the same arithmetic.
`)
	a.data("oabs", splatU(0x7fffffff))
	a.data("osign", splatU(0x80000000))
	a.data("oone", splatF(1))
	a.data("ohalf", splatF(0.5))
	a.data("orsqrt2", splatF(float32(1/math.Sqrt2)))
	a.data("olog2e", splatF(float32(math.Log2E)))
	a.data("oln2hi", splatF(0.693359375))
	a.data("oln2lo", splatF(-2.12194440e-4))
	a.data("oexplo", splatF(-87.33654))
	a.data("ogeluT", splatF(geluT))
	a.data("ozmax", splatF(geluZmax))
	a.data("ogscale", splatF(gScale))
	a.data("ogoff", splatF(gOff))
	a.data("oninf", splatU(0xff800000))
	for i, c := range expCoef {
		a.data(fmt.Sprintf("oexp%d", i), splatF(c))
	}
	for i, c := range erfCoef {
		a.data(fmt.Sprintf("oerf%d", i), splatF(c))
	}
	for i, c := range erfcxCoef {
		a.data(fmt.Sprintf("oerfcx%d", i), splatF(c))
	}

	siluOnly := func(a *asm, v vec) { silu(a, v, false) }
	unary(a, ymm, "geluAVX2", false, gelu)
	unary(a, ymm, "geluMulAVX2", true, gelu)
	unary(a, ymm, "siluAVX2", false, siluOnly)
	unary(a, ymm, "siluMulAVX2", true, siluOnly)
	unary(a, ymm, "sigmoidAVX2", false, func(a *asm, v vec) { silu(a, v, true) })
	expSub(a)
	expSub512(a)
	unary(a, zmm, "siluMulAVX512", true, siluOnly)
	unary(a, zmm, "geluMulAVX512", true, gelu)
	maxPS(a)
	sumSq(a)
	scaleMul(a)
	binary(a, "addAVX2", "VADDPS")
	binary(a, "mulAVX2", "VMULPS")
	return a
}

// vec is the register width the activations' steps are emitted for: Y
// registers (AVX2: constants as 32-byte memory operands, blends by
// VBLENDVPS) or Z (AVX-512: constants broadcast from their first lane,
// blends under masks). Each element takes the same operations either
// way, so the two widths give the same bits.
type vec struct{ wide bool }

var (
	ymm = vec{false}
	zmm = vec{true}
)

func (v vec) reg(i int) string {
	if v.wide {
		return fmt.Sprintf("Z%d", i)
	}
	return fmt.Sprintf("Y%d", i)
}

// mem emits op c, src, dst with the constant c as its memory operand.
func (v vec) mem(a *asm, op, c, src, dst string) {
	if v.wide {
		op += ".BCST"
	}
	a.op("%s %s<>(SB), %s, %s", op, c, src, dst)
}

// bits emits VANDPS or VXORPS of the constant c (on Z registers VPANDD or
// VPXORD: the PS forms need AVX512DQ, which the avx512 tier does not
// require).
func (v vec) bits(a *asm, op, c, src, dst string) {
	if v.wide {
		op = map[string]string{"VANDPS": "VPANDD", "VXORPS": "VPXORD"}[op]
	}
	v.mem(a, op, c, src, dst)
}

// load sets dst to the constant c.
func (v vec) load(a *asm, c, dst string) {
	if v.wide {
		a.op("VBROADCASTSS %s<>(SB), %s", c, dst)
	} else {
		a.op("VMOVUPS %s<>(SB), %s", c, dst)
	}
}

// bySign sets dst to neg in the lanes where x's sign bit is set (K3 on Z
// registers).
func (v vec) bySign(a *asm, x, neg, dst string) {
	if v.wide {
		a.op("VPTESTMD.BCST osign<>(SB), %s, K3", x)
		a.op("VMOVAPS %s, K3, %s", neg, dst)
	} else {
		a.op("VBLENDVPS %s, %s, %s, %s", x, neg, dst, dst)
	}
}

// ifLess sets dst to lt where x < c and to ge elsewhere (tmp the mask on
// Y registers, K4 on Z).
func (v vec) ifLess(a *asm, x, c, lt, ge, dst, tmp string) {
	if v.wide {
		a.op("VCMPPS.BCST $1, %s<>(SB), %s, K4", c, x)
		a.op("VMOVAPS %s, %s", ge, dst)
		a.op("VMOVAPS %s, K4, %s", lt, dst)
	} else {
		a.op("VCMPPS $1, %s<>(SB), %s, %s", c, x, tmp)
		a.op("VBLENDVPS %s, %s, %s, %s", tmp, lt, ge, dst)
	}
}

// horner leaves in acc the polynomial with coefficients name0..nameN
// (memory) at the value in u: acc = c[n]; acc = acc*u + c[i].
func horner(a *asm, v vec, name string, n int, u, acc string) {
	v.load(a, fmt.Sprintf("%s%d", name, n), acc)
	for i := n - 1; i >= 0; i-- {
		v.mem(a, "VFMADD213PS", fmt.Sprintf("%s%d", name, i), u, acc)
	}
}

// exp sets out = e^in: 0 below -87.33654 (where e^in would not be a
// normal float), NaN for NaN; in must be <= 0 (no overflow check). ta,
// tb, tc are scratch (distinct from in and out; on Z registers K1 and K2
// stand for tb, which may be ""). VRNDSCALEPS $8 rounds as VROUNDPS $8.
func exp(a *asm, v vec, in, out, ta, tb, tc string) {
	lo := tb
	if v.wide {
		lo = "K1"
	}
	v.load(a, "oexplo", ta)
	a.op("VCMPPS $1, %s, %s, %s", ta, in, lo) // in < lo
	a.op("VMAXPS %s, %s, %s", in, ta, ta)     // max(lo, in), NaN kept
	v.mem(a, "VMULPS", "olog2e", ta, tc)
	if v.wide {
		a.op("VRNDSCALEPS $8, %s, %s", tc, tc)
	} else {
		a.op("VROUNDPS $8, %s, %s", tc, tc) // n
	}
	v.mem(a, "VFNMADD231PS", "oln2hi", tc, ta)
	v.mem(a, "VFNMADD231PS", "oln2lo", tc, ta) // r
	a.op("VCVTPS2DQ %s, %s", tc, tc)
	a.op("VPSLLD $23, %s, %s", tc, tc)
	v.mem(a, "VPADDD", "oone", tc, tc) // 2^n
	horner(a, v, "oexp", len(expCoef)-1, ta, out)
	a.op("VMULPS %s, %s, %s", tc, out, out)
	if v.wide {
		a.op("KNOTW K1, K2")
		a.op("VMOVAPS.Z %s, K2, %s", out, out)
	} else {
		a.op("VANDNPS %s, %s, %s", out, tb, out)
	}
}

// gelu: register 0 = GELU(x) = x*Phi(x). For |x|/sqrt2 = z < 0.75, Phi =
// 0.5 + 0.5*sign(x)*erf(z), erf(z) = z*P(z^2), computed as 0.5x +
// 0.5|x|*zP; otherwise E = 0.5*erfc(z) = 0.5*e^(-z^2)*G(z) (G ~ erfcx, z
// clamped to 4.5, beyond which E < 1e-10) and GELU = x(1-E) for x >= 0,
// x*E below.
func gelu(a *asm, v vec) {
	r := v.reg
	v.bits(a, "VANDPS", "oabs", r(0), r(1))
	v.mem(a, "VMULPS", "orsqrt2", r(1), r(2))   // z
	a.op("VMULPS %s, %s, %s", r(2), r(2), r(3)) // s = z^2
	horner(a, v, "oerf", len(erfCoef)-1, r(3), r(4))
	a.op("VMULPS %s, %s, %s", r(4), r(2), r(4))
	v.mem(a, "VMULPS", "ohalf", r(1), r(5))
	v.mem(a, "VMULPS", "ohalf", r(0), r(6))
	a.op("VFMADD231PS %s, %s, %s", r(4), r(5), r(6)) // small-|x| result
	v.mem(a, "VMINPS", "ozmax", r(2), r(4))
	v.load(a, "ogscale", r(5))
	v.mem(a, "VFMADD213PS", "ogoff", r(4), r(5)) // u
	horner(a, v, "oerfcx", len(erfcxCoef)-1, r(5), r(7))
	v.bits(a, "VXORPS", "osign", r(3), r(8)) // -z^2
	exp(a, v, r(8), r(9), r(10), r(11), r(12))
	a.op("VMULPS %s, %s, %s", r(7), r(9), r(9))
	v.mem(a, "VMULPS", "ohalf", r(9), r(9))      // E
	a.op("VMULPS %s, %s, %s", r(9), r(0), r(10)) // x*E
	v.load(a, "oone", r(11))
	a.op("VSUBPS %s, %s, %s", r(9), r(11), r(11))
	a.op("VMULPS %s, %s, %s", r(11), r(0), r(11)) // x*(1-E)
	v.bySign(a, r(0), r(10), r(11))
	v.ifLess(a, r(2), "ogeluT", r(6), r(11), r(0), r(4))
}

// silu: register 0 = x*sigmoid(x) (or sigmoid(x)) with e = e^-|x| (never
// overflows): sigmoid = 1/(1+e) for x >= 0, e/(1+e) below.
func silu(a *asm, v vec, sigmoid bool) {
	r := v.reg
	v.bits(a, "VANDPS", "oabs", r(0), r(1))
	v.bits(a, "VXORPS", "osign", r(1), r(1))
	exp(a, v, r(1), r(2), r(5), r(6), r(7))
	v.mem(a, "VADDPS", "oone", r(2), r(3))
	v.load(a, "oone", r(4))
	v.bySign(a, r(0), r(2), r(4)) // numerator
	if !sigmoid {
		a.op("VMULPS %s, %s, %s", r(4), r(0), r(4))
	}
	a.op("VDIVPS %s, %s, %s", r(3), r(4), r(0))
}

// unary emits func name(x []float32) or, with mul, func name(x, y
// []float32) (x = f(x)*y), over len(x)/8 (Y) or len(x)/16 (Z) chunks.
func unary(a *asm, v vec, name string, mul bool, body func(*asm, vec)) {
	l := name
	if mul {
		a.raw("// func %s(x, y []float32)", name)
		a.raw("TEXT ·%s(SB), NOSPLIT, $0-48", name)
		a.op("MOVQ y_base+24(FP), DI")
	} else {
		a.raw("// func %s(x []float32)", name)
		a.raw("TEXT ·%s(SB), NOSPLIT, $0-24", name)
	}
	shift, size := 3, 32
	if v.wide {
		shift, size = 4, 64
	}
	x := v.reg(0)
	a.op("MOVQ x_base+0(FP), SI")
	a.op("MOVQ x_len+8(FP), CX")
	a.op("SHRQ $%d, CX", shift)
	a.op("JZ %sdone", l)
	a.label(l + "loop")
	a.op("VMOVUPS (SI), %s", x)
	body(a, v)
	if mul {
		a.op("VMULPS (DI), %s, %s", x, x)
		a.op("ADDQ $%d, DI", size)
	}
	a.op("VMOVUPS %s, (SI)", x)
	a.op("ADDQ $%d, SI", size)
	a.op("DECQ CX")
	a.op("JNZ %sloop", l)
	a.label(l + "done")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// expSub: func expSubAVX2(x []float32, m float32) float64 sets x[i] =
// e^(x[i]-m) and returns their sum in float64 (4 lanes, two
// accumulators). The difference is taken exactly as s + err (TwoSum) and
// the exponential corrected to e^s*(1+err).
func expSub(a *asm) {
	a.raw("// func expSubAVX2(x []float32, m float32) float64")
	a.raw("TEXT ·expSubAVX2(SB), NOSPLIT, $0-40")
	a.op("MOVQ x_base+0(FP), SI")
	a.op("MOVQ x_len+8(FP), CX")
	a.op("VBROADCASTSS m+24(FP), Y14")
	a.op("VXORPS osign<>(SB), Y14, Y14") // b = -m
	a.op("VXORPD Y12, Y12, Y12")
	a.op("VXORPD Y13, Y13, Y13")
	a.op("SHRQ $3, CX")
	a.op("JZ expsubdone")
	a.label("expsubloop")
	a.op("VMOVUPS (SI), Y0") // a
	twoSum(a, "Y")
	a.op("VCMPPS $7, Y3, Y3, Y4") // err is not NaN (infinite operands)
	a.op("VANDPS Y4, Y3, Y3")
	exp(a, ymm, "Y1", "Y5", "Y6", "Y7", "Y8")
	a.op("VFMADD231PS Y3, Y5, Y5")
	a.op("VMOVUPS Y5, (SI)")
	a.op("VCVTPS2PD X5, Y6")
	a.op("VEXTRACTF128 $1, Y5, X7")
	a.op("VCVTPS2PD X7, Y7")
	a.op("VADDPD Y6, Y12, Y12")
	a.op("VADDPD Y7, Y13, Y13")
	a.op("ADDQ $32, SI")
	a.op("DECQ CX")
	a.op("JNZ expsubloop")
	a.label("expsubdone")
	hsumPD(a)
	a.op("VMOVSD X12, ret+32(FP)")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// twoSum sets register 1 to s = a + b (a in register 0, b in 14) and
// register 3 to its rounding error (TwoSum), registers 2 and 4 scratch;
// v names the width ("Y" or "Z").
func twoSum(a *asm, v string) {
	r := func(i int) string { return fmt.Sprintf("%s%d", v, i) }
	a.op("VADDPS %s, %s, %s", r(14), r(0), r(1)) // s
	a.op("VSUBPS %s, %s, %s", r(0), r(1), r(2))  // bb = s - a
	a.op("VSUBPS %s, %s, %s", r(2), r(1), r(3))  // s - bb
	a.op("VSUBPS %s, %s, %s", r(3), r(0), r(3))  // a - (s - bb)
	a.op("VSUBPS %s, %s, %s", r(2), r(14), r(4)) // b - bb
	a.op("VADDPS %s, %s, %s", r(4), r(3), r(3))  // err
}

// expSub512: func expSubAVX512(x []float32, m float32) float64 is
// expSubAVX2 sixteen elements at a time (len(x) a multiple of 8; an odd
// eight last, in the low half): each element takes the same operations
// (VRNDSCALEPS $8 rounds as VROUNDPS $8; masks replace the compare-and
// ANDs), and the eight float64 lanes of Z12 are expSubAVX2's Y12 (lanes
// 0-3) and Y13 (4-7), each eight elements added in the same order, so
// the sum has the AVX2 tier's bits.
func expSub512(a *asm) {
	a.raw("// func expSubAVX512(x []float32, m float32) float64")
	a.raw("TEXT ·expSubAVX512(SB), NOSPLIT, $0-40")
	a.op("MOVQ x_base+0(FP), SI")
	a.op("MOVQ x_len+8(FP), CX")
	a.op("VBROADCASTSS m+24(FP), Z14")
	a.op("VPXORD.BCST osign<>(SB), Z14, Z14") // b = -m (VPXORD: AVX512F alone)
	a.op("VPXORQ Z12, Z12, Z12")
	a.op("KXNORW K4, K4, K4") // all sixteen lanes
	a.op("SHRQ $3, CX")
	a.op("JZ expsub5done")
	a.label("expsub5loop")
	a.op("CMPQ CX, $1")
	a.op("JNE expsub5full")
	a.op("MOVL $0xff, AX")
	a.op("KMOVW AX, K4") // an odd eight last: the low half
	a.label("expsub5full")
	a.op("VMOVUPS.Z (SI), K4, Z0")
	expSubStep512(a)
	a.op("VMOVUPS Z5, K4, (SI)")
	a.op("VCVTPS2PD Y5, Z6")
	a.op("VADDPD Z6, Z12, Z12")
	a.op("CMPQ CX, $1")
	a.op("JEQ expsub5done")
	a.op("VEXTRACTF64X4 $1, Z5, Y7")
	a.op("VCVTPS2PD Y7, Z7")
	a.op("VADDPD Z7, Z12, Z12")
	a.op("ADDQ $64, SI")
	a.op("SUBQ $2, CX")
	a.op("JNZ expsub5loop")
	a.label("expsub5done")
	a.op("VEXTRACTF64X4 $1, Z12, Y13")
	hsumPD(a)
	a.op("VMOVSD X12, ret+32(FP)")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// expSubStep512 sets Z5 = e^(Z0-m) as expSubAVX2 does per element (Z14 =
// -m; Z1-Z4, Z6-Z8, K1-K3 scratch).
func expSubStep512(a *asm) {
	twoSum(a, "Z")
	a.op("VCMPPS $7, Z3, Z3, K3") // err is not NaN (infinite operands)
	a.op("VMOVAPS.Z Z3, K3, Z3")
	exp(a, zmm, "Z1", "Z5", "Z6", "", "Z8")
	a.op("VFMADD231PS Z3, Z5, Z5")
}

// hsumPD leaves in X12 the sum Y12+Y13 of four doubles each, as
// ((a0+a2)+(a1+a3)) of Y12+Y13.
func hsumPD(a *asm) {
	a.op("VADDPD Y13, Y12, Y12")
	a.op("VEXTRACTF128 $1, Y12, X13")
	a.op("VADDPD X13, X12, X12")
	a.op("VPERMILPD $1, X12, X13")
	a.op("VADDSD X13, X12, X12")
}

// maxPS: func maxAVX2(x []float32) (m float32, nan bool): the largest
// element (-Inf for none) and whether any is NaN.
func maxPS(a *asm) {
	a.raw("// func maxAVX2(x []float32) (m float32, nan bool)")
	a.raw("TEXT ·maxAVX2(SB), NOSPLIT, $0-29")
	a.op("MOVQ x_base+0(FP), SI")
	a.op("MOVQ x_len+8(FP), CX")
	a.op("VMOVUPS oninf<>(SB), Y0")
	a.op("VXORPS Y1, Y1, Y1")
	a.op("SHRQ $3, CX")
	a.op("JZ maxdone")
	a.label("maxloop")
	a.op("VMOVUPS (SI), Y2")
	a.op("VMAXPS Y2, Y0, Y0")
	a.op("VCMPPS $3, Y2, Y2, Y3")
	a.op("VORPS Y3, Y1, Y1")
	a.op("ADDQ $32, SI")
	a.op("DECQ CX")
	a.op("JNZ maxloop")
	a.label("maxdone")
	a.op("VEXTRACTF128 $1, Y0, X2")
	a.op("VMAXPS X2, X0, X0")
	a.op("VPERMILPS $0x4e, X0, X2")
	a.op("VMAXPS X2, X0, X0")
	a.op("VPERMILPS $0xb1, X0, X2")
	a.op("VMAXPS X2, X0, X0")
	a.op("VMOVSS X0, m+24(FP)")
	a.op("VMOVMSKPS Y1, AX")
	a.op("TESTL AX, AX")
	a.op("SETNE nan+28(FP)")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// sumSq: func sumSqAVX2(x []float32) float64: the sum of the float32
// squares, accumulated in float64.
func sumSq(a *asm) {
	a.raw("// func sumSqAVX2(x []float32) float64")
	a.raw("TEXT ·sumSqAVX2(SB), NOSPLIT, $0-32")
	a.op("MOVQ x_base+0(FP), SI")
	a.op("MOVQ x_len+8(FP), CX")
	a.op("VXORPD Y12, Y12, Y12")
	a.op("VXORPD Y13, Y13, Y13")
	a.op("SHRQ $3, CX")
	a.op("JZ sumsqdone")
	a.label("sumsqloop")
	a.op("VMOVUPS (SI), Y0")
	a.op("VMULPS Y0, Y0, Y0")
	a.op("VCVTPS2PD X0, Y1")
	a.op("VEXTRACTF128 $1, Y0, X2")
	a.op("VCVTPS2PD X2, Y2")
	a.op("VADDPD Y1, Y12, Y12")
	a.op("VADDPD Y2, Y13, Y13")
	a.op("ADDQ $32, SI")
	a.op("DECQ CX")
	a.op("JNZ sumsqloop")
	a.label("sumsqdone")
	hsumPD(a)
	a.op("VMOVSD X12, ret+24(FP)")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// scaleMul: func scaleAVX2(out, x []float32, s float32) sets out = x*s;
// func scaleMulAVX2(out, x, w []float32, s float32) sets out = (x*s)*w.
func scaleMul(a *asm) {
	for _, withW := range []bool{false, true} {
		name, args, sOff := "scaleAVX2", "$0-52", 48
		if withW {
			name, args, sOff = "scaleMulAVX2", "$0-76", 72
			a.raw("// func %s(out, x, w []float32, s float32)", name)
		} else {
			a.raw("// func %s(out, x []float32, s float32)", name)
		}
		a.raw("TEXT ·%s(SB), NOSPLIT, %s", name, args)
		a.op("MOVQ out_base+0(FP), DI")
		a.op("MOVQ x_base+24(FP), SI")
		a.op("MOVQ x_len+32(FP), CX")
		if withW {
			a.op("MOVQ w_base+48(FP), DX")
		}
		a.op("VBROADCASTSS s+%d(FP), Y15", sOff)
		a.op("SHRQ $3, CX")
		a.op("JZ %sdone", name)
		a.label(name + "loop")
		a.op("VMULPS (SI), Y15, Y0")
		if withW {
			a.op("VMULPS (DX), Y0, Y0")
			a.op("ADDQ $32, DX")
		}
		a.op("VMOVUPS Y0, (DI)")
		a.op("ADDQ $32, SI")
		a.op("ADDQ $32, DI")
		a.op("DECQ CX")
		a.op("JNZ %sloop", name)
		a.label(name + "done")
		a.op("VZEROUPPER")
		a.op("RET")
		a.raw("")
	}
}

// binary: func name(dst, a []float32): dst = dst op a.
func binary(a *asm, name, op string) {
	a.raw("// func %s(dst, a []float32)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	a.op("MOVQ dst_base+0(FP), DI")
	a.op("MOVQ dst_len+8(FP), CX")
	a.op("MOVQ a_base+24(FP), SI")
	a.op("SHRQ $3, CX")
	a.op("JZ %sdone", name)
	a.label(name + "loop")
	a.op("VMOVUPS (DI), Y0")
	a.op("%s (SI), Y0, Y0", op)
	a.op("VMOVUPS Y0, (DI)")
	a.op("ADDQ $32, SI")
	a.op("ADDQ $32, DI")
	a.op("DECQ CX")
	a.op("JNZ %sloop", name)
	a.label(name + "done")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}
