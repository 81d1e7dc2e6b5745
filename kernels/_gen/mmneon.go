package main

import (
	"fmt"
	"strings"
)

func init() { files["mm_neon_arm64.s"] = w4xMMFile }

// The activation rows of the SMMLA kernels: the row starts (set once),
// the quant pointers and the d pointers (set per weight row pair; R18 is
// the platform register, hence R19). Rows 2q and 2q+1 form pair q.
var (
	w4xMMRow   = [4]int{8, 11, 12, 13}
	w4xMMQuant = [4]int{15, 16, 17, 19}
	w4xMMD     = [4]int{20, 21, 22, 23}
)

// w4xJoin joins formatted instructions into one macro line.
func w4xJoin(n int, f func(i int) string) string {
	s := make([]string, n)
	for i := range s {
		s[i] = f(i)
	}
	return strings.Join(s, "; ")
}

// w4xZip interleaves the 64-bit halves of two rows' 16 bytes, V(ra) and
// V(rb): V(d) = (ra low, rb low), V(d+1) = (ra high, rb high), the 2x8
// operand layout of SMMLA.
func w4xZip(ra, rb, d int) string {
	return fmt.Sprintf("VZIP1 V%d.D2, V%d.D2, V%d.D2; VZIP2 V%d.D2, V%d.D2, V%d.D2", rb, ra, d, rb, ra, d+1)
}

// w4xMMFile writes kernels/mm_neon_arm64.s: Q8_0 and Q4_0 weights times
// four activation rows (q8a layout) with SMMLA, for the i8mm tier: two
// weight rows by two activation rows per 2x2 int32 tile, lanes (w0,x0)
// (w0,x1) (w1,x0) (w1,x1).
//
// Each output still gets exactly the float sequence of
// q8a_neon_arm64.s: block b's exact sum times (dw*dx) FMA'd into
// accumulator b%4, tail blocks (blocks%4 of them) into a fifth, then
// ((a0+a1)+(a2+a3)) + tail, so the results are bit-identical to the
// dotprod one-row kernels'. rows must be even (the Go wrapper runs an odd
// last row with the dotprod kernel).
//
// Registers: V0-V3 the two weight rows' block (Q4_0 unpacked to q-8),
// V4-V7 its four 8-element chunks of both rows (ZIP1/ZIP2 .2D), V8-V11 two
// activation rows' block, V12-V15 their chunks, V16 the int tile, V17 the
// weight scales (dw0 dw0 dw1 dw1), V18 activation d (dx0 dx1 dx0 dx1), V19
// their product, V20-V23 and V24-V27 the block-lane accumulators of
// activation rows 0-1 and 2-3, V30/V31 their tails, V28/V29 Q4_0's 0x0f
// and 8. The kernel is one macro, MMBODY(LOADW), instantiated per block
// type with the loader of its weights.
func w4xMMFile() *asm {
	a := &asm{}
	a.b.WriteString(neonHeader)
	a.raw(`
// Q8_0 and Q4_0 weights times four activation rows (q8a layout) with
// SMMLA (i8mm): 2 weight rows x 2 activation rows per 2x2 int32 tile, lanes
// (w0,x0) (w0,x1) (w1,x0) (w1,x1). Each output gets the float sequence of
// q8a_neon_arm64.s (block b into accumulator b%4, tail blocks into a
// fifth, then ((a0+a1)+(a2+a3)) + tail): bit-identical to the dotprod
// kernels. rows must be even.
//
// Registers: V0-V3 the weight rows' block, V4-V7 its zipped chunks, V8-V11
// two activation rows' block, V12-V15 their chunks, V16 the int tile, V17
// dw (dw0 dw0 dw1 dw1), V18 dx (dx0 dx1 dx0 dx1), V19 their product,
// V20-V27 the accumulators of activation rows 0-1 and 2-3, V30/V31 their
// tails, V28/V29 Q4_0's 0x0f and 8.
`)
	w4xMMLoad(a, "LOADW_Q8", false)
	a.raw("")
	w4xMMLoad(a, "LOADW_Q4", true)
	a.raw("")
	a.raw("// WPREP: the loaded block's scales widened and paired, its chunks zipped.")
	w4xDefine(a, "WPREP",
		"FCVTL_4S(17, 17); VZIP1 V17.S4, V17.S4, V17.S4",
		w4xZip(0, 2, 4),
		w4xZip(1, 3, 6))
	a.raw("")
	w4xMMPair(a)
	a.raw("")
	pairs := make([]string, 2)
	for q := range pairs {
		r := 2 * q
		pairs[q] = fmt.Sprintf("PAIR(R%d, R%d, R%d, R%d, ACC%c)",
			w4xMMQuant[r], w4xMMQuant[r+1], w4xMMD[r], w4xMMD[r+1], 'A'+q)
	}
	w4xDefine(a, "BLOCK(LOADW, ACCA, ACCB)", append([]string{"LOADW; WPREP"}, pairs...)...)
	a.raw("")
	a.raw("// FINISH: tile accumulators A0-A3 and tail T reduced into V0, whose")
	a.raw("// lanes (w0,xa) (w0,xb) (w1,xa) (w1,xb) are stored as (w0,w1) at OA and")
	a.raw("// OB.")
	w4xDefine(a, "FINISH(A0, A1, A2, A3, T, OA, OB)",
		"FADD_4S(A0, A0, A1); FADD_4S(A2, A2, A3); FADD_4S(A0, A0, A2); FADD_4S(0, A0, T)",
		"VUZP1 V0.S4, V0.S4, V1.S4; VUZP2 V0.S4, V0.S4, V2.S4",
		"FMOVD F1, (OA); FMOVD F2, (OB)")
	a.raw("")
	w4xMMBody(a)
	for _, k := range []string{"q8_0", "q4_0"} {
		a.raw("")
		a.raw("// func %sVec4MM(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)", k)
		a.raw("TEXT ·%sVec4MM(SB), NOSPLIT, $0-112", k)
		a.op("MMBODY(LOADW_%s)", strings.ToUpper(k[:2]))
	}
	return a
}

// w4xMMLoad defines the weight loader of one block type: per weight row
// (R9, R10, advanced) its fp16 d into V17.H[row] and its 32 values into
// V0/V1 (row 0) or V2/V3 (row 1). Q8_0 blocks hold the 32 int8 values;
// Q4_0 blocks hold 16 bytes of nibbles (low nibbles the values 0-15, high
// 16-31), unpacked to q-8 once both rows are loaded.
func w4xMMLoad(a *asm, name string, q4 bool) {
	var lines []string
	for r := 0; r < 2; r++ {
		ld := fmt.Sprintf("VLD1.P 32(R%d), [V%d.B16, V%d.B16]", 9+r, 2*r, 2*r+1)
		if q4 {
			ld = fmt.Sprintf("VLD1.P 16(R%d), [V%d.B16]", 9+r, 2*r)
		}
		lines = append(lines, fmt.Sprintf("VLD1.P 2(R%d), V17.H[%d]; %s", 9+r, r, ld))
	}
	if q4 {
		for r := 0; r < 2; r++ {
			lines = append(lines, strings.Join(w4xNibbles(2*r, 2*r+1), "; "))
		}
	}
	w4xDefine(a, name, lines...)
}

// w4xMMPair defines PAIR: the zipped weight block (V4-V7) times two
// activation rows' block, four SMMLAs (one per 8-element chunk) into a
// fresh int tile, converted to float and scaled by dw*dx per lane, then
// FMA'd into the accumulator.
func w4xMMPair(a *asm) {
	a.raw("// PAIR: the block times activation rows at XA, XB (quants) and DA, DB")
	a.raw("// (float d), all advanced, FMA'd into ACC.")
	w4xDefine(a, "PAIR(XA, XB, DA, DB, ACC)",
		"VLD1.P 32(XA), [V8.B16, V9.B16]; VLD1.P 32(XB), [V10.B16, V11.B16]",
		w4xZip(8, 10, 12),
		w4xZip(9, 11, 14),
		"MOVI0(16); "+w4xJoin(4, func(c int) string { return fmt.Sprintf("SMMLA_4S(16, %d, %d)", 4+c, 12+c) }),
		"SCVTF_4S(16, 16)",
		"VLD1.P 4(DA), V18.S[0]; VLD1.P 4(DB), V18.S[1]; VDUP V18.D[0], V18.D2",
		"FMUL_4S(19, 17, 18)",
		"VFMLA V16.S4, V19.S4, ACC.S4")
}

// w4xMMBody defines MMBODY(LOADW), the kernel for one block type.
// Registers: R0 out (row r at R0 + r*R1, R1 = ostride in bytes; the rows
// 1-3 at R24-R26 when stored), R2 the weight row pair (R9, R10 its two
// rows, stride R3), R4 rows left, R5 blocks, R6 = blocks/4 (the groups of
// four blocks, counted in R14), R7 = blocks%4 (the tail blocks), the
// activation rows as in w4xMMRow, w4xMMQuant and w4xMMD (a q8a row's
// float d start 64 bytes a block on: after its quants and Q4_0's pair
// sums).
func w4xMMBody(a *asm) {
	l := []string{
		"MOVD out_base+0(FP), R0",
		"MOVD ostride+24(FP), R1",
		"LSL $2, R1",
		"MOVD w_base+32(FP), R2",
		"MOVD stride+56(FP), R3",
		"MOVD rows+64(FP), R4",
		"MOVD blocks+72(FP), R5",
		fmt.Sprintf("MOVD x_base+80(FP), R%d", w4xMMRow[0]),
		"MOVD xstride+104(FP), R7",
	}
	for r := 1; r < 4; r++ {
		l = append(l, fmt.Sprintf("ADD R7, R%d, R%d", w4xMMRow[r-1], w4xMMRow[r]))
	}
	l = append(l,
		"LSR $2, R5, R6",
		"AND $3, R5, R7",
		"VMOVI $15, V28.B16",
		"VMOVI $8, V29.B16",
		"row:",
		"MOVD R2, R9",
		"ADD R3, R2, R10")
	for r := 0; r < 4; r++ {
		l = append(l, fmt.Sprintf("MOVD R%d, R%d", w4xMMRow[r], w4xMMQuant[r]))
	}
	for r := 0; r < 4; r++ {
		l = append(l, fmt.Sprintf("ADD R5<<6, R%d, R%d", w4xMMRow[r], w4xMMD[r]))
	}
	for q := 0; q < 2; q++ {
		l = append(l, w4xJoin(4, func(i int) string { return fmt.Sprintf("MOVI0(%d)", 20+4*q+i) }))
	}
	l = append(l, w4xJoin(2, func(q int) string { return fmt.Sprintf("MOVI0(%d)", 30+q) }))
	// Groups of four blocks, block i of a group into lane accumulator i.
	l = append(l, "CBZ R6, tail", "MOVD R6, R14", "group:")
	for i := 0; i < 4; i++ {
		l = append(l, fmt.Sprintf("BLOCK(LOADW, V%d, V%d)", 20+i, 24+i))
	}
	l = append(l, "SUBS $1, R14", "BNE group")
	// The tail blocks into V30/V31.
	l = append(l, "tail:", "CBZ R7, done", "MOVD R7, R14", "tail1:",
		"BLOCK(LOADW, V30, V31)", "SUBS $1, R14", "BNE tail1", "done:")
	// Output row r at out(r): R0, then R24-R26 computed as needed.
	out := func(r int) string {
		if r == 0 {
			return "R0"
		}
		return fmt.Sprintf("R%d", 23+r)
	}
	for q := 0; q < 2; q++ {
		for r := 2 * q; r < 2*q+2; r++ {
			if r > 0 {
				l = append(l, fmt.Sprintf("ADD R1, %s, %s", out(r-1), out(r)))
			}
		}
		l = append(l, fmt.Sprintf("FINISH(%d, %d, %d, %d, %d, %s, %s)",
			20+4*q, 21+4*q, 22+4*q, 23+4*q, 30+q, out(2*q), out(2*q+1)))
	}
	l = append(l, "ADD $8, R0", "ADD R3<<1, R2", "SUBS $2, R4", "BNE row", "RET")
	a.raw("// MMBODY is the kernel for one block type:")
	a.raw("// func(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)")
	w4xDefine(a, "MMBODY(LOADW)", l...)
}
