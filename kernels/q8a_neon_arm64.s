//go:build arm64 && gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Q8_0 and Q4_0 weights times activations in the q8a layout (see
// actlayout.go), for the neon and dotprod tiers. Blocks are taken four at
// a time: each block's exact integer dot product is formed in 4 int32
// lanes (DOT32_*), the four blocks' lanes are reduced pairwise to one
// vector of four block sums, and float lane j accumulates
// (dw_j*dx_j) * sum_j with one FMA. The last blocks%4 blocks add
// (dw*dx) * sum into a scalar with FMADD. A row's result is
// ((a0+a1)+(a2+a3)) + scalar. The 4-row kernels load each weight block
// once and run the same sequence per activation row, so their results are
// bit-identical to the one-row kernels'. The neon and dotprod variants
// differ only in the DOT32 macro; the integer sums are exact in both.
//
// Registers: weights V0-V7 (four blocks; Q4_0 unpacked to q-8 in [-8, 7]),
// their fp16 scales V16 (widened to float), activation quants V8-V11,
// block sums V20-V23, V24-V25 pairwise sums, V17 the scale product,
// V26-V27 scratch of the neon dot, V28 = 0x0f and V29 = 8 bytes (Q4_0).

// DOT32_SDOT: 4 int32 lanes summing to A0.X0 + A1.X1 (16 int8 each).
#define DOT32_SDOT(D, A0, A1, X0, X1) MOVI0(D); SDOT_4S(D, A0, X0); SDOT_4S(D, A1, X1)

// DOT32_Q8_NEON: the same with widening multiplies; Q8_0 products reach
// 128*127, so each int16 lane adds only two of them.
#define DOT32_Q8_NEON(D, A0, A1, X0, X1) SMULL_8H(26, A0, X0); SMLAL_8H(26, A1, X1); SMULL2_8H(27, A0, X0); SMLAL2_8H(27, A1, X1); SADDLP_4S(D, 26); SADALP_4S(D, 27)

// DOT32_Q4_NEON: Q4_0 products are at most 8*127, four per int16 lane.
#define DOT32_Q4_NEON(D, A0, A1, X0, X1) SMULL_8H(26, A0, X0); SMLAL2_8H(26, A0, X0); SMLAL_8H(26, A1, X1); SMLAL2_8H(26, A1, X1); SADDLP_4S(D, 26)

// LOADW4_Q8: four Q8_0 blocks at R9 (advanced past them) into V0-V7 and
// their scales, as floats, into V16.
#define LOADW4_Q8 \
	VLD1.P 2(R9), V16.H[0]; VLD1.P 32(R9), [V0.B16, V1.B16]; \
	VLD1.P 2(R9), V16.H[1]; VLD1.P 32(R9), [V2.B16, V3.B16]; \
	VLD1.P 2(R9), V16.H[2]; VLD1.P 32(R9), [V4.B16, V5.B16]; \
	VLD1.P 2(R9), V16.H[3]; VLD1.P 32(R9), [V6.B16, V7.B16]; \
	FCVTL_4S(16, 16)

// UNPACK_Q4: lo = (lo & 15) - 8 (elements 0-15), hi = (lo >> 4) - 8
// (elements 16-31).
#define UNPACK_Q4(lo, hi) \
	VUSHR $4, lo.B16, hi.B16; \
	VAND  V28.B16, lo.B16, lo.B16; \
	VSUB  V29.B16, lo.B16, lo.B16; \
	VSUB  V29.B16, hi.B16, hi.B16

#define LOADW4_Q4 \
	VLD1.P 2(R9), V16.H[0]; VLD1.P 16(R9), [V0.B16]; \
	VLD1.P 2(R9), V16.H[1]; VLD1.P 16(R9), [V2.B16]; \
	VLD1.P 2(R9), V16.H[2]; VLD1.P 16(R9), [V4.B16]; \
	VLD1.P 2(R9), V16.H[3]; VLD1.P 16(R9), [V6.B16]; \
	UNPACK_Q4(V0, V1); UNPACK_Q4(V2, V3); UNPACK_Q4(V4, V5); UNPACK_Q4(V6, V7); \
	FCVTL_4S(16, 16)

// LOADW1_*: one block into V0-V1, its scale as a float into F16.
#define LOADW1_Q8 VLD1.P 2(R9), V16.H[0]; VLD1.P 32(R9), [V0.B16, V1.B16]; FCVTHS F16, F16
#define LOADW1_Q4 VLD1.P 2(R9), V16.H[0]; VLD1.P 16(R9), [V0.B16]; UNPACK_Q4(V0, V1); FCVTHS F16, F16

// GROUP: the four loaded blocks times the activations at XP (quants) and
// DP (float d), both advanced, into the float lanes of ACC.
#define GROUP(DOT, XP, DP, ACC) \
	VLD1.P 64(XP), [V8.B16, V9.B16, V10.B16, V11.B16]; \
	DOT(20, 0, 1, 8, 9); \
	DOT(21, 2, 3, 10, 11); \
	VLD1.P 64(XP), [V8.B16, V9.B16, V10.B16, V11.B16]; \
	DOT(22, 4, 5, 8, 9); \
	DOT(23, 6, 7, 10, 11); \
	VADDP V21.S4, V20.S4, V24.S4; \
	VADDP V23.S4, V22.S4, V25.S4; \
	VADDP V25.S4, V24.S4, V24.S4; \
	SCVTF_4S(24, 24); \
	VLD1.P 16(DP), [V17.S4]; \
	FMUL_4S(17, 16, 17); \
	VFMLA V24.S4, V17.S4, ACC.S4

// TAIL1: the one loaded block times the activations at XP, DP into the
// scalar TACC.
#define TAIL1(DOT, XP, DP, TACC) \
	VLD1.P 32(XP), [V8.B16, V9.B16]; \
	DOT(20, 0, 1, 8, 9); \
	VADDV V20.S4, V20; \
	SCVTF_S(20, 20); \
	FMOVS.P 4(DP), F17; \
	FMULS F16, F17, F17; \
	FMADDS F17, TACC, F20, TACC

// func q8_0VecNEON(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q8_0VecNEON(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<6, R5, R6 // the d of the blocks
	LSR  $2, R4, R7    // groups of four blocks
	AND  $3, R4, R8    // remaining blocks

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVI0(31)
	MOVI0(30)
	CBZ  R7, tail
	MOVD R7, R12

group:
	LOADW4_Q8
	GROUP(DOT32_Q8_NEON, R10, R11, V31)
	SUBS $1, R12
	BNE  group

tail:
	CBZ  R8, done
	MOVD R8, R12

tail1:
	LOADW1_Q8
	TAIL1(DOT32_Q8_NEON, R10, R11, F30)
	SUBS $1, R12
	BNE  tail1

done:
	HSUM4(31)
	FADDS  F30, F31, F31
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func q8_0Vec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q8_0Vec4NEON(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	LSL  $2, R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R8
	MOVD xstride+104(FP), R7
	ADD  R7, R8, R10
	ADD  R7, R10, R11
	ADD  R7, R11, R12
	LSR  $2, R5, R6
	AND  $3, R5, R7

row:
	MOVD R2, R9
	MOVD R8, R15
	MOVD R10, R16
	MOVD R11, R17
	MOVD R12, R19
	ADD  R5<<6, R8, R20
	ADD  R5<<6, R10, R21
	ADD  R5<<6, R11, R22
	ADD  R5<<6, R12, R23
	MOVI0(12)
	MOVI0(13)
	MOVI0(14)
	MOVI0(15)
	MOVI0(18)
	MOVI0(19)
	MOVI0(30)
	MOVI0(31)
	CBZ  R6, tail
	MOVD R6, R14

group:
	LOADW4_Q8
	GROUP(DOT32_Q8_NEON, R15, R20, V12)
	GROUP(DOT32_Q8_NEON, R16, R21, V13)
	GROUP(DOT32_Q8_NEON, R17, R22, V14)
	GROUP(DOT32_Q8_NEON, R19, R23, V15)
	SUBS $1, R14
	BNE  group

tail:
	CBZ  R7, done
	MOVD R7, R14

tail1:
	LOADW1_Q8
	TAIL1(DOT32_Q8_NEON, R15, R20, F18)
	TAIL1(DOT32_Q8_NEON, R16, R21, F19)
	TAIL1(DOT32_Q8_NEON, R17, R22, F30)
	TAIL1(DOT32_Q8_NEON, R19, R23, F31)
	SUBS $1, R14
	BNE  tail1

done:
	HSUM4(12)
	FADDS F18, F12, F12
	FMOVS F12, (R0)
	HSUM4(13)
	FADDS F19, F13, F13
	ADD   R1, R0, R13
	FMOVS F13, (R13)
	HSUM4(14)
	FADDS F30, F14, F14
	ADD   R1, R13, R13
	FMOVS F14, (R13)
	HSUM4(15)
	FADDS F31, F15, F15
	ADD   R1, R13, R13
	FMOVS F15, (R13)
	ADD   $4, R0
	ADD   R3, R2
	SUBS  $1, R4
	BNE   row
	RET

// func q8_0VecDot(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q8_0VecDot(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<6, R5, R6 // the d of the blocks
	LSR  $2, R4, R7    // groups of four blocks
	AND  $3, R4, R8    // remaining blocks

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVI0(31)
	MOVI0(30)
	CBZ  R7, tail
	MOVD R7, R12

group:
	LOADW4_Q8
	GROUP(DOT32_SDOT, R10, R11, V31)
	SUBS $1, R12
	BNE  group

tail:
	CBZ  R8, done
	MOVD R8, R12

tail1:
	LOADW1_Q8
	TAIL1(DOT32_SDOT, R10, R11, F30)
	SUBS $1, R12
	BNE  tail1

done:
	HSUM4(31)
	FADDS  F30, F31, F31
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func q8_0Vec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q8_0Vec4Dot(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	LSL  $2, R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R8
	MOVD xstride+104(FP), R7
	ADD  R7, R8, R10
	ADD  R7, R10, R11
	ADD  R7, R11, R12
	LSR  $2, R5, R6
	AND  $3, R5, R7

row:
	MOVD R2, R9
	MOVD R8, R15
	MOVD R10, R16
	MOVD R11, R17
	MOVD R12, R19
	ADD  R5<<6, R8, R20
	ADD  R5<<6, R10, R21
	ADD  R5<<6, R11, R22
	ADD  R5<<6, R12, R23
	MOVI0(12)
	MOVI0(13)
	MOVI0(14)
	MOVI0(15)
	MOVI0(18)
	MOVI0(19)
	MOVI0(30)
	MOVI0(31)
	CBZ  R6, tail
	MOVD R6, R14

group:
	LOADW4_Q8
	GROUP(DOT32_SDOT, R15, R20, V12)
	GROUP(DOT32_SDOT, R16, R21, V13)
	GROUP(DOT32_SDOT, R17, R22, V14)
	GROUP(DOT32_SDOT, R19, R23, V15)
	SUBS $1, R14
	BNE  group

tail:
	CBZ  R7, done
	MOVD R7, R14

tail1:
	LOADW1_Q8
	TAIL1(DOT32_SDOT, R15, R20, F18)
	TAIL1(DOT32_SDOT, R16, R21, F19)
	TAIL1(DOT32_SDOT, R17, R22, F30)
	TAIL1(DOT32_SDOT, R19, R23, F31)
	SUBS $1, R14
	BNE  tail1

done:
	HSUM4(12)
	FADDS F18, F12, F12
	FMOVS F12, (R0)
	HSUM4(13)
	FADDS F19, F13, F13
	ADD   R1, R0, R13
	FMOVS F13, (R13)
	HSUM4(14)
	FADDS F30, F14, F14
	ADD   R1, R13, R13
	FMOVS F14, (R13)
	HSUM4(15)
	FADDS F31, F15, F15
	ADD   R1, R13, R13
	FMOVS F15, (R13)
	ADD   $4, R0
	ADD   R3, R2
	SUBS  $1, R4
	BNE   row
	RET

// func q4_0VecNEON(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q4_0VecNEON(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<6, R5, R6 // the d of the blocks
	LSR  $2, R4, R7    // groups of four blocks
	AND  $3, R4, R8    // remaining blocks
	VMOVI $15, V28.B16
	VMOVI $8, V29.B16

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVI0(31)
	MOVI0(30)
	CBZ  R7, tail
	MOVD R7, R12

group:
	LOADW4_Q4
	GROUP(DOT32_Q4_NEON, R10, R11, V31)
	SUBS $1, R12
	BNE  group

tail:
	CBZ  R8, done
	MOVD R8, R12

tail1:
	LOADW1_Q4
	TAIL1(DOT32_Q4_NEON, R10, R11, F30)
	SUBS $1, R12
	BNE  tail1

done:
	HSUM4(31)
	FADDS  F30, F31, F31
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func q4_0Vec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q4_0Vec4NEON(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	LSL  $2, R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R8
	MOVD xstride+104(FP), R7
	ADD  R7, R8, R10
	ADD  R7, R10, R11
	ADD  R7, R11, R12
	LSR  $2, R5, R6
	AND  $3, R5, R7
	VMOVI $15, V28.B16
	VMOVI $8, V29.B16

row:
	MOVD R2, R9
	MOVD R8, R15
	MOVD R10, R16
	MOVD R11, R17
	MOVD R12, R19
	ADD  R5<<6, R8, R20
	ADD  R5<<6, R10, R21
	ADD  R5<<6, R11, R22
	ADD  R5<<6, R12, R23
	MOVI0(12)
	MOVI0(13)
	MOVI0(14)
	MOVI0(15)
	MOVI0(18)
	MOVI0(19)
	MOVI0(30)
	MOVI0(31)
	CBZ  R6, tail
	MOVD R6, R14

group:
	LOADW4_Q4
	GROUP(DOT32_Q4_NEON, R15, R20, V12)
	GROUP(DOT32_Q4_NEON, R16, R21, V13)
	GROUP(DOT32_Q4_NEON, R17, R22, V14)
	GROUP(DOT32_Q4_NEON, R19, R23, V15)
	SUBS $1, R14
	BNE  group

tail:
	CBZ  R7, done
	MOVD R7, R14

tail1:
	LOADW1_Q4
	TAIL1(DOT32_Q4_NEON, R15, R20, F18)
	TAIL1(DOT32_Q4_NEON, R16, R21, F19)
	TAIL1(DOT32_Q4_NEON, R17, R22, F30)
	TAIL1(DOT32_Q4_NEON, R19, R23, F31)
	SUBS $1, R14
	BNE  tail1

done:
	HSUM4(12)
	FADDS F18, F12, F12
	FMOVS F12, (R0)
	HSUM4(13)
	FADDS F19, F13, F13
	ADD   R1, R0, R13
	FMOVS F13, (R13)
	HSUM4(14)
	FADDS F30, F14, F14
	ADD   R1, R13, R13
	FMOVS F14, (R13)
	HSUM4(15)
	FADDS F31, F15, F15
	ADD   R1, R13, R13
	FMOVS F15, (R13)
	ADD   $4, R0
	ADD   R3, R2
	SUBS  $1, R4
	BNE   row
	RET

// func q4_0VecDot(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q4_0VecDot(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<6, R5, R6 // the d of the blocks
	LSR  $2, R4, R7    // groups of four blocks
	AND  $3, R4, R8    // remaining blocks
	VMOVI $15, V28.B16
	VMOVI $8, V29.B16

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVI0(31)
	MOVI0(30)
	CBZ  R7, tail
	MOVD R7, R12

group:
	LOADW4_Q4
	GROUP(DOT32_SDOT, R10, R11, V31)
	SUBS $1, R12
	BNE  group

tail:
	CBZ  R8, done
	MOVD R8, R12

tail1:
	LOADW1_Q4
	TAIL1(DOT32_SDOT, R10, R11, F30)
	SUBS $1, R12
	BNE  tail1

done:
	HSUM4(31)
	FADDS  F30, F31, F31
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func q4_0Vec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q4_0Vec4Dot(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	LSL  $2, R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R8
	MOVD xstride+104(FP), R7
	ADD  R7, R8, R10
	ADD  R7, R10, R11
	ADD  R7, R11, R12
	LSR  $2, R5, R6
	AND  $3, R5, R7
	VMOVI $15, V28.B16
	VMOVI $8, V29.B16

row:
	MOVD R2, R9
	MOVD R8, R15
	MOVD R10, R16
	MOVD R11, R17
	MOVD R12, R19
	ADD  R5<<6, R8, R20
	ADD  R5<<6, R10, R21
	ADD  R5<<6, R11, R22
	ADD  R5<<6, R12, R23
	MOVI0(12)
	MOVI0(13)
	MOVI0(14)
	MOVI0(15)
	MOVI0(18)
	MOVI0(19)
	MOVI0(30)
	MOVI0(31)
	CBZ  R6, tail
	MOVD R6, R14

group:
	LOADW4_Q4
	GROUP(DOT32_SDOT, R15, R20, V12)
	GROUP(DOT32_SDOT, R16, R21, V13)
	GROUP(DOT32_SDOT, R17, R22, V14)
	GROUP(DOT32_SDOT, R19, R23, V15)
	SUBS $1, R14
	BNE  group

tail:
	CBZ  R7, done
	MOVD R7, R14

tail1:
	LOADW1_Q4
	TAIL1(DOT32_SDOT, R15, R20, F18)
	TAIL1(DOT32_SDOT, R16, R21, F19)
	TAIL1(DOT32_SDOT, R17, R22, F30)
	TAIL1(DOT32_SDOT, R19, R23, F31)
	SUBS $1, R14
	BNE  tail1

done:
	HSUM4(12)
	FADDS F18, F12, F12
	FMOVS F12, (R0)
	HSUM4(13)
	FADDS F19, F13, F13
	ADD   R1, R0, R13
	FMOVS F13, (R13)
	HSUM4(14)
	FADDS F30, F14, F14
	ADD   R1, R13, R13
	FMOVS F14, (R13)
	HSUM4(15)
	FADDS F31, F15, F15
	ADD   R1, R13, R13
	FMOVS F15, (R13)
	ADD   $4, R0
	ADD   R3, R2
	SUBS  $1, R4
	BNE   row
	RET
