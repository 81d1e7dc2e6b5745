package main

import "fmt"

func init() { files["quant_avx512_amd64.s"] = q8a512File }

// q8a512File writes quant_avx512_amd64.s: quantQ8a (the q8a activation
// layout of actlayout.go) sixteen blocks of 32 at a time. The AVX2
// kernel takes a block at a time, and its horizontal maximum and sum,
// chains of shuffles per block, held it at about 16 ns a block on Zen 5
// (this one: 3.3). Here the sixteen blocks' maxima, and later their sums, are
// reduced together: a tree of lane shuffles that halves sixteen registers
// to one, whose lane b holds block b's result, and the scales of all
// sixteen are one division each. The numbers are quantQ8a's
// (TestQuantLayouts, TestQuantActsSpecialValues): d = amax/127 rounded to
// fp16 and widened; q = roundf(x * (1/d)) with the unrounded d, 0 where
// that is infinite or NaN.
func q8a512File() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`
// quantQ8a for whole groups of 16 blocks of 32, and quantQ8ka, on AVX-512
// (q8a512.go).
`)
	a.dwords64("zqabs", func(int) uint32 { return 0x7fffffff })
	a.dwords64("zqsign", func(int) uint32 { return 0x80000000 })
	// The largest float below 0.5: trunc(y + copysign(it, y)) is roundf(y)
	// for every float y (a half rounds the sum up to the next integer, ties
	// to even, and anything less stays below it).
	a.dwords64("zqhalf", func(int) uint32 { return 0x3effffff })
	a.dwords64("zq127", func(int) uint32 { return 0x42fe0000 })
	a.dwords64("zqone", func(int) uint32 { return 0x3f800000 })
	a.data("zqbytes8", splat(8))
	q8a512(a)
	q8ka512(a)
	return a
}

// q8aTree is the reduction of sixteen ZMM registers Z0-Z15 to Z0, each
// level pairing registers and merging the lanes of one result with two
// shuffles (the lanes of each pair's results side by side) and op: first
// 256-bit halves, then 128-bit quarters (VSHUFF32X4), then pairs and
// single lanes within quarters (VSHUFPS). slot[b] is the register whose
// lanes must hold block b for Z0's lane b to be block b's result.
type q8aTree struct{ slot [16]int }

// q8aLevels are the tree's levels: the shuffle and its two immediates.
var q8aLevels = []struct {
	op     string
	lo, hi int
}{
	{"VSHUFF32X4", 0x44, 0xee},
	{"VSHUFF32X4", 0x88, 0xdd},
	{"VSHUFPS", 0x44, 0xee},
	{"VSHUFPS", 0x88, 0xdd},
}

// shuffle is what op $imm, b, a, dst leaves in dst's 16 lanes, for lanes
// tagged a and b.
func shuffle(op string, imm int, a, b [16]int) (d [16]int) {
	for i := range d {
		src, sel := a, imm>>(2*(i%4))&3
		if op == "VSHUFF32X4" {
			src, sel = a, imm>>(2*(i/4))&3
			if i >= 8 {
				src = b
			}
			d[i] = src[4*sel+i%4]
			continue
		}
		if i%4 >= 2 {
			src = b
		}
		d[i] = src[i&^3+sel]
	}
	return d
}

// newQ8aTree works out which register each block goes in, checking that
// every merge joins lanes of one register.
func newQ8aTree() *q8aTree {
	var regs [16][16]int
	for r := range regs {
		for i := range regs[r] {
			regs[r][i] = r
		}
	}
	for l, lv := range q8aLevels {
		step := 1 << l
		for r := 0; r < 16; r += 2 * step {
			x := shuffle(lv.op, lv.lo, regs[r], regs[r+step])
			if x != shuffle(lv.op, lv.hi, regs[r], regs[r+step]) {
				panic(fmt.Sprintf("q8aTree: level %d merges lanes of different registers", l))
			}
			regs[r] = x
		}
	}
	t := &q8aTree{}
	for i, r := range regs[0] {
		t.slot[i] = r
	}
	return t
}

// emit reduces Z0-Z15 to Z0 with op (Z16, Z17 scratch).
func (t *q8aTree) emit(a *asm, op string) {
	for l, lv := range q8aLevels {
		step := 1 << l
		for r := 0; r < 16; r += 2 * step {
			a.op("%s $0x%02x, Z%d, Z%d, Z16", lv.op, lv.lo, r+step, r)
			a.op("%s $0x%02x, Z%d, Z%d, Z17", lv.op, lv.hi, r+step, r)
			a.op("%s Z17, Z16, Z%d", op, r)
		}
	}
}

// q8a512 emits quantQ8aAVX512(dst []byte, x []float32, nb int): quantQ8a
// for the len(x)/512 groups of 16 blocks of x, in the q8a layout of nb
// blocks (the quants at dst, the pair sums at 32nb, d at 64nb, the sums
// at 68nb). Registers: SI x, DI quants, R9 pair sums, R8 d, R10 sums, CX
// groups left; Z25 zero, Z26 127, Z27 1, Z28 zqhalf, Z29 zqsign, Z30
// zqabs; once the maxima are reduced, Y15 8 in every byte, Y14 zero.
// Stack: the group's 1/d.
func q8a512(a *asm) {
	t := newQ8aTree()
	a.raw("// func quantQ8aAVX512(dst []byte, x []float32, nb int)")
	a.raw("TEXT ·quantQ8aAVX512(SB), NOSPLIT, $64-56")
	a.op("MOVQ dst_base+0(FP), DI")
	a.op("MOVQ x_base+24(FP), SI")
	a.op("MOVQ x_len+32(FP), CX")
	a.op("SHRQ $9, CX")
	a.op("JZ q8a512done")
	a.op("MOVQ nb+48(FP), AX")
	a.op("SHLQ $5, AX")
	a.op("LEAQ (DI)(AX*1), R9  // pair sums")
	a.op("LEAQ (R9)(AX*1), R8  // d")
	a.op("SHRQ $3, AX")
	a.op("LEAQ (R8)(AX*1), R10 // sums")
	a.op("VPXORD Z25, Z25, Z25")
	a.op("VMOVDQU32 zq127<>(SB), Z26")
	a.op("VMOVDQU32 zqone<>(SB), Z27")
	a.op("VMOVDQU32 zqhalf<>(SB), Z28")
	a.op("VMOVDQU32 zqsign<>(SB), Z29")
	a.op("VMOVDQU32 zqabs<>(SB), Z30")
	a.label("q8a512group")
	// Each block's 32 magnitudes folded to 16, in the register the tree
	// needs it in.
	for b, r := range t.slot {
		a.op("VPANDD %d(SI), Z30, Z%d", 128*b, r)
		a.op("VPANDD %d(SI), Z30, Z16", 128*b+64)
		a.op("VMAXPS Z16, Z%d, Z%d", r, r)
	}
	t.emit(a, "VMAXPS")
	a.op("VMOVDQU zqbytes8<>(SB), Y15") // the tree used Z0-Z15
	a.op("VPXOR Y14, Y14, Y14")
	a.op("VDIVPS Z26, Z0, Z1 // d")
	a.op("VCMPPS $4, Z25, Z1, K1 // d != 0")
	a.op("VDIVPS.Z Z1, Z27, K1, Z2 // 1/d, or 0")
	a.op("VMOVUPS Z2, (SP)")
	a.op("VCVTPS2PH $0, Z1, Y3")
	a.op("VCVTPH2PS Y3, Z3")
	a.op("VMOVUPS Z3, (R8)")
	for b := 0; b < 16; b++ {
		a.op("VBROADCASTSS %d(SP), Z20", 4*b)
		for h := 0; h < 2; h++ {
			y, s := h, 2+h
			a.op("VMULPS %d(SI), Z20, Z%d", 128*b+64*h, y)
			a.op("VPANDD Z29, Z%d, Z%d", y, s)
			a.op("VPORD Z28, Z%d, Z%d", s, s)
			a.op("VADDPS Z%d, Z%d, Z%d", s, y, y)
			// Truncated; infinities and NaN give 0x80000000, whose low
			// byte, all VPMOVDB keeps, is 0.
			a.op("VCVTTPS2DQ Z%d, Z%d", y, y)
			a.op("VPMOVDB Z%d, X%d", y, 4+h)
		}
		a.op("VINSERTI128 $1, X5, Y4, Y4")
		a.op("VMOVDQU Y4, %d(DI)", 32*b)
		a.op("VPMADDUBSW Y4, Y15, Y5 // 8*(q[2j]+q[2j+1])")
		a.op("VPSUBW Y5, Y14, Y5")
		a.op("VMOVDQU Y5, %d(R9)", 32*b)
	}
	// The sums: each block's sixteen pair sums, widened.
	for b, r := range t.slot {
		a.op("VPMOVSXWD %d(R9), Z%d", 32*b, r)
	}
	t.emit(a, "VPADDD")
	a.op("VMOVDQU32 Z0, (R10)")
	q8aAAdvance(a, []q8aAStep{{"SI", 2048}, {"DI", 512}, {"R9", 512}, {"R8", 64}, {"R10", 64}})
	a.op("DECQ CX")
	a.op("JNZ q8a512group")
	a.label("q8a512done")
	a.op("VZEROUPPER")
	a.op("RET")
}

// q8ka512 emits quantQ8kaAVX512(dst []byte, x []float32): quantQ8ka for
// the len(x)/256 super-blocks of x in the q8ka layout of actlayout.go (nb
// super-blocks: the quants at dst, d at 256nb, the int16 sums of 16 at
// 260nb, those of 32 at 292nb), as quantQ8kaAVX2 with a ZMM register per
// group of 16: the first element of largest magnitude maxv (NaN skipped)
// gives iscale = -127/maxv and d = 1/iscale; q = nearest_int(iscale*x)
// by VCVTPS2DQ (nearest even; the reference's min(127, q) changes
// nothing, as |iscale*x| rounds to at most 127); VPMOVDB keeps the low
// byte, 0 for the 0x80000000 of an infinite or NaN product, as the Go
// twin's nearestInt gives; the sixteen sums of 16 are summed from those
// bytes by q8aTree.
// Registers: SI x, DI quants, R8 d, R9 sums of 16, R10 sums of 32, CX
// super-blocks left; Z24 iscale, Z25 zero, Z30 zqabs.
func q8ka512(a *asm) {
	t := newQ8aTree()
	a.raw("// func quantQ8kaAVX512(dst []byte, x []float32)")
	a.raw("TEXT ·quantQ8kaAVX512(SB), NOSPLIT, $0-48")
	a.op("MOVQ dst_base+0(FP), DI")
	a.op("MOVQ x_base+24(FP), SI")
	a.op("MOVQ x_len+32(FP), CX")
	a.op("SHRQ $8, CX")
	a.op("JZ q8ka512done")
	a.op("MOVQ CX, AX")
	a.op("SHLQ $8, AX")
	a.op("LEAQ (DI)(AX*1), R8  // d")
	a.op("LEAQ (R8)(CX*4), R9  // sums of 16")
	a.op("MOVQ CX, AX")
	a.op("SHLQ $5, AX")
	a.op("LEAQ (R9)(AX*1), R10 // sums of 32")
	a.op("VPXORD Z25, Z25, Z25")
	a.op("VMOVDQU32 zqabs<>(SB), Z30")
	a.label("q8ka512blk")
	// amax: four running maxima, each second in VMAXPS (which returns
	// its second source when either is NaN) so no NaN enters them.
	for i := 0; i < 4; i++ {
		a.op("VPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	for g := 0; g < 16; g++ {
		a.op("VPANDD %d(SI), Z30, Z%d", 64*g, 4+g%4)
		a.op("VMAXPS Z%d, Z%d, Z%d", g%4, 4+g%4, g%4)
	}
	a.op("VMAXPS Z1, Z0, Z0")
	a.op("VMAXPS Z3, Z2, Z2")
	a.op("VMAXPS Z2, Z0, Z0")
	a.op("VEXTRACTF64X4 $1, Z0, Y1")
	a.op("VMAXPS Y1, Y0, Y0")
	a.op("VEXTRACTF128 $1, Y0, X1")
	a.op("VMAXPS X1, X0, X0")
	a.op("VPERMILPS $0x4e, X0, X1")
	a.op("VMAXPS X1, X0, X0")
	a.op("VPERMILPS $0xb1, X0, X1")
	a.op("VMAXPS X1, X0, X0")
	a.op("VXORPS X1, X1, X1")
	a.op("VUCOMISS X1, X0")
	a.op("JEQ q8ka512zero")
	// maxv: the first element whose magnitude is amax.
	a.op("VBROADCASTSS X0, Z1")
	a.op("XORQ BX, BX")
	a.label("q8ka512find")
	a.op("VPANDD (SI)(BX*1), Z30, Z2")
	a.op("VCMPPS $0, Z1, Z2, K1")
	a.op("KMOVW K1, AX")
	a.op("TESTL AX, AX")
	a.op("JNZ q8ka512found")
	a.op("ADDQ $64, BX")
	a.op("CMPQ BX, $1024")
	a.op("JNE q8ka512find")
	a.op("JMP q8ka512scale") // none (cannot happen): amax itself, as the AVX2 kernel
	a.label("q8ka512found")
	a.op("BSFL AX, AX")
	a.op("LEAQ (BX)(AX*4), BX")
	a.op("VMOVSS (SI)(BX*1), X0")
	a.label("q8ka512scale")
	a.op("MOVL $0xc2fe0000, AX // -127")
	a.op("VMOVD AX, X2")
	a.op("VDIVSS X0, X2, X2 // iscale = -127/maxv")
	a.op("MOVL $0x3f800000, AX // 1")
	a.op("VMOVD AX, X3")
	a.op("VDIVSS X2, X3, X3 // d = 1/iscale")
	a.op("VMOVSS X3, (R8)")
	a.op("VBROADCASTSS X2, Z24")
	// Quantize each group of 16 into the register the tree wants it
	// in, its bytes gathered four groups to a 64-byte store, and widened
	// back for the sums.
	for g := 0; g < 16; g++ {
		r := t.slot[g]
		st, q := 20+g/4, 18
		if g%4 == 0 {
			q = st
		}
		a.op("VMULPS %d(SI), Z24, Z%d", 64*g, r)
		a.op("VCVTPS2DQ Z%d, Z%d", r, r)
		a.op("VPMOVDB Z%d, X%d", r, q)
		a.op("VPMOVSXBD X%d, Z%d", q, r)
		if g%4 != 0 {
			a.op("VINSERTI32X4 $%d, X18, Z%d, Z%d", g%4, st, st)
		}
		if g%4 == 3 {
			a.op("VMOVDQU64 Z%d, %d(DI)", st, 64*(g/4))
		}
	}
	t.emit(a, "VPADDD")
	a.op("VPMOVDW Z0, (R9)")
	a.op("VPSRLQ $32, Z0, Z1")
	a.op("VPADDD Z1, Z0, Z1 // pair sums in the low half of each qword")
	a.op("VPMOVQW Z1, (R10)")
	a.label("q8ka512next")
	q8aAAdvance(a, []q8aAStep{{"SI", 1024}, {"DI", 256}, {"R8", 4}, {"R9", 32}, {"R10", 16}})
	a.op("DECQ CX")
	a.op("JNZ q8ka512blk")
	a.label("q8ka512done")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
	// An all-zero (or all-NaN) super-block: zero quants, d and sums.
	a.label("q8ka512zero")
	for i := 0; i < 4; i++ {
		a.op("VMOVDQU64 Z25, %d(DI)", 64*i)
	}
	a.op("MOVL $0, (R8)")
	a.op("VMOVDQU32 Y25, (R9)")
	a.op("VMOVDQU32 X25, (R10)")
	a.op("JMP q8ka512next")
}
