package main

import (
	"fmt"
	"strings"
)

// The arm64 K-quant kernels (kernels/kquant_neon_arm64.s): Q4_K, Q5_K and
// Q6_K weights times activations in the q8ka layout (see actlayout.go:
// [nb][256]int8 quants | [nb]float32 d | [nb][16]int16 sums of 16 |
// [nb][8]int16 sums of 32), for the neon tier (widening multiplies) and
// the dotprod tier (SDOT), one activation row (…Vec…) or four (…Vec4…).
//
// Per super-block the exact integer sums of the 8 (Q4_K, Q5_K) or 16
// (Q6_K) sub-blocks are reduced to vectors of four, multiplied by the
// sub-block scales (int32 MUL/MLA), and the resulting 4 int32 lanes are
// added to the float lanes with acc += (d*yd) * float(lanes) (one FMA).
// The mins of Q4_K and Q5_K enter a scalar: m -= (dmin*yd) * float(sum
// over j of m_j times the activations' 32-quant sums). A row's result is
// ((a0+a1)+(a2+a3)) (+ m for Q4_K and Q5_K).
//
// Weight blocks: Q4_K is d, dmin (fp16) | 12 bytes of 6-bit scales and
// mins | 128 bytes of nibbles (144); Q5_K puts 32 bytes of fifth bits
// before the nibbles (176); Q6_K is 128 bytes ql | 64 qh | 16 int8 scales
// | d (fp16) (210).

func init() { files["kquant_neon_arm64.s"] = kqNFile }

// kqNTier is a dot-product tier: the suffix of its kernels' names, a
// word for the comments and whether it has SDOT.
type kqNTier struct {
	name, desc string
	sdot       bool
}

var kqNTiers = []kqNTier{{"NEON", "neon (widening multiplies)", false}, {"Dot", "dotprod (SDOT)", true}}

// kqNQuant names the kernels of a K-quant type (4, 5 or 6).
func kqNQuant(q int) string { return fmt.Sprintf("q%dk", q) }

func kqNB(i int) string { return fmt.Sprintf("V%d.B16", i) }

// kqNList is the register list [Vfirst.B16, ...] of n registers.
func kqNList(first, n int) string {
	r := make([]string, n)
	for i := range r {
		r[i] = kqNB(first + i)
	}
	return "[" + strings.Join(r, ", ") + "]"
}

// kqNDot sets Vd to 4 int32 lanes summing to the products of the int8
// register pairs [A, X] (16 bytes each). With SDOT it is one SDOT a pair;
// without, widening multiplies into the int16 lanes of V(scratch), then
// a pairwise widening add. That is exact when the int16 lanes cannot
// overflow: Q4_K and Q5_K products are at most 31*127 (two pairs, four
// products per int16 lane), Q6_K's at most 32*127 (one pair, two).
func kqNDot(a *asm, sdot bool, scratch, d int, pairs ...[2]int) {
	if sdot {
		a.op("MOVI0(%d)", d)
		for _, p := range pairs {
			a.op("SDOT_4S(%d, %d, %d)", d, p[0], p[1])
		}
		return
	}
	for i, p := range pairs {
		first := "SMLAL_8H"
		if i == 0 {
			first = "SMULL_8H"
		}
		a.op("%s(%d, %d, %d)", first, scratch, p[0], p[1])
		a.op("SMLAL2_8H(%d, %d, %d)", scratch, p[0], p[1])
	}
	a.op("SADDLP_4S(%d, %d)", d, scratch)
}

// kqNDot32 is kqNDot over 32 elements (Q4_K, Q5_K; scratch V26).
func kqNDot32(a *asm, sdot bool, d, a0, a1, x0, x1 int) {
	kqNDot(a, sdot, 26, d, [2]int{a0, x0}, [2]int{a1, x1})
}

// kqNDot16 is kqNDot over 16 elements (Q6_K; scratch V22).
func kqNDot16(a *asm, sdot bool, d, w, x int) {
	kqNDot(a, sdot, 22, d, [2]int{w, x})
}

// kqNSum4 sets V(dst) to the sums of the four vectors V(src)..V(src+3)
// (lane j the sum of V(src+j)'s lanes), with V(tmp) scratch.
func kqNSum4(a *asm, src, dst, tmp int) {
	a.op("VADDP V%d.S4, V%d.S4, V%d.S4", src+1, src, dst)
	a.op("VADDP V%d.S4, V%d.S4, V%d.S4", src+3, src+2, tmp)
	a.op("VADDP V%d.S4, V%d.S4, V%d.S4", tmp, dst, dst)
}

// kqNUnpack puts a Q4_K/Q5_K quarter's weights (64 elements, 32 bytes of
// nibbles at R9) in V0-V3: elements 0-15, 16-31 of the low nibbles, then
// of the high ones (V28 = 0x0f bytes).
//
// Q5_K ORs in the fifth bits: V20/V21 hold the high bits of elements
// 0-15/16-31 of each quarter, bit 0 for the low nibbles and bit 1 for the
// high ones, moved to bit 4 (V30 = 0x10 bytes, V22 scratch), and are
// shifted right by 2 for the next quarter.
func kqNUnpack(a *asm, q int) {
	a.op("VLD1.P 32(R9), %s", kqNList(0, 2))
	for i := 0; i < 2; i++ {
		a.op("VUSHR $4, %s, %s", kqNB(i), kqNB(i+2))
	}
	for i := 0; i < 2; i++ {
		a.op("VAND V28.B16, %s, %s", kqNB(i), kqNB(i))
	}
	if q != 5 {
		return
	}
	for i := 0; i < 4; i++ {
		a.op("VSHL $%d, %s, V22.B16", 4-i/2, kqNB(20+i%2))
		a.op("VAND V30.B16, V22.B16, V22.B16")
		a.op("VORR V22.B16, %s, %s", kqNB(i), kqNB(i))
	}
	for i := 20; i < 22; i++ {
		a.op("VUSHR $2, %s, %s", kqNB(i), kqNB(i))
	}
}

// kqNDots multiplies the unpacked quarter V0-V3 by the next 64
// activations at xp (into V4-V7): the low nibbles' sub-block sums into
// V(dlo), the high ones' into V(dhi).
func kqNDots(a *asm, sdot bool, xp string, dlo, dhi int) {
	a.op("VLD1.P 64(%s), %s", xp, kqNList(4, 4))
	kqNDot32(a, sdot, dlo, 0, 1, 4, 5)
	kqNDot32(a, sdot, dhi, 2, 3, 6, 7)
}

// kqNScales decodes the 12 bytes of 6-bit scales and mins at R9
// (advanced past them): V24/V25 the scales of sub-blocks 0-3/4-7 as
// int32, V23 the mins as int16. Bytes 0-3 (R13) hold the low 6 bits of
// scales 0-3, bytes 4-7 (R14) those of mins 0-3, and their top 2 bits
// are the top bits of scales/mins 4-7, whose low 4 bits are the low/high
// nibbles of bytes 8-11 (R15). R16/R17 gather the 8 scale/min bytes.
// Scratch R13-R17, R19-R21, V22.
func kqNScales(a *asm) {
	for i := 0; i < 3; i++ {
		if i == 0 {
			a.op("MOVWU (R9), R13")
		} else {
			a.op("MOVWU %d(R9), R%d", 4*i, 13+i)
		}
	}
	a.op("ADD $12, R9")
	for i := 0; i < 2; i++ {
		a.op("ANDW $0x3f3f3f3f, R%d, R%d", 13+i, 16+i)
	}
	a.op("LSRW $6, R13, R19")
	a.op("ANDW $0x03030303, R19, R19")
	a.op("ANDW $0x0f0f0f0f, R15, R20")
	a.op("ORRW R19<<4, R20, R19")
	a.op("LSRW $6, R14, R20")
	a.op("ANDW $0x03030303, R20, R20")
	a.op("LSRW $4, R15, R21")
	a.op("ANDW $0x0f0f0f0f, R21, R21")
	a.op("ORRW R20<<4, R21, R20")
	for i := 0; i < 2; i++ {
		a.op("ORR R%d<<32, R%d, R%d", 19+i, 16+i, 16+i)
	}
	for i := 0; i < 2; i++ {
		a.op("VMOV R%d, V%d.D[0]", 16+i, 22+i)
	}
	a.op("VUXTL V22.B8, V22.H8")
	a.op("VUXTL V22.H4, V24.S4")
	a.op("VUXTL2 V22.H8, V25.S4")
	a.op("VUXTL V23.B8, V23.H8")
}

// kqNMinDot sets V(d) to the products of the mins V23 (int16) with the
// 32-quant sums in V26, widened to int32 lane pairs.
func kqNMinDot(a *asm, d int) {
	a.op("SMULL_4S(%d, 23, 26)", d)
	a.op("SMLAL2_4S(%d, 23, 26)", d)
}

// kqNHead: the scales, d and mins of a Q4_K/Q5_K super-block at R9 (left
// at the quants, or Q5_K's fifth bits): V18 = [d*yd, dmin*yd], V24/V25
// the sub-block scales, and the mins' term subtracted from F29.
func kqNHead(a *asm) {
	a.op("// d, dmin times yd; the scales and mins; the mins' term")
	a.op("VLD1.P 4(R9), V18.S[0]")
	a.op("FCVTL_4S(18, 18)")
	a.op("FMOVS.P 4(R11), F19")
	a.op("VDUP V19.S[0], V19.S4")
	a.op("FMUL_4S(18, 18, 19)")
	a.op("VDUP V18.S[1], V21.S4")
	kqNScales(a)
	a.op("VLD1.P 16(R12), [V26.H8]")
	kqNMinDot(a, 27)
	a.op("VADDV V27.S4, V27")
	a.op("SCVTF_S(27, 27)")
	a.op("FMSUBS F21, F29, F27, F29")
}

// kqNSuper: one Q4_K/Q5_K super-block of one row: the head, the four
// quarters' sub-block sums into V8-V15, then the sums times the scales
// into the float lanes V31.
func kqNSuper(a *asm, q int, sdot bool) {
	kqNHead(a)
	if q == 5 {
		a.op("VLD1.P 32(R9), %s", kqNList(20, 2))
	}
	for k := 0; k < 4; k++ {
		a.op("// quarter %d: sub-blocks %d, %d", k, 2*k, 2*k+1)
		kqNUnpack(a, q)
		kqNDots(a, sdot, "R10", 8+2*k, 9+2*k)
	}
	a.op("// the sub-block sums times the scales")
	kqNSum4(a, 8, 16, 17)
	kqNSum4(a, 12, 17, 20)
	a.op("MUL_4S(16, 16, 24)")
	a.op("MLA_4S(16, 17, 25)")
	a.op("SCVTF_4S(16, 16)")
	a.op("FMLA_S0(31, 16, 18)")
}

// kqNQ6W puts in V(w) the 16 weights q - 32 of Q6_K group g (0-7) of a
// half (128 elements): the 4 bits of V(ql) (its low nibbles for groups
// 0-3, its high ones for 4-7) OR'd with 2 bits of V(qh) moved to bits 4-5
// (V(t) scratch). With ql = V0-V3 (bytes 0-63) and qh = V4/V5 (bytes
// 0-31) of the half, group g reads ql V(g%4) and qh V(4+g%2), bits
// 2*(g/2) of qh: shifted left by 4, by 2, masked in place, or shifted
// right by 2. V28 = 0x0f, V29 = 0x30, V30 = 32 (bytes).
func kqNQ6W(a *asm, ql, qh, g, w, t int) {
	if g < 4 {
		a.op("VAND V28.B16, %s, %s", kqNB(ql), kqNB(w))
	} else {
		a.op("VUSHR $4, %s, %s", kqNB(ql), kqNB(w))
	}
	switch sh := 4 - 2*(g/2); {
	case sh > 0:
		a.op("VSHL $%d, %s, %s", sh, kqNB(qh), kqNB(t))
		a.op("VAND V29.B16, %s, %s", kqNB(t), kqNB(t))
	case sh == 0:
		a.op("VAND V29.B16, %s, %s", kqNB(qh), kqNB(t))
	default:
		a.op("VUSHR $%d, %s, %s", -sh, kqNB(qh), kqNB(t))
		a.op("VAND V29.B16, %s, %s", kqNB(t), kqNB(t))
	}
	a.op("VORR %s, %s, %s", kqNB(t), kqNB(w), kqNB(w))
	a.op("VSUB V30.B16, %s, %s", kqNB(w), kqNB(w))
}

// kqNQ6Load loads a Q6_K half's ql (V0-V3, from R9) and qh (V4/V5, from
// R13).
func kqNQ6Load(a *asm) {
	a.op("VLD1.P 64(R9), %s", kqNList(0, 4))
	a.op("VLD1.P 32(R13), %s", kqNList(4, 2))
}

// kqNQ6Head reads the 16 int8 scales of the Q6_K super-block at R9 into
// V24-V27 (groups 0-3, 4-7, 8-11, 12-15 as int32) and its d into F18.
func kqNQ6Head(a *asm) {
	a.op("FMOVQ 192(R9), F22")
	a.op("SXTL_8H(23, 22)")
	a.op("SXTL2_8H(22, 22)")
	for i, src := range []int{23, 22} {
		a.op("SXTL_4S(%d, %d)", 24+2*i, src)
		a.op("SXTL2_4S(%d, %d)", 25+2*i, src)
	}
	a.op("ADD $208, R9, R13")
	a.op("VLD1 (R13), V18.H[0]")
	a.op("FCVTHS F18, F18")
}

// kqNQ6Op is the scale step of half h and its groups k*4..k*4+3: MUL for
// the first, MLA after.
func kqNQ6Op(h, k int) string {
	if h == 0 && k == 0 {
		return "MUL_4S"
	}
	return "MLA_4S"
}

// kqNQ6Super: one Q6_K super-block of one row. R9 the weights (ql,
// advanced by the halves), R13 their qh, R10 the activation quants, R11
// their d. V18 = d*yd, V10-V17 the group sums of a half (V6/V7 weight
// and high bits, V8 activations), V20/V21 their sums by fours, V23 the
// scaled sums.
func kqNQ6Super(a *asm, sdot bool) {
	kqNQ6Head(a)
	a.op("FMOVS.P 4(R11), F19")
	a.op("FMULS F19, F18, F18")
	a.op("ADD $128, R9, R13")
	for h := 0; h < 2; h++ {
		a.op("// half %d: groups %d-%d", h, 8*h, 8*h+7)
		kqNQ6Load(a)
		for g := 0; g < 8; g++ {
			kqNQ6W(a, g%4, 4+g%2, g, 6, 7)
			a.op("VLD1.P 16(R10), [V8.B16]")
			kqNDot16(a, sdot, 10+g, 6, 8)
		}
		kqNSum4(a, 10, 20, 21)
		kqNSum4(a, 14, 21, 10)
		for k := 0; k < 2; k++ {
			a.op("%s(23, %d, %d)", kqNQ6Op(h, k), 20+k, 24+2*h+k)
		}
	}
	a.op("SCVTF_4S(23, 23)")
	a.op("FMLA_S0(31, 23, 18)")
	a.op("ADD $82, R9")
}

// kqNConsts sets the byte constants: V28 = 0x0f, and V30 = 0x10 (Q5_K)
// or V29 = 0x30, V30 = 32 (Q6_K).
func kqNConsts(a *asm, q int) {
	a.op("VMOVI $15, V28.B16")
	switch q {
	case 6:
		a.op("VMOVI $0x30, V29.B16")
		a.op("VMOVI $32, V30.B16")
	case 5:
		a.op("VMOVI $0x10, V30.B16")
	}
}

// kqNArg is an argument loaded into a register.
type kqNArg struct{ arg, reg string }

func kqNLoadArgs(a *asm, args []kqNArg) {
	for _, x := range args {
		a.op("MOVD %s(FP), %s", x.arg, x.reg)
	}
}

// kqNVec emits the one-row kernel of Q(q)_K for a tier: out[i] = row i of
// w (stride bytes apart) times x. R0 out, R1 rows left, R2 the row, R8
// super-blocks left, R6/R7 the activations' d and 32-quant sums, V31 the
// float lanes, V29 the mins' scalar (Q4_K, Q5_K).
func kqNVec(a *asm, q int, t kqNTier) {
	name := kqNQuant(q) + "Vec" + t.name
	a.raw("// %s: Q%d_K rows times one activation row, %s tier.", name, q, t.desc)
	a.raw("// func %s(out []float32, w []byte, stride, blocks int, x []byte)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-88", name)
	kqNLoadArgs(a, []kqNArg{{"out_base+0", "R0"}, {"out_len+8", "R1"}, {"w_base+24", "R2"},
		{"stride+48", "R3"}, {"blocks+56", "R4"}, {"x_base+64", "R5"}})
	a.op("ADD R4<<8, R5, R6 // the d of the super-blocks")
	if q != 6 {
		a.op("MOVD $292, R7")
		a.op("MUL R4, R7, R7")
		a.op("ADD R5, R7, R7 // their 32-quant sums")
	}
	kqNConsts(a, q)
	a.raw("")
	a.label("row")
	a.op("MOVD R2, R9")
	a.op("MOVD R5, R10")
	a.op("MOVD R6, R11")
	if q != 6 {
		a.op("MOVD R7, R12")
	}
	a.op("MOVD R4, R8")
	a.op("MOVI0(31)")
	if q != 6 {
		a.op("MOVI0(29)")
	}
	a.raw("")
	a.label("super")
	if q == 6 {
		kqNQ6Super(a, t.sdot)
	} else {
		kqNSuper(a, q, t.sdot)
	}
	a.op("SUBS $1, R8")
	a.op("BNE super")
	a.raw("")
	a.op("HSUM4(31)")
	if q != 6 {
		a.op("FADDS F29, F31, F31")
	}
	a.op("FMOVS.P F31, 4(R0)")
	a.op("ADD R3, R2")
	a.op("SUBS $1, R1")
	a.op("BNE row")
	a.op("RET")
	a.raw("")
}

// The four activation rows of the 4-row kernels: their quants' pointers
// (post-incremented), and the registers holding r times xstride (row 0
// reads through post-incremented pointers instead).
var (
	kqN4X   = []string{"R10", "R11", "R12", "R22"}
	kqN4Off = []string{"", "R7", "R8", "R25"}
)

// kqN4Each emits f for rows 1-3 then 0 of a per-super-block array at
// base (row 0's pointer, advanced by step): ld is the load's mnemonic
// and address, through R13 for rows 1-3.
func kqN4Each(a *asm, base string, step int, f func(r int, ld string)) {
	for r := 1; r < 4; r++ {
		a.op("ADD %s, %s, R13", kqN4Off[r], base)
		f(r, "VLD1 (R13)")
	}
	f(0, fmt.Sprintf("VLD1.P %d(%s)", step, base))
}

// kqN4Yd loads the four rows' activation d (at R23) into the lanes of
// V(v).
func kqN4Yd(a *asm, v int) {
	kqN4Each(a, "R23", 4, func(r int, ld string) { a.op("%s, V%d.S[%d]", ld, v, r) })
}

// kqN4Head: as kqNHead for four activation rows: V18 lane r = d*yd_r,
// V21 lane r = dmin*yd_r, and lane r of V11 less row r's mins' term
// (the products with each row's 32-quant sums at R24 in V0-V3, summed
// by kqNSum4; FMLS per lane rounds like FMSUB).
func kqN4Head(a *asm) {
	a.op("// d, dmin times each row's yd; the scales and mins; the mins' terms")
	a.op("VLD1.P 4(R9), V18.S[0]")
	a.op("FCVTL_4S(18, 18)")
	a.op("VDUP V18.S[1], V21.S4")
	a.op("VDUP V18.S[0], V18.S4")
	kqN4Yd(a, 19)
	a.op("FMUL_4S(18, 18, 19)")
	a.op("FMUL_4S(21, 21, 19)")
	kqNScales(a)
	kqN4Each(a, "R24", 16, func(r int, ld string) {
		a.op("%s, [V26.H8]", ld)
		kqNMinDot(a, r)
	})
	kqNSum4(a, 0, 0, 2)
	a.op("SCVTF_4S(0, 0)")
	a.op("VFMLS V21.S4, V0.S4, V11.S4")
}

// kqN4Tail adds the scaled integer sums V(i[r]) of rows 0-3 to their
// float lanes V12-V15 with lane r of V18.
func kqN4Tail(a *asm, i [4]int) {
	for r, v := range i {
		a.op("SCVTF_4S(%d, %d)", v, v)
		if r == 0 {
			a.op("FMLA_S0(%d, %d, 18)", 12+r, v)
		} else {
			a.op("FMLA_SI(%d, %d, 18, %d)", 12+r, v, r)
		}
	}
}

// kqN4Super: one Q4_K/Q5_K super-block times four rows. Each quarter is
// unpacked once and multiplied by the four rows in turn: a row's sums of
// the quarter's two sub-blocks go to V8/V9; after an even quarter their
// pair sums are kept (V23, V27, V29, V31 for rows 0-3), after an odd one
// they complete the four sub-block sums, multiplied by the scales V24
// (quarter 1, MUL) or V25 (quarter 3, MLA) into V16, V17, V19, V10.
func kqN4Super(a *asm, q int, sdot bool) {
	pair := []int{23, 27, 29, 31}
	scaled := [4]int{16, 17, 19, 10}
	kqN4Head(a)
	if q == 5 {
		a.op("VLD1.P 32(R9), %s", kqNList(20, 2))
	}
	for k := 0; k < 4; k++ {
		a.op("// quarter %d: sub-blocks %d, %d of each row", k, 2*k, 2*k+1)
		kqNUnpack(a, q)
		for r, x := range kqN4X {
			kqNDots(a, sdot, x, 8, 9)
			if k%2 == 0 {
				a.op("VADDP V9.S4, V8.S4, V%d.S4", pair[r])
				continue
			}
			a.op("VADDP V9.S4, V8.S4, V8.S4")
			a.op("VADDP V8.S4, V%d.S4, V8.S4", pair[r])
			op := "MLA_4S"
			if k == 1 {
				op = "MUL_4S"
			}
			a.op("%s(%d, 8, %d)", op, scaled[r], 24+k/2)
		}
	}
	kqN4Tail(a, scaled)
}

// kqN4Q6Super: one Q6_K super-block times four rows. Per half, V0-V3
// hold ql and V4/V5 qh; groups 0-3, then 4-7, are unpacked into V6-V9
// (V31 scratch) and multiplied by each row (activations V10, group sums
// V11, V20, V21, reduced in V11), giving the four groups' sums times
// their scales into V16, V17, V19, V23 for rows 0-3. V18 lane r =
// d*yd_r.
func kqN4Q6Super(a *asm, sdot bool) {
	scaled := [4]int{16, 17, 19, 23}
	kqNQ6Head(a)
	a.op("VDUP V18.S[0], V18.S4")
	kqN4Yd(a, 31)
	a.op("FMUL_4S(18, 18, 31)")
	a.op("ADD $128, R9, R13")
	for h := 0; h < 2; h++ {
		kqNQ6Load(a)
		for k := 0; k < 2; k++ {
			a.op("// half %d, groups %d-%d, each row", h, 8*h+4*k, 8*h+4*k+3)
			for g := 4 * k; g < 4*k+4; g++ {
				kqNQ6W(a, g%4, 4+g%2, g, 6+g%4, 31)
			}
			for r, x := range kqN4X {
				for j, d := range []int{11, 20, 20, 21} {
					a.op("VLD1.P 16(%s), [V10.B16]", x)
					kqNDot16(a, sdot, d, 6+j, 10)
					switch j {
					case 1:
						a.op("VADDP V20.S4, V11.S4, V11.S4")
					case 3:
						a.op("VADDP V21.S4, V20.S4, V20.S4")
						a.op("VADDP V20.S4, V11.S4, V11.S4")
					}
				}
				a.op("%s(%d, 11, %d)", kqNQ6Op(h, k), scaled[r], 24+2*h+k)
			}
		}
	}
	kqN4Tail(a, scaled)
	a.op("ADD $82, R9")
}

// kqN4Vec emits the 4-row kernel of Q(q)_K for a tier: one weight row
// times four activation rows (xstride bytes apart), rows weight rows,
// row r's result to out[r*ostride]. The float steps per activation row
// are those of the one-row kernels (the same products in the same lanes,
// the same FMAs, the same final sum), so the results are bit-identical;
// the integer sums are only regrouped, which is exact.
//
// Registers: R0 out, R1 ostride (in bytes), R2 the weight row, R3 its
// stride, R4 rows left, R5 blocks, R6 super-blocks left, R9 the weights,
// R10-R12/R22 the activation quants of rows 0-3, R23/R24 row 0's d and
// 32-quant sums (rows 1-3 at R7, R8, R25 = 1, 2, 3 times xstride
// further), V12-V15 the float lanes of rows 0-3, V11 the rows' mins'
// scalars (Q4_K, Q5_K).
func kqN4Vec(a *asm, q int, t kqNTier) {
	name := kqNQuant(q) + "Vec4" + t.name
	a.raw("// %s: Q%d_K rows times four activation rows, %s tier.", name, q, t.desc)
	a.raw("// func %s(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-112", name)
	kqNLoadArgs(a, []kqNArg{{"out_base+0", "R0"}, {"ostride+24", "R1"}, {"w_base+32", "R2"},
		{"stride+56", "R3"}, {"rows+64", "R4"}, {"blocks+72", "R5"}, {"x_base+80", "R10"},
		{"xstride+104", "R7"}})
	a.op("LSL $2, R1")
	a.op("ADD R7, R7, R8")
	a.op("ADD R7, R8, R25")
	for r := 1; r < 4; r++ {
		a.op("ADD %s, R10, %s", kqN4Off[r], kqN4X[r])
	}
	a.op("ADD R5<<8, R10, R23")
	if q != 6 {
		a.op("MOVD $292, R24")
		a.op("MUL R5, R24, R24")
		a.op("ADD R10, R24, R24")
	}
	kqNConsts(a, q)
	a.label("row")
	a.op("MOVD R2, R9")
	a.op("MOVD R5, R6")
	first := 12
	if q != 6 {
		first = 11
	}
	for i := first; i < 16; i++ {
		a.op("MOVI0(%d)", i)
	}
	a.label("super")
	if q == 6 {
		kqN4Q6Super(a, t.sdot)
	} else {
		kqN4Super(a, q, t.sdot)
	}
	a.op("SUBS $1, R6")
	a.op("BNE super")
	a.op("// row r's result ((a0+a1)+(a2+a3)) (+ lane r of V11) to out[r*ostride]")
	for r := 0; r < 4; r++ {
		f := 12 + r
		a.op("HSUM4(%d)", f)
		if q != 6 {
			a.op("VDUP V11.S[%d], V26.S4", r)
			a.op("FADDS F26, F%d, F%d", f, f)
		}
		switch r {
		case 0:
			a.op("FMOVS F%d, (R0)", f)
			continue
		case 1:
			a.op("ADD R1, R0, R13")
		default:
			a.op("ADD R1, R13, R13")
		}
		a.op("FMOVS F%d, (R13)", f)
	}
	a.op("ADD $4, R0")
	a.op("// the next weight row, from the activations' start")
	for _, x := range kqN4X {
		a.op("SUB R5<<8, %s", x)
	}
	a.op("SUB R5<<2, R23")
	if q != 6 {
		a.op("SUB R5<<4, R24")
	}
	a.op("ADD R3, R2")
	a.op("SUBS $1, R4")
	a.op("BNE row")
	a.op("RET")
	a.raw("")
}

// kqNFile writes the one-row kernels (per tier, Q4_K, Q5_K, Q6_K), then
// the 4-row ones (per type, the neon then the dotprod tier).
func kqNFile() *asm {
	a := &asm{}
	a.b.WriteString(neonHeader)
	a.raw("")
	a.raw("// Q4_K, Q5_K and Q6_K weights times activations in the q8ka layout (see")
	a.raw("// actlayout.go), for the neon (widening multiplies) and dotprod (SDOT)")
	a.raw("// tiers. Per super-block the integer sums of the sub-blocks are reduced to")
	a.raw("// vectors of four, multiplied by the sub-block scales, and added to float")
	a.raw("// lanes with acc += (d*yd) * float(lanes); the mins of Q4_K and Q5_K enter")
	a.raw("// a scalar m -= (dmin*yd) * float(sum of m_j times the 32-quant sums). A")
	a.raw("// row's result is ((a0+a1)+(a2+a3)) (+ m). See kernels/_gen/kquantneon.go.")
	a.raw("")
	for _, t := range kqNTiers {
		for q := 4; q <= 6; q++ {
			kqNVec(a, q, t)
		}
	}
	a.raw("// The 4-row kernels: one weight row times four activation rows, each")
	a.raw("// quarter (Q4_K, Q5_K) or group of 4 (Q6_K) unpacked once; bit-identical")
	a.raw("// to the one-row kernels per activation row.")
	a.raw("")
	for q := 4; q <= 6; q++ {
		for _, t := range kqNTiers {
			kqN4Vec(a, q, t)
		}
	}
	return a
}
