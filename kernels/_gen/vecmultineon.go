package main

import "fmt"

// The arm64 NEON attention kernels for four query rows at once (the
// query heads that share a KV head): kernels/vecmulti_arm64.s with
// float32 keys and values, kernels/vecmulti16_arm64.s with f16 ones.
// Each row's results are bit-identical to the one-row kernels of
// vec_arm64.s (vecneon.go): only the loads of keys and values are shared
// between rows, never a sum. The f16 forms widen the halves to float32
// with FCVTL/FCVTL2 (exact) as they are loaded and then sum exactly as
// the float32 forms, so each result is the float32 kernel's on the
// widened rows.

func init() {
	files["vecmulti_arm64.s"] = func() *asm { return vecNMultiFile(vecNMultiF32) }
	files["vecmulti16_arm64.s"] = func() *asm { return vecNMultiFile(vecNMultiF16) }
}

// vecNMulti is one form of the four-row kernels: the element type of the
// keys and values, the kernels' names and their labels (as the
// hand-written files had them).
type vecNMulti struct {
	f16       bool
	dot, axpy string // TEXT symbols
	dl        string // dot labels: dl+"pair", "step", "end"
	xl, xend  string // axpy labels: xl+"chunk", "row"; the end
	// The comments of the file and of the two kernels in the output.
	preamble, dotDoc, axpyDoc []string
}

var vecNMultiF32 = vecNMulti{
	dot: "dot4Rows", axpy: "axpy4Rows", dl: "m", xl: "x", xend: "xend",
	preamble: []string{
		"// Attention kernels for four query rows at once (the query heads that",
		"// share a KV head). Each row's results are bit-identical to the one-row",
		"// kernels of vec_arm64.s: only the loads of keys and values are shared",
		"// between rows, never a sum.",
	},
	dotDoc: []string{
		"// For query rows j < 4 (8*steps floats) and key rows i < 2*pairs:",
		"// out[j*ostride+i] = vecDotNEON(q_j, k_i) * scale. A pair of keys is",
		"// read in one pass, prefetching the same bytes of the matching rows of",
		"// next.",
	},
	axpyDoc: []string{
		"// For output rows j < 4 and 16-float chunks of the values: y_j =",
		"// fma(p[j*pstride+i], v_i, y_j) for i < n in order, as axpyRowsNEON.",
		"// The four rows' chunk stays in V16-V31 while the value rows pass (V0-V3,",
		"// loaded once for four rows); each row prefetches the same 64 bytes of",
		"// next's row.",
	},
}

var vecNMultiF16 = vecNMulti{
	f16: true, dot: "dot4RowsF16", axpy: "axpy4RowsF16", dl: "h", xl: "h", xend: "hxend",
	preamble: []string{
		"// The f16-KV forms of vecmulti_arm64.s: halves are widened to float32",
		"// (exact) as they are loaded, then summed exactly as the float32 kernels",
		"// sum, so each result is bit-identical to the float32 kernel on the",
		"// widened rows.",
	},
	dotDoc: []string{
		"// dot4Rows with keys (and next) as halves, kstride halves apart,",
		"// widened by FCVTL/FCVTL2 (exact) from V13/V14 into V0-V3: the same sums.",
	},
	axpyDoc: []string{
		"// axpy4Rows with values (and next) as halves, vstride halves apart,",
		"// widened by FCVTL/FCVTL2 (exact) from V12/V13 into V0-V3.",
	},
}

// shift is log2 of the size of a key or value element in bytes, eb the
// size.
func (m vecNMulti) shift() int {
	if m.f16 {
		return 1
	}
	return 2
}

func (m vecNMulti) eb() int { return 1 << m.shift() }

// kv is the Go type of the keys and values.
func (m vecNMulti) kv() string {
	if m.f16 {
		return "[]uint16"
	}
	return "[]float32"
}

// vecNWiden returns the FCVTL/FCVTL2 pairs that widen the eight halves
// of each register src[i] into the floats V(dst+2i) (low four) and
// V(dst+2i+1) (high four).
func vecNWiden(dst int, src ...int) []string {
	var s []string
	for i, r := range src {
		s = append(s, fmt.Sprintf("FCVTL_4S(%d, %d)", dst+2*i, r),
			fmt.Sprintf("FCVTL2_4S(%d, %d)", dst+2*i+1, r))
	}
	return s
}

// vecNMultiFile writes the four-row kernels of form m (and, for f16, the
// f16 to float32 widening loop).
func vecNMultiFile(m vecNMulti) *asm {
	a := &asm{}
	a.b.WriteString(neonHeader)
	a.raw("")
	for _, s := range m.preamble {
		a.raw("%s", s)
	}
	a.raw("")
	vecNDot4Rows(a, m)
	vecNAxpy4Rows(a, m)
	if m.f16 {
		vecNF16ToF32(a)
	}
	return a
}

// vecNDot4Rows emits dot4Rows (dot4RowsF16): for query rows j < 4 (8*steps
// floats) and key rows i < 2*pairs, out[j*ostride+i] = vecDotNEON(q_j,
// k_i) * scale. A pair of keys is read in one pass.
//
// Registers: R10-R13 the four query rows (R3 = qstride bytes apart),
// R14/R15 the pair of key rows (R5 = kstride bytes apart), R20/R21 the
// same rows of next, prefetched as many bytes a step as the keys take
// (32, 16 for halves), R22 the steps left, R6 the pairs left, R0 out at
// the pair (R1 = ostride bytes), V12 the broadcast scale. V0-V3 hold the
// two keys' 8 floats (key c in V2c, V2c+1; the f16 form loads the halves
// into V13/V14 and widens them), V4-V11 the four queries' (query j in
// V4+2j, V5+2j); the accumulator pair of (query j, key c) is V(16+4j+2c),
// V(17+4j+2c). After the steps the pairs are added and each half of the
// accumulators (V16-V23: queries 0 and 1, V24-V31: 2 and 3) reduced with
// vecNFaddpTree, which leaves lanes (q0,k0) (q0,k1) (q1,k0) (q1,k1) in
// V16 and the same of q2, q3 in V24: each a 64-bit pair of outputs,
// stored to the four out rows.
func vecNDot4Rows(a *asm, m vecNMulti) {
	l := func(s string) string { return m.dl + s }
	a.raw("// func %s(out []float32, ostride int, q []float32, qstride int, k %s, kstride, pairs, steps int, scale float32, next %s)", m.dot, m.kv(), m.kv())
	for _, s := range m.dotDoc {
		a.raw("%s", s)
	}
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-144", m.dot)
	a.op("MOVD out_base+0(FP), R0")
	a.op("MOVD ostride+24(FP), R1")
	a.op("LSL $2, R1")
	a.op("MOVD q_base+32(FP), R2")
	a.op("MOVD qstride+56(FP), R3")
	a.op("LSL $2, R3")
	a.op("MOVD k_base+64(FP), R4")
	a.op("MOVD kstride+88(FP), R5")
	a.op("LSL $%d, R5", m.shift())
	a.op("MOVD pairs+96(FP), R6")
	a.op("MOVD steps+104(FP), R7")
	a.op("FMOVS scale+112(FP), F12")
	a.op("VDUP V12.S[0], V12.S4")
	a.op("MOVD next_base+120(FP), R19")
	a.op("CBZ R6, %s", l("end"))
	a.label(l("pair"))
	vecNRowPtrs(a, "R2", "R3", 10, 11, 12, 13)
	vecNRowPtrs(a, "R4", "R5", 14, 15)
	vecNRowPtrs(a, "R19", "R5", 20, 21)
	a.op("MOVD R7, R22")
	vecNZero(a, 16, 16)
	a.label(l("step"))
	for c := 0; c < 2; c++ {
		a.op("PRFM (R%d), PLDL1KEEP", 20+c)
	}
	for c := 0; c < 2; c++ {
		a.op("ADD $%d, R%d", 8*m.eb(), 20+c)
	}
	if m.f16 {
		for c := 0; c < 2; c++ {
			a.op("VLD1.P 16(R%d), %s", 14+c, vecNList(13+c, 1, "H8"))
		}
		for _, s := range vecNWiden(0, 13, 14) {
			a.op("%s", s)
		}
	} else {
		for c := 0; c < 2; c++ {
			a.op("VLD1.P 32(R%d), %s", 14+c, vecNList(2*c, 2, "S4"))
		}
	}
	for j := 0; j < 4; j++ {
		a.op("VLD1.P 32(R%d), %s", 10+j, vecNList(4+2*j, 2, "S4"))
	}
	for j := 0; j < 4; j++ {
		for c := 0; c < 2; c++ {
			for h := 0; h < 2; h++ {
				a.op("VFMLA V%d.S4, V%d.S4, V%d.S4", 2*c+h, 4+2*j+h, 16+4*j+2*c+h)
			}
		}
	}
	a.op("SUBS $1, R22")
	a.op("BNE %s", l("step"))
	a.raw("")
	a.raw("\t// Lanes of V16: (q0,k0) (q0,k1) (q1,k0) (q1,k1); of V24: q2, q3.")
	vecNFaddPairs(a, 16, 8)
	vecNFaddpTree(a, 16)
	vecNFaddpTree(a, 24)
	a.op("FMUL_4S(16, 16, 12)")
	a.op("FMUL_4S(24, 24, 12)")
	// Query j's two outputs: the low (even j) or high (odd j) 64 bits of
	// V16 (j < 2) or V24.
	a.op("MOVD R0, R23")
	for j := 0; j < 4; j++ {
		v := 16 + 8*(j/2)
		if j > 0 {
			a.op("ADD R1, R23")
		}
		if j%2 == 0 {
			a.op("FMOVD F%d, (R23)", v)
		} else {
			a.op("VMOV V%d.D[1], R24", v)
			a.op("MOVD R24, (R23)")
		}
	}
	a.op("ADD $8, R0")
	a.op("ADD R5<<1, R4")
	a.op("ADD R5<<1, R19")
	a.op("SUBS $1, R6")
	a.op("BNE %s", l("pair"))
	a.label(l("end"))
	a.op("RET")
	a.raw("")
}

// vecNAxpy4Rows emits axpy4Rows (axpy4RowsF16): for output rows j < 4 and
// 16-float chunks of the values, y_j = fma(p[j*pstride+i], v_i, y_j) for
// i < n in order, as axpyRowsNEON.
//
// Registers: R9-R12 the four rows' chunk of y (R1 = ystride bytes
// apart), held in V16-V31 (row j in V16+4j..V19+4j) while the n value
// rows pass; R13-R15, R19 the four rows of p (R3 = pstride bytes apart),
// the row's weight in F4+j; R20 the value rows (R6 = vstride bytes
// apart), loaded once for the four rows into V0-V3 (the f16 form loads
// the halves into V12/V13 and widens them); R21 the same rows of next,
// each prefetched (the chunk's first 64 bytes); R22 the rows left, R7 the
// chunks left.
func vecNAxpy4Rows(a *asm, m vecNMulti) {
	l := func(s string) string { return m.xl + s }
	a.raw("// func %s(y []float32, ystride int, p []float32, pstride, n int, v %s, vstride, chunks int, next %s)", m.axpy, m.kv(), m.kv())
	for _, s := range m.axpyDoc {
		a.raw("%s", s)
	}
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-136", m.axpy)
	a.op("MOVD y_base+0(FP), R0")
	a.op("MOVD ystride+24(FP), R1")
	a.op("LSL $2, R1")
	a.op("MOVD p_base+32(FP), R2")
	a.op("MOVD pstride+56(FP), R3")
	a.op("LSL $2, R3")
	a.op("MOVD n+64(FP), R4")
	a.op("MOVD v_base+72(FP), R5")
	a.op("MOVD vstride+96(FP), R6")
	a.op("LSL $%d, R6", m.shift())
	a.op("MOVD chunks+104(FP), R7")
	a.op("MOVD next_base+112(FP), R8")
	a.op("CBZ R4, %s", m.xend)
	a.op("CBZ R7, %s", m.xend)
	a.label(l("chunk"))
	yr := []int{9, 10, 11, 12}
	pr := []int{13, 14, 15, 19}
	vecNRowPtrs(a, "R0", "R1", yr...)
	for j, r := range yr {
		a.op("VLD1 (R%d), %s", r, vecNList(16+4*j, 4, "S4"))
	}
	vecNRowPtrs(a, "R2", "R3", pr...)
	a.op("MOVD R5, R20")
	a.op("MOVD R8, R21")
	a.op("MOVD R4, R22")
	a.label(l("row"))
	a.op("PRFM (R21), PLDL1KEEP")
	a.op("ADD R6, R21")
	if m.f16 {
		a.op("VLD1.P (R20)(R6), %s", vecNList(12, 2, "H8"))
		for _, s := range vecNWiden(0, 12, 13) {
			a.op("%s", s)
		}
	} else {
		a.op("VLD1.P (R20)(R6), %s", vecNList(0, 4, "S4"))
	}
	for j, r := range pr {
		a.op("FMOVS.P 4(R%d), F%d", r, 4+j)
	}
	for j := range pr {
		for v := 0; v < 4; v++ {
			a.op("FMLA_S0(%d, %d, %d)", 16+4*j+v, v, 4+j)
		}
	}
	a.op("SUBS $1, R22")
	a.op("BNE %s", l("row"))
	a.raw("")
	for j, r := range yr {
		a.op("VST1 %s, (R%d)", vecNList(16+4*j, 4, "S4"), r)
	}
	a.op("ADD $64, R0")
	a.op("ADD $%d, R5", 16*m.eb())
	a.op("ADD $%d, R8", 16*m.eb())
	a.op("SUBS $1, R7")
	a.op("BNE %s", l("chunk"))
	a.label(m.xend)
	a.op("RET")
	a.raw("")
}

// vecNF16ToF32 emits f16ToF32SIMD: dst = float32(src), 8 halves a step
// (len(src) a multiple of 8), loaded into V0 and widened into V1/V2.
func vecNF16ToF32(a *asm) {
	a.raw("// func f16ToF32SIMD(dst []float32, src []uint16)")
	a.raw("// len(src) a multiple of 8.")
	a.raw("TEXT ·f16ToF32SIMD(SB), NOSPLIT, $0-48")
	a.op("MOVD dst_base+0(FP), R0")
	a.op("MOVD src_base+24(FP), R1")
	a.op("MOVD src_len+32(FP), R2")
	a.op("LSR $3, R2")
	a.op("CBZ R2, wend")
	a.label("wloop")
	a.op("VLD1.P 16(R1), %s", vecNList(0, 1, "H8"))
	for _, s := range vecNWiden(1, 0) {
		a.op("%s", s)
	}
	a.op("VST1.P %s, 32(R0)", vecNList(1, 2, "S4"))
	a.op("SUBS $1, R2")
	a.op("BNE wloop")
	a.label("wend")
	a.op("RET")
	a.raw("")
}
