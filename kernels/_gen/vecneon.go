package main

import (
	"fmt"
	"strings"
)

// The arm64 NEON attention vector kernels of one query row
// (kernels/vec_arm64.s). A dot product sums in the order of vecDotAVX2
// (see vec_arm64.go): two 4-lane accumulators holding elements 8s+0..3
// and 8s+4..7 (FMLA), added lane-wise, then HSUM4 ((t0+t1)+(t2+t3)),
// then the last len%8 products one at a time (FMADDS). An axpy is one
// fused multiply-add per element in any blocking, so those kernels take
// 16, then 4, then 1 element at a time.

func init() { files["vec_arm64.s"] = vecNFile }

// vecNList is the register list [V(first).arr, ..., V(first+n-1).arr].
func vecNList(first, n int, arr string) string {
	r := make([]string, n)
	for i := range r {
		r[i] = fmt.Sprintf("V%d.%s", first+i, arr)
	}
	return "[" + strings.Join(r, ", ") + "]"
}

// vecNRowPtrs points the registers regs at consecutive rows: the first
// at base, each next one stride bytes on.
func vecNRowPtrs(a *asm, base, stride string, regs ...int) {
	a.op("MOVD %s, R%d", base, regs[0])
	for i := 1; i < len(regs); i++ {
		a.op("ADD %s, R%d, R%d", stride, regs[i-1], regs[i])
	}
}

// vecNZero clears the n vector registers from first.
func vecNZero(a *asm, first, n int) {
	for i := first; i < first+n; i++ {
		a.op("MOVI0(%d)", i)
	}
}

// vecNFaddPairs adds the n accumulator pairs from first lane-wise, each
// into its even register: V(first+2i) += V(first+2i+1).
func vecNFaddPairs(a *asm, first, n int) {
	for i := 0; i < n; i++ {
		r := first + 2*i
		a.op("FADD_4S(%d, %d, %d)", r, r, r+1)
	}
}

// vecNFaddpTree reduces the four vectors V(b), V(b+2), V(b+4), V(b+6)
// into the lanes 0-3 of V(b), lane i the sum of V(b+2i) added as HSUM4
// adds ((t0+t1)+(t2+t3)): FADDP adds neighbouring lanes, twice.
func vecNFaddpTree(a *asm, b int) {
	a.op("FADDP_4S(%d, %d, %d)", b, b, b+2)
	a.op("FADDP_4S(%d, %d, %d)", b+4, b+4, b+6)
	a.op("FADDP_4S(%d, %d, %d)", b, b, b+4)
}

// vecNFile writes vec_arm64.s.
func vecNFile() *asm {
	a := &asm{}
	a.b.WriteString(neonHeader)
	a.raw("")
	a.raw("// Summation order: see vec_arm64.go. V16/V17 (or a pair of them per key)")
	a.raw("// hold elements 8s+0..3 and 8s+4..7; a result is")
	a.raw("// HSUM4(V16+V17) then the tail FMADDs.")
	a.raw("")
	vecNDot(a)
	vecNDot4Keys(a)
	vecNAxpy(a)
	vecNAxpyRows(a)
	return a
}

// vecNDot emits vecDotNEON: R0/R1 the two vectors, R3 the 8-element
// steps, R2 the tail (len%8); V16/V17 the accumulator pair, V0-V3 the
// loads. len(b) >= len(a) is the caller's.
func vecNDot(a *asm) {
	a.raw("// func vecDotNEON(a, b []float32) float32")
	a.raw("TEXT ·vecDotNEON(SB), NOSPLIT, $0-52")
	a.op("MOVD a_base+0(FP), R0")
	a.op("MOVD a_len+8(FP), R2")
	a.op("MOVD b_base+24(FP), R1")
	vecNZero(a, 16, 2)
	a.op("LSR $3, R2, R3")
	a.op("AND $7, R2, R2")
	a.op("CBZ R3, dred")
	a.label("dloop")
	a.op("VLD1.P 32(R0), %s", vecNList(0, 2, "S4"))
	a.op("VLD1.P 32(R1), %s", vecNList(2, 2, "S4"))
	for h := 0; h < 2; h++ {
		a.op("VFMLA V%d.S4, V%d.S4, V%d.S4", h, 2+h, 16+h)
	}
	a.op("SUBS $1, R3")
	a.op("BNE dloop")
	a.label("dred")
	vecNFaddPairs(a, 16, 1)
	a.op("HSUM4(16)")
	a.op("CBZ R2, ddone")
	a.label("dtail")
	a.op("FMOVS.P 4(R0), F0")
	a.op("FMOVS.P 4(R1), F1")
	a.op("FMADDS F0, F16, F1, F16")
	a.op("SUBS $1, R2")
	a.op("BNE dtail")
	a.label("ddone")
	a.op("FMOVS F16, ret+48(FP)")
	a.op("RET")
	a.raw("")
}

// vecNDot4Keys emits dot4KeysNEON: four keys side by side sharing each
// load of q. Registers: R6 q, R7-R10 the four key rows (R5 = the key
// stride in bytes apart), R19-R22 the same rows of the next group of
// four keys (R13 = 4*R5 on), prefetched 32 bytes a step, R12 the 8-float
// steps left, R1 the keys left; V0/V1 the q load, V2+2k/V3+2k key k's,
// V16+2k/V17+2k key k's accumulator pair, V31 the broadcast scale. The
// four sums are reduced together with FADDP (vecNFaddpTree), which adds
// the same pairs as HSUM4, so each key's result is vecDotNEON's.
func vecNDot4Keys(a *asm) {
	a.raw("// func dot4KeysNEON(out, q, k []float32, stride int, scale float32)")
	a.raw("// Four keys side by side (V16-V23, two accumulators each) sharing each")
	a.raw("// load of q, reduced together with FADDP; each step prefetches the same")
	a.raw("// 32 bytes of the key rows four ahead.")
	a.raw("TEXT ·dot4KeysNEON(SB), NOSPLIT, $0-84")
	a.op("MOVD out_base+0(FP), R0")
	a.op("MOVD out_len+8(FP), R1")
	a.op("MOVD q_base+24(FP), R2")
	a.op("MOVD q_len+32(FP), R3")
	a.op("MOVD k_base+48(FP), R4")
	a.op("MOVD stride+72(FP), R5")
	a.op("LSL $2, R5")
	a.op("FMOVS scale+80(FP), F31")
	a.op("VDUP V31.S[0], V31.S4")
	a.op("LSR $3, R3")
	a.op("LSL $2, R5, R13")
	a.op("CBZ R1, kend")
	a.label("kgroup")
	a.op("MOVD R2, R6")
	vecNRowPtrs(a, "R4", "R5", 7, 8, 9, 10)
	for k := 0; k < 4; k++ {
		a.op("ADD R13, R%d, R%d", 7+k, 19+k)
	}
	a.op("MOVD R3, R12")
	vecNZero(a, 16, 8)
	a.label("kstep")
	for k := 0; k < 4; k++ {
		a.op("PRFM (R%d), PLDL1KEEP", 19+k)
	}
	for k := 0; k < 4; k++ {
		a.op("ADD $32, R%d", 19+k)
	}
	a.op("VLD1.P 32(R6), %s", vecNList(0, 2, "S4"))
	for k := 0; k < 4; k++ {
		a.op("VLD1.P 32(R%d), %s", 7+k, vecNList(2+2*k, 2, "S4"))
	}
	for k := 0; k < 4; k++ {
		for h := 0; h < 2; h++ {
			a.op("VFMLA V%d.S4, V%d.S4, V%d.S4", h, 2+2*k+h, 16+2*k+h)
		}
	}
	a.op("SUBS $1, R12")
	a.op("BNE kstep")
	vecNFaddPairs(a, 16, 4)
	vecNFaddpTree(a, 16)
	a.op("FMUL_4S(16, 16, 31)")
	a.op("VST1.P [V16.S4], 16(R0)")
	a.op("ADD R13, R4")
	a.op("SUBS $4, R1")
	a.op("BNE kgroup")
	a.label("kend")
	a.op("RET")
	a.raw("")
}

// vecNBlocks are the widths (in 4-lane registers) the axpy kernels take
// y in: 16 floats, then 4, then (scalar) 1.
var vecNBlocks = []int{4, 1}

// vecNAxpy emits vecAxpyNEON: y += s*x, R0 y, R1 x, R2 elements left, V31
// the broadcast s; V0-V3 y, V4-V7 x.
func vecNAxpy(a *asm) {
	a.raw("// func vecAxpyNEON(y, x []float32, s float32)")
	a.raw("TEXT ·vecAxpyNEON(SB), NOSPLIT, $0-52")
	a.op("MOVD y_base+0(FP), R0")
	a.op("MOVD y_len+8(FP), R2")
	a.op("MOVD x_base+24(FP), R1")
	a.op("FMOVS s+48(FP), F31")
	a.op("VDUP V31.S[0], V31.S4")
	for i, n := range vecNBlocks {
		w, next := 4*n, "a1"
		if i+1 < len(vecNBlocks) {
			next = fmt.Sprintf("a%d", 4*vecNBlocks[i+1])
		}
		l := fmt.Sprintf("a%d", w)
		a.label(l)
		a.op("CMP $%d, R2", w)
		a.op("BLT %s", next)
		a.op("VLD1 (R0), %s", vecNList(0, n, "S4"))
		a.op("VLD1.P %d(R1), %s", 4*w, vecNList(4, n, "S4"))
		for v := 0; v < n; v++ {
			a.op("VFMLA V%d.S4, V31.S4, V%d.S4", 4+v, v)
		}
		a.op("VST1.P %s, %d(R0)", vecNList(0, n, "S4"), 4*w)
		a.op("SUB $%d, R2", w)
		a.op("B %s", l)
	}
	a.label("a1")
	a.op("CBZ R2, adone")
	a.op("FMOVS (R0), F0")
	a.op("FMOVS.P 4(R1), F1")
	a.op("FMADDS F1, F0, F31, F0")
	a.op("FMOVS.P F0, 4(R0)")
	a.op("SUB $1, R2")
	a.op("B a1")
	a.label("adone")
	a.op("RET")
	a.raw("")
}

// vecNAxpyRows emits axpyRowsNEON: for each element e of y, in order of
// the rows i: y[e] = fma(p[i], v[i*stride+e], y[e]). A block of y (16,
// then 4, then 1 element) stays in V0-V3 (F0) while every row passes:
// R6 walks the rows of v (R5 = stride bytes), R7 p, R8 the rows left;
// V4-V7 (F4) the row's block, F20 = p[i]. R4 is v at the block, R1 the
// elements of y left, R3 = len(p) the rows.
func vecNAxpyRows(a *asm) {
	a.raw("// func axpyRowsNEON(y, p, v []float32, stride int)")
	a.raw("// For each element of y, in order of i: y = fma(p[i], v[i*stride+e], y).")
	a.raw("// y stays in registers 16, then 4, then 1 element at a time while every")
	a.raw("// row passes.")
	a.raw("TEXT ·axpyRowsNEON(SB), NOSPLIT, $0-80")
	a.op("MOVD y_base+0(FP), R0")
	a.op("MOVD y_len+8(FP), R1")
	a.op("MOVD p_base+24(FP), R2")
	a.op("MOVD p_len+32(FP), R3")
	a.op("MOVD v_base+48(FP), R4")
	a.op("MOVD stride+72(FP), R5")
	a.op("LSL $2, R5")
	a.op("CBZ R3, rend")
	rows := func() {
		a.op("MOVD R4, R6")
		a.op("MOVD R2, R7")
		a.op("MOVD R3, R8")
	}
	for i, n := range vecNBlocks {
		w, next := 4*n, "r1"
		if i+1 < len(vecNBlocks) {
			next = fmt.Sprintf("r%d", 4*vecNBlocks[i+1])
		}
		l := fmt.Sprintf("r%d", w)
		a.label(l)
		a.op("CMP $%d, R1", w)
		a.op("BLT %s", next)
		a.op("VLD1 (R0), %s", vecNList(0, n, "S4"))
		rows()
		a.label(l + "i")
		a.op("FMOVS.P 4(R7), F20")
		a.op("VLD1.P (R6)(R5), %s", vecNList(4, n, "S4"))
		for v := 0; v < n; v++ {
			a.op("FMLA_S0(%d, %d, 20)", v, 4+v)
		}
		a.op("SUBS $1, R8")
		a.op("BNE %si", l)
		a.op("VST1.P %s, %d(R0)", vecNList(0, n, "S4"), 4*w)
		a.op("ADD $%d, R4", 4*w)
		a.op("SUB $%d, R1", w)
		a.op("B %s", l)
	}
	a.label("r1")
	a.op("CBZ R1, rend")
	a.op("FMOVS (R0), F0")
	rows()
	a.label("r1i")
	a.op("FMOVS.P 4(R7), F20")
	a.op("FMOVS (R6), F4")
	a.op("ADD R5, R6")
	a.op("FMADDS F4, F0, F20, F0")
	a.op("SUBS $1, R8")
	a.op("BNE r1i")
	a.op("FMOVS.P F0, 4(R0)")
	a.op("ADD $4, R4")
	a.op("SUB $1, R1")
	a.op("B r1")
	a.label("rend")
	a.op("RET")
	a.raw("")
}
