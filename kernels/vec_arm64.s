//go:build arm64 && gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Summation order: see vec_arm64.go. V16/V17 (or a pair of them per key)
// hold elements 8s+0..3 and 8s+4..7; a result is
// HSUM4(V16+V17) then the tail FMADDs.

// func vecDotNEON(a, b []float32) float32
TEXT ·vecDotNEON(SB), NOSPLIT, $0-52
	MOVD a_base+0(FP), R0
	MOVD a_len+8(FP), R2
	MOVD b_base+24(FP), R1
	MOVI0(16)
	MOVI0(17)
	LSR  $3, R2, R3
	AND  $7, R2, R2
	CBZ  R3, dred

dloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	VLD1.P 32(R1), [V2.S4, V3.S4]
	VFMLA  V0.S4, V2.S4, V16.S4
	VFMLA  V1.S4, V3.S4, V17.S4
	SUBS   $1, R3
	BNE    dloop

dred:
	FADD_4S(16, 16, 17)
	HSUM4(16)
	CBZ    R2, ddone

dtail:
	FMOVS.P 4(R0), F0
	FMOVS.P 4(R1), F1
	FMADDS  F0, F16, F1, F16
	SUBS    $1, R2
	BNE     dtail

ddone:
	FMOVS F16, ret+48(FP)
	RET

// func dot4KeysNEON(out, q, k []float32, stride int, scale float32)
// Four keys side by side (V16-V23, two accumulators each) sharing each
// load of q; the four sums are reduced together with FADDP, which adds
// the same pairs as HSUM4. Each step prefetches the same 32 bytes of the
// key rows four ahead.
TEXT ·dot4KeysNEON(SB), NOSPLIT, $0-84
	MOVD  out_base+0(FP), R0
	MOVD  out_len+8(FP), R1
	MOVD  q_base+24(FP), R2
	MOVD  q_len+32(FP), R3
	MOVD  k_base+48(FP), R4
	MOVD  stride+72(FP), R5
	LSL   $2, R5
	FMOVS scale+80(FP), F31
	VDUP  V31.S[0], V31.S4
	LSR   $3, R3
	LSL   $2, R5, R13
	CBZ   R1, kend

kgroup:
	MOVD R2, R6
	MOVD R4, R7
	ADD  R5, R7, R8
	ADD  R5, R8, R9
	ADD  R5, R9, R10
	ADD  R13, R7, R19
	ADD  R13, R8, R20
	ADD  R13, R9, R21
	ADD  R13, R10, R22
	MOVD R3, R12
	MOVI0(16)
	MOVI0(17)
	MOVI0(18)
	MOVI0(19)
	MOVI0(20)
	MOVI0(21)
	MOVI0(22)
	MOVI0(23)

kstep:
	PRFM   (R19), PLDL1KEEP
	PRFM   (R20), PLDL1KEEP
	PRFM   (R21), PLDL1KEEP
	PRFM   (R22), PLDL1KEEP
	ADD    $32, R19
	ADD    $32, R20
	ADD    $32, R21
	ADD    $32, R22
	VLD1.P 32(R6), [V0.S4, V1.S4]
	VLD1.P 32(R7), [V2.S4, V3.S4]
	VLD1.P 32(R8), [V4.S4, V5.S4]
	VLD1.P 32(R9), [V6.S4, V7.S4]
	VLD1.P 32(R10), [V8.S4, V9.S4]
	VFMLA  V0.S4, V2.S4, V16.S4
	VFMLA  V1.S4, V3.S4, V17.S4
	VFMLA  V0.S4, V4.S4, V18.S4
	VFMLA  V1.S4, V5.S4, V19.S4
	VFMLA  V0.S4, V6.S4, V20.S4
	VFMLA  V1.S4, V7.S4, V21.S4
	VFMLA  V0.S4, V8.S4, V22.S4
	VFMLA  V1.S4, V9.S4, V23.S4
	SUBS   $1, R12
	BNE    kstep

	FADD_4S(16, 16, 17)
	FADD_4S(18, 18, 19)
	FADD_4S(20, 20, 21)
	FADD_4S(22, 22, 23)
	FADDP_4S(16, 16, 18)
	FADDP_4S(20, 20, 22)
	FADDP_4S(16, 16, 20)
	FMUL_4S(16, 16, 31)
	VST1.P [V16.S4], 16(R0)
	ADD    R13, R4
	SUBS   $4, R1
	BNE    kgroup

kend:
	RET

// func vecAxpyNEON(y, x []float32, s float32)
TEXT ·vecAxpyNEON(SB), NOSPLIT, $0-52
	MOVD  y_base+0(FP), R0
	MOVD  y_len+8(FP), R2
	MOVD  x_base+24(FP), R1
	FMOVS s+48(FP), F31
	VDUP  V31.S[0], V31.S4

a16:
	CMP    $16, R2
	BLT    a4
	VLD1   (R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V4.S4, V31.S4, V0.S4
	VFMLA  V5.S4, V31.S4, V1.S4
	VFMLA  V6.S4, V31.S4, V2.S4
	VFMLA  V7.S4, V31.S4, V3.S4
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUB    $16, R2
	B      a16

a4:
	CMP    $4, R2
	BLT    a1
	VLD1   (R0), [V0.S4]
	VLD1.P 16(R1), [V4.S4]
	VFMLA  V4.S4, V31.S4, V0.S4
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R2
	B      a4

a1:
	CBZ     R2, adone
	FMOVS   (R0), F0
	FMOVS.P 4(R1), F1
	FMADDS  F1, F0, F31, F0
	FMOVS.P F0, 4(R0)
	SUB     $1, R2
	B       a1

adone:
	RET

// func axpyRowsNEON(y, p, v []float32, stride int)
// For each element of y, in order of i: y = fma(p[i], v[i*stride+e], y).
// y stays in registers 16, then 4, then 1 element at a time while every
// row passes.
TEXT ·axpyRowsNEON(SB), NOSPLIT, $0-80
	MOVD y_base+0(FP), R0
	MOVD y_len+8(FP), R1
	MOVD p_base+24(FP), R2
	MOVD p_len+32(FP), R3
	MOVD v_base+48(FP), R4
	MOVD stride+72(FP), R5
	LSL  $2, R5
	CBZ  R3, rend

r16:
	CMP  $16, R1
	BLT  r4
	VLD1 (R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	MOVD R4, R6
	MOVD R2, R7
	MOVD R3, R8

r16i:
	FMOVS.P 4(R7), F20
	VLD1.P  (R6)(R5), [V4.S4, V5.S4, V6.S4, V7.S4]
	FMLA_S0(0, 4, 20)
	FMLA_S0(1, 5, 20)
	FMLA_S0(2, 6, 20)
	FMLA_S0(3, 7, 20)
	SUBS    $1, R8
	BNE     r16i
	VST1.P  [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	ADD     $64, R4
	SUB     $16, R1
	B       r16

r4:
	CMP  $4, R1
	BLT  r1
	VLD1 (R0), [V0.S4]
	MOVD R4, R6
	MOVD R2, R7
	MOVD R3, R8

r4i:
	FMOVS.P 4(R7), F20
	VLD1.P  (R6)(R5), [V4.S4]
	FMLA_S0(0, 4, 20)
	SUBS    $1, R8
	BNE     r4i
	VST1.P  [V0.S4], 16(R0)
	ADD     $16, R4
	SUB     $4, R1
	B       r4

r1:
	CBZ   R1, rend
	FMOVS (R0), F0
	MOVD  R4, R6
	MOVD  R2, R7
	MOVD  R3, R8

r1i:
	FMOVS.P 4(R7), F20
	FMOVS   (R6), F4
	ADD     R5, R6
	FMADDS  F4, F0, F20, F0
	SUBS    $1, R8
	BNE     r1i
	FMOVS.P F0, 4(R0)
	ADD     $4, R4
	SUB     $1, R1
	B       r1

rend:
	RET
