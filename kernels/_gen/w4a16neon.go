package main

import (
	"fmt"
	"strings"
)

func init() { files["w4a16_neon_arm64.s"] = w4xNEONFile }

// w4xNEONFile writes kernels/w4a16_neon_arm64.s: W4A16 weights
// (tensor.W4A16: per 128-group an fp16 d and 64 bytes of nibbles in Q4_0
// order) times float32 activations, one activation row, one weight row at
// a time.
//
// For each group, four 4-lane accumulators V16-V19 start at zero and
// take the 16-element halves of each 32-element sub-block in turn (the
// low nibbles are elements 0-15, the high ones 16-31), chunk k (4
// elements) of a half by V(16+k) = FMLA(w, x); the values q-8 are
// widened exactly (SXTL to 16 then 32 bits, SCVTF), so the products are
// exact. At the group's end V24 += ((V16+V18)+(V17+V19)) * d (d the fp16
// group scale, widened into V20); a row's result is HSUM4(V24). V28 = 15
// and V29 = 8 (bytes) unpack the nibbles.
func w4xNEONFile() *asm {
	a := &asm{}
	a.b.WriteString(neonHeader)
	a.raw(`
// W4A16 weights (per 128-group an fp16 d and 64 bytes of nibbles in Q4_0
// order) times float32 activations, one activation row. Per group, V16-V19
// take chunk k (4 elements) of each 16-element half of the sub-blocks as
// V(16+k) = FMLA(q-8, x), q-8 widened exactly; then V24 +=
// ((V16+V18)+(V17+V19)) * d; a row's result is HSUM4(V24). V28 = 15 and
// V29 = 8 (bytes) unpack the nibbles.
`)
	a.raw("// W4HALF: the 16 int8 values in V(B) times 16 activations at R10")
	a.raw("// (advanced) into V16-V19.")
	w4xNEONHalf(a)
	a.raw("")
	a.raw("// W4SUB: the next sub-block at R9 (advanced): V0 = low nibbles - 8")
	a.raw("// (elements 0-15), V1 = high nibbles - 8 (16-31).")
	sub := []string{"VLD1.P 16(R9), [V0.B16]"}
	sub = append(sub, w4xNibbles(0, 1)...)
	w4xDefine(a, "W4SUB", append(sub, "W4HALF(0)", "W4HALF(1)")...)
	a.raw("")
	w4xVecNEON(a)
	return a
}

// w4xNibbles unpacks the 16 bytes of V(lo) into their low nibbles - 8
// (in V(lo)) and high nibbles - 8 (in V(hi)), given V28 = 15 and V29 = 8
// (bytes).
func w4xNibbles(lo, hi int) []string {
	return []string{
		fmt.Sprintf("VUSHR $4, V%d.B16, V%d.B16", lo, hi),
		fmt.Sprintf("VAND V28.B16, V%d.B16, V%d.B16", lo, lo),
		fmt.Sprintf("VSUB V29.B16, V%d.B16, V%d.B16", lo, lo),
		fmt.Sprintf("VSUB V29.B16, V%d.B16, V%d.B16", hi, hi),
	}
}

// w4xNEONHalf defines W4HALF(B): the 16 bytes of V(B) sign-extended to
// 16 bits (V2 elements 0-7, V3 8-15), then to 32 bits and to float (V6-V9
// the four chunks), times the next 16 activations (V10-V13) into V16-V19.
func w4xNEONHalf(a *asm) {
	var ext, cvt, fma []string
	for c := 0; c < 4; c++ {
		src := 2 + c/2
		op := "SXTL_4S"
		if c%2 == 1 {
			op = "SXTL2_4S"
		}
		ext = append(ext, fmt.Sprintf("%s(%d, %d)", op, 6+c, src))
		cvt = append(cvt, fmt.Sprintf("SCVTF_4S(%d, %d)", 6+c, 6+c))
		fma = append(fma, fmt.Sprintf("VFMLA V%d.S4, V%d.S4, V%d.S4", 6+c, 10+c, 16+c))
	}
	lines := []string{
		"SXTL_8H(2, B); SXTL2_8H(3, B)",
		strings.Join(ext, "; "),
		strings.Join(cvt, "; "),
		"VLD1.P 64(R10), [V10.S4, V11.S4, V12.S4, V13.S4]",
	}
	w4xDefine(a, "W4HALF(B)", append(lines, fma...)...)
}

// w4xVecNEON emits w4a16VecNEON: R2 the weight row (stride R3), R5 the
// activations, R4 groups, R1 rows left; per row R9/R10 walk the weights
// and activations, R12 counts the groups.
func w4xVecNEON(a *asm) {
	a.raw("// func w4a16VecNEON(out []float32, w []byte, stride, groups int, x []float32)")
	a.raw("TEXT ·w4a16VecNEON(SB), NOSPLIT, $0-88")
	a.op("MOVD out_base+0(FP), R0")
	a.op("MOVD out_len+8(FP), R1")
	a.op("MOVD w_base+24(FP), R2")
	a.op("MOVD stride+48(FP), R3")
	a.op("MOVD groups+56(FP), R4")
	a.op("MOVD x_base+64(FP), R5")
	a.op("VMOVI $15, V28.B16")
	a.op("VMOVI $8, V29.B16")
	a.raw("")
	a.label("row")
	a.op("MOVD R2, R9")
	a.op("MOVD R5, R10")
	a.op("MOVD R4, R12")
	a.op("MOVI0(24)")
	a.raw("")
	a.label("group")
	for k := 0; k < 4; k++ {
		a.op("MOVI0(%d)", 16+k)
	}
	a.op("VLD1.P 2(R9), V20.H[0]")
	a.op("FCVTHS F20, F20")
	for s := 0; s < 4; s++ {
		a.op("W4SUB")
	}
	// V24 += ((V16+V18)+(V17+V19)) * d.
	a.op("FADD_4S(16, 16, 18)")
	a.op("FADD_4S(17, 17, 19)")
	a.op("FADD_4S(16, 16, 17)")
	a.op("FMLA_S0(24, 16, 20)")
	a.op("SUBS $1, R12")
	a.op("BNE group")
	a.raw("")
	a.op("HSUM4(24)")
	a.op("FMOVS.P F24, 4(R0)")
	a.op("ADD R3, R2")
	a.op("SUBS $1, R1")
	a.op("BNE row")
	a.op("RET")
}
