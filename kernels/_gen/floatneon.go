package main

import (
	"fmt"
	"strings"
)

// The arm64 NEON float-weight matrix-vector kernels
// (kernels/float_neon_arm64.s): F32, F16 and BF16 weights times float32
// activations, the first 8*chunks elements of each row (the Go wrapper,
// neonFloatVec, adds the rest). The three kernels differ only in how the
// weights are loaded and widened to float32; that is a pair of macros per
// type (LOAD16_*, LOAD8_*), written into the file from vecNFloatLoad.

func init() { files["float_neon_arm64.s"] = vecNFloatFile }

// vecNFloatTypes are the weight types, in the order of the file.
var vecNFloatTypes = []string{"F32", "F16", "BF16"}

// vecNFloatLoad returns the instructions of LOAD<4*n>_<typ>: the next
// 4*n weights (n = 4 or 2) at R9 (advanced past them) as floats in
// V0..V(n-1). F32 weights load directly; F16 ones are loaded into V20
// (V21) and widened by FCVTL/FCVTL2 (exact); a BF16 weight is the high
// half of its float32, so interleaving a zero half-word (V31 = 0) below
// each one (ZIP1 for the low four, ZIP2 for the high four) widens it.
func vecNFloatLoad(typ string, n int) []string {
	if typ == "F32" {
		return []string{fmt.Sprintf("VLD1.P %d(R9), %s", 16*n, vecNList(0, n, "S4"))}
	}
	s := []string{fmt.Sprintf("VLD1.P %d(R9), %s", 8*n, vecNList(20, n/2, "H8"))}
	if typ == "F16" {
		src := []int{20, 21}[:n/2]
		return append(s, vecNWiden(0, src...)...)
	}
	for i := 0; i < n; i++ {
		s = append(s, fmt.Sprintf("VZIP%d V%d.H8, V31.H8, V%d.H8", 1+i%2, 20+i/2, i))
	}
	return s
}

// vecNDefineWidth is the longest #define kept on one line; longer ones
// continue over lines, one instruction each.
const vecNDefineWidth = 120

// vecNDefine writes the macro name with the instructions body.
func vecNDefine(a *asm, name string, body []string) {
	line := "#define " + name + " " + strings.Join(body, "; ")
	if len(line) <= vecNDefineWidth {
		a.raw("%s", line)
		return
	}
	a.raw("#define %s \\", name)
	for i, s := range body {
		if i+1 < len(body) {
			a.raw("\t%s; \\", s)
		} else {
			a.raw("\t%s", s)
		}
	}
}

// vecNFloatFile writes float_neon_arm64.s: the load macros, then a kernel
// per weight type.
func vecNFloatFile() *asm {
	a := &asm{}
	a.b.WriteString(neonHeader)
	a.raw("")
	a.raw("// F32, F16 and BF16 weights times float32 activations: the first")
	a.raw("// 8*chunks elements of each row (the Go wrapper adds the rest). Sixteen")
	a.raw("// elements at a time go into four 4-lane accumulators V16-V19 with FMLA")
	a.raw("// (an odd last chunk of 8 into V16-V17); a row's result is")
	a.raw("// HSUM4((V16+V18)+(V17+V19)). Weights are widened to float32 in V0-V3:")
	a.raw("// fp16 by FCVTL, bf16 by interleaving zero half-words below them (V31 = 0).")
	a.raw("")
	for _, n := range []int{4, 2} {
		if n == 4 {
			a.raw("// LOAD16_*: 16 weights at R9 (advanced) as floats into V0-V3.")
		} else {
			a.raw("// LOAD8_*: 8 weights into V0-V1.")
		}
		for _, t := range vecNFloatTypes {
			vecNDefine(a, fmt.Sprintf("LOAD%d_%s", 4*n, t), vecNFloatLoad(t, n))
		}
		a.raw("")
	}
	for _, t := range vecNFloatTypes {
		vecNFloatVec(a, t)
	}
	return a
}

// vecNFloatVec emits <typ>VecNEON (f32VecNEON, ...): for each of the
// len(out) rows (R2 the row, R3 = stride bytes on to the next), the dot
// product of its first 8*chunks weights with x (R10). Pairs of chunks
// (R6, counted in R12) go four registers at a time into V16-V19, an odd
// last chunk (R7) two registers into V16/V17; V4-V7 hold x. The row's sum
// is HSUM4((V16+V18)+(V17+V19)), stored at R0 (advanced).
//
// V31 is cleared for the BF16 loads (the BF16 kernel only).
func vecNFloatVec(a *asm, typ string) {
	name := strings.ToLower(typ) + "VecNEON"
	a.raw("// func %s(out []float32, w []byte, stride, chunks int, x []float32)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-88", name)
	a.op("MOVD out_base+0(FP), R0")
	a.op("MOVD out_len+8(FP), R1")
	a.op("MOVD w_base+24(FP), R2")
	a.op("MOVD stride+48(FP), R3")
	a.op("MOVD chunks+56(FP), R4")
	a.op("MOVD x_base+64(FP), R5")
	a.op("LSR $1, R4, R6 // pairs of chunks")
	a.op("AND $1, R4, R7 // a last single chunk")
	if typ == "BF16" {
		a.op("MOVI0(31)")
	}
	a.label("row")
	a.op("MOVD R2, R9")
	a.op("MOVD R5, R10")
	vecNZero(a, 16, 4)
	a.op("CBZ R6, one")
	a.op("MOVD R6, R12")
	// step multiplies 4*n weights (LOAD<4n>) by the next 4*n floats of x
	// into V16..V(16+n-1).
	step := func(n int) {
		a.op("LOAD%d_%s", 4*n, typ)
		a.op("VLD1.P %d(R10), %s", 16*n, vecNList(4, n, "S4"))
		for v := 0; v < n; v++ {
			a.op("VFMLA V%d.S4, V%d.S4, V%d.S4", v, 4+v, 16+v)
		}
	}
	a.label("loop")
	step(4)
	a.op("SUBS $1, R12")
	a.op("BNE loop")
	a.label("one")
	a.op("CBZ R7, done")
	step(2)
	a.label("done")
	// (V16+V18)+(V17+V19): the halves of the four accumulators first.
	for v := 16; v < 18; v++ {
		a.op("FADD_4S(%d, %d, %d)", v, v, v+2)
	}
	a.op("FADD_4S(16, 16, 17)")
	a.op("HSUM4(16)")
	a.op("FMOVS.P F16, 4(R0)")
	a.op("ADD R3, R2")
	a.op("SUBS $1, R1")
	a.op("BNE row")
	a.op("RET")
	a.raw("")
}
