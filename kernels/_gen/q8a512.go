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
// quantQ8a for whole groups of 16 blocks of 32 on AVX-512 (q8a512.go).
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
