//go:build arm64 && gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Attention kernels for four query rows at once (the query heads that
// share a KV head). Each row's results are bit-identical to the one-row
// kernels of vec_arm64.s: only the loads of keys and values are shared
// between rows, never a sum.

// func dot4Rows(out []float32, ostride int, q []float32, qstride int, k []float32, kstride, pairs, steps int, scale float32, next []float32)
// For query rows j < 4 (8*steps floats) and key rows i < 2*pairs:
// out[j*ostride+i] = vecDotNEON(q_j, k_i) * scale. Accumulator pair of
// (query j, key c) is V(16+4j+2c), V(17+4j+2c); V0-V3 hold the two keys'
// 8 floats, V4-V11 the four queries'. A pair of keys is read in one
// pass, prefetching the same bytes of the matching rows of next.
TEXT ·dot4Rows(SB), NOSPLIT, $0-144
	MOVD  out_base+0(FP), R0
	MOVD  ostride+24(FP), R1
	LSL   $2, R1
	MOVD  q_base+32(FP), R2
	MOVD  qstride+56(FP), R3
	LSL   $2, R3
	MOVD  k_base+64(FP), R4
	MOVD  kstride+88(FP), R5
	LSL   $2, R5
	MOVD  pairs+96(FP), R6
	MOVD  steps+104(FP), R7
	FMOVS scale+112(FP), F12
	VDUP  V12.S[0], V12.S4
	MOVD  next_base+120(FP), R19
	CBZ   R6, mend

mpair:
	MOVD R2, R10
	ADD  R3, R10, R11
	ADD  R3, R11, R12
	ADD  R3, R12, R13
	MOVD R4, R14
	ADD  R5, R14, R15
	MOVD R19, R20
	ADD  R5, R20, R21
	MOVD R7, R22
	MOVI0(16)
	MOVI0(17)
	MOVI0(18)
	MOVI0(19)
	MOVI0(20)
	MOVI0(21)
	MOVI0(22)
	MOVI0(23)
	MOVI0(24)
	MOVI0(25)
	MOVI0(26)
	MOVI0(27)
	MOVI0(28)
	MOVI0(29)
	MOVI0(30)
	MOVI0(31)

mstep:
	PRFM   (R20), PLDL1KEEP
	PRFM   (R21), PLDL1KEEP
	ADD    $32, R20
	ADD    $32, R21
	VLD1.P 32(R14), [V0.S4, V1.S4]
	VLD1.P 32(R15), [V2.S4, V3.S4]
	VLD1.P 32(R10), [V4.S4, V5.S4]
	VLD1.P 32(R11), [V6.S4, V7.S4]
	VLD1.P 32(R12), [V8.S4, V9.S4]
	VLD1.P 32(R13), [V10.S4, V11.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4
	VFMLA  V2.S4, V4.S4, V18.S4
	VFMLA  V3.S4, V5.S4, V19.S4
	VFMLA  V0.S4, V6.S4, V20.S4
	VFMLA  V1.S4, V7.S4, V21.S4
	VFMLA  V2.S4, V6.S4, V22.S4
	VFMLA  V3.S4, V7.S4, V23.S4
	VFMLA  V0.S4, V8.S4, V24.S4
	VFMLA  V1.S4, V9.S4, V25.S4
	VFMLA  V2.S4, V8.S4, V26.S4
	VFMLA  V3.S4, V9.S4, V27.S4
	VFMLA  V0.S4, V10.S4, V28.S4
	VFMLA  V1.S4, V11.S4, V29.S4
	VFMLA  V2.S4, V10.S4, V30.S4
	VFMLA  V3.S4, V11.S4, V31.S4
	SUBS   $1, R22
	BNE    mstep

	// Lanes of V16: (q0,k0) (q0,k1) (q1,k0) (q1,k1); of V24: q2, q3.
	FADD_4S(16, 16, 17)
	FADD_4S(18, 18, 19)
	FADD_4S(20, 20, 21)
	FADD_4S(22, 22, 23)
	FADD_4S(24, 24, 25)
	FADD_4S(26, 26, 27)
	FADD_4S(28, 28, 29)
	FADD_4S(30, 30, 31)
	FADDP_4S(16, 16, 18)
	FADDP_4S(20, 20, 22)
	FADDP_4S(16, 16, 20)
	FADDP_4S(24, 24, 26)
	FADDP_4S(28, 28, 30)
	FADDP_4S(24, 24, 28)
	FMUL_4S(16, 16, 12)
	FMUL_4S(24, 24, 12)
	MOVD  R0, R23
	FMOVD F16, (R23)
	ADD   R1, R23
	VMOV  V16.D[1], R24
	MOVD  R24, (R23)
	ADD   R1, R23
	FMOVD F24, (R23)
	ADD   R1, R23
	VMOV  V24.D[1], R24
	MOVD  R24, (R23)
	ADD   $8, R0
	ADD   R5<<1, R4
	ADD   R5<<1, R19
	SUBS  $1, R6
	BNE   mpair

mend:
	RET

// func axpy4Rows(y []float32, ystride int, p []float32, pstride, n int, v []float32, vstride, chunks int, next []float32)
// For output rows j < 4 and 16-float chunks of the values: y_j =
// fma(p[j*pstride+i], v_i, y_j) for i < n in order, as axpyRowsNEON.
// The four rows' chunk stays in V16-V31 while the value rows pass (V0-V3,
// loaded once for four rows); each row prefetches the same 64 bytes of
// next's row.
TEXT ·axpy4Rows(SB), NOSPLIT, $0-136
	MOVD y_base+0(FP), R0
	MOVD ystride+24(FP), R1
	LSL  $2, R1
	MOVD p_base+32(FP), R2
	MOVD pstride+56(FP), R3
	LSL  $2, R3
	MOVD n+64(FP), R4
	MOVD v_base+72(FP), R5
	MOVD vstride+96(FP), R6
	LSL  $2, R6
	MOVD chunks+104(FP), R7
	MOVD next_base+112(FP), R8
	CBZ  R4, xend
	CBZ  R7, xend

xchunk:
	MOVD R0, R9
	ADD  R1, R9, R10
	ADD  R1, R10, R11
	ADD  R1, R11, R12
	VLD1 (R9), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1 (R10), [V20.S4, V21.S4, V22.S4, V23.S4]
	VLD1 (R11), [V24.S4, V25.S4, V26.S4, V27.S4]
	VLD1 (R12), [V28.S4, V29.S4, V30.S4, V31.S4]
	MOVD R2, R13
	ADD  R3, R13, R14
	ADD  R3, R14, R15
	ADD  R3, R15, R19
	MOVD R5, R20
	MOVD R8, R21
	MOVD R4, R22

xrow:
	PRFM    (R21), PLDL1KEEP
	ADD     R6, R21
	VLD1.P  (R20)(R6), [V0.S4, V1.S4, V2.S4, V3.S4]
	FMOVS.P 4(R13), F4
	FMOVS.P 4(R14), F5
	FMOVS.P 4(R15), F6
	FMOVS.P 4(R19), F7
	FMLA_S0(16, 0, 4)
	FMLA_S0(17, 1, 4)
	FMLA_S0(18, 2, 4)
	FMLA_S0(19, 3, 4)
	FMLA_S0(20, 0, 5)
	FMLA_S0(21, 1, 5)
	FMLA_S0(22, 2, 5)
	FMLA_S0(23, 3, 5)
	FMLA_S0(24, 0, 6)
	FMLA_S0(25, 1, 6)
	FMLA_S0(26, 2, 6)
	FMLA_S0(27, 3, 6)
	FMLA_S0(28, 0, 7)
	FMLA_S0(29, 1, 7)
	FMLA_S0(30, 2, 7)
	FMLA_S0(31, 3, 7)
	SUBS    $1, R22
	BNE     xrow

	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R9)
	VST1 [V20.S4, V21.S4, V22.S4, V23.S4], (R10)
	VST1 [V24.S4, V25.S4, V26.S4, V27.S4], (R11)
	VST1 [V28.S4, V29.S4, V30.S4, V31.S4], (R12)
	ADD  $64, R0
	ADD  $64, R5
	ADD  $64, R8
	SUBS $1, R7
	BNE  xchunk

xend:
	RET
