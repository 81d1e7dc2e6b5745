//go:build arm64 && gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Q4_K, Q5_K and Q6_K weights times activations in the q8ka layout (see
// actlayout.go), for the neon and dotprod tiers. Per super-block the exact
// integer sums of the 8 (Q4_K, Q5_K) or 16 (Q6_K) sub-blocks are reduced to
// vectors of four, multiplied by the sub-block scales (int32 MUL/MLA), and
// the resulting 4 int32 lanes are added to the float lanes with
// acc += (d*yd) * float(lanes) (one FMA). The mins of Q4_K and Q5_K
// enter a scalar: m -= (dmin*yd) * float(sum over j of m_j times the
// activations' 32-quant sums).
// A row's result is ((a0+a1)+(a2+a3)) (+ m for Q4_K and Q5_K).

// DOT32_SDOT: 4 int32 lanes summing to A0.X0 + A1.X1 (16 int8 each).
#define DOT32_SDOT(D, A0, A1, X0, X1) MOVI0(D); SDOT_4S(D, A0, X0); SDOT_4S(D, A1, X1)

// DOT32_Q4_NEON: the same with widening multiplies (Q4_K and Q5_K
// products are at most 31*127, four per int16 lane).
#define DOT32_Q4_NEON(D, A0, A1, X0, X1) SMULL_8H(26, A0, X0); SMLAL2_8H(26, A0, X0); SMLAL_8H(26, A1, X1); SMLAL2_8H(26, A1, X1); SADDLP_4S(D, 26)

// DOT16_*: 4 int32 lanes summing to A.X (Q6_K products are at most
// 32*127, two per int16 lane).
#define DOT16_SDOT(D, A, X) MOVI0(D); SDOT_4S(D, A, X)
#define DOT16_NEON(D, A, X) SMULL_8H(22, A, X); SMLAL2_8H(22, A, X); SADDLP_4S(D, 22)

// Q4_K and Q5_K: R9 the weights, R10 the activation quants, R11 their d,
// R12 their 32-quant sums. V18 = [d*yd, dmin*yd], V24/V25 the scales of
// sub-blocks 0-3/4-7 as int32, V8-V15 the sub-block sums, V28 = 0x0f
// bytes, V29 the mins' scalar, V31 the float lanes.

// Q4K_QUARTER: 64 elements (32 bytes of nibbles): sub-block sums into DLO
// (low nibbles) and DHI (high nibbles).
#define Q4K_QUARTER(DOT, DLO, DHI) \
	VLD1.P 32(R9), [V0.B16, V1.B16]; \
	VUSHR  $4, V0.B16, V2.B16; \
	VUSHR  $4, V1.B16, V3.B16; \
	VAND   V28.B16, V0.B16, V0.B16; \
	VAND   V28.B16, V1.B16, V1.B16; \
	VLD1.P 64(R10), [V4.B16, V5.B16, V6.B16, V7.B16]; \
	DOT(DLO, 0, 1, 4, 5); \
	DOT(DHI, 2, 3, 6, 7)

// KQ_HEAD: the scales, d and mins of a Q4_K/Q5_K super-block at R9 (left
// at the quants, or Q5_K's high bits): V18 = [d*yd, dmin*yd], V24/V25 the
// sub-block scales, and the mins' term subtracted from F29.
#define KQ_HEAD \
	VLD1.P 4(R9), V18.S[0]; \
	FCVTL_4S(18, 18); \
	FMOVS.P 4(R11), F19; \
	VDUP   V19.S[0], V19.S4; \
	FMUL_4S(18, 18, 19); \
	VDUP   V18.S[1], V21.S4; \
	MOVWU  (R9), R13; \
	MOVWU  4(R9), R14; \
	MOVWU  8(R9), R15; \
	ADD    $12, R9; \
	ANDW   $0x3f3f3f3f, R13, R16; \
	ANDW   $0x3f3f3f3f, R14, R17; \
	LSRW   $6, R13, R19; \
	ANDW   $0x03030303, R19, R19; \
	ANDW   $0x0f0f0f0f, R15, R20; \
	ORRW   R19<<4, R20, R19; \
	LSRW   $6, R14, R20; \
	ANDW   $0x03030303, R20, R20; \
	LSRW   $4, R15, R21; \
	ANDW   $0x0f0f0f0f, R21, R21; \
	ORRW   R20<<4, R21, R20; \
	ORR    R19<<32, R16, R16; \
	ORR    R20<<32, R17, R17; \
	VMOV   R16, V22.D[0]; \
	VMOV   R17, V23.D[0]; \
	VUXTL  V22.B8, V22.H8; \
	VUXTL  V22.H4, V24.S4; \
	VUXTL2 V22.H8, V25.S4; \
	VUXTL  V23.B8, V23.H8; \
	VLD1.P 16(R12), [V26.H8]; \
	SMULL_4S(27, 23, 26); \
	SMLAL2_4S(27, 23, 26); \
	VADDV  V27.S4, V27; \
	SCVTF_S(27, 27); \
	FMSUBS F21, F29, F27, F29

// KQ_TAIL: the 8 sub-block sums V8-V15 times the scales, into V31.
#define KQ_TAIL \
	VADDP  V9.S4, V8.S4, V16.S4; \
	VADDP  V11.S4, V10.S4, V17.S4; \
	VADDP  V17.S4, V16.S4, V16.S4; \
	VADDP  V13.S4, V12.S4, V17.S4; \
	VADDP  V15.S4, V14.S4, V20.S4; \
	VADDP  V20.S4, V17.S4, V17.S4; \
	MUL_4S(16, 16, 24); \
	MLA_4S(16, 17, 25); \
	SCVTF_4S(16, 16); \
	FMLA_S0(31, 16, 18)

#define Q4K_SUPER(DOT) \
	KQ_HEAD; \
	Q4K_QUARTER(DOT, 8, 9); \
	Q4K_QUARTER(DOT, 10, 11); \
	Q4K_QUARTER(DOT, 12, 13); \
	Q4K_QUARTER(DOT, 14, 15); \
	KQ_TAIL

// Q5K_QUARTER: as Q4K_QUARTER with the fifth bits: V20/V21 hold the high
// bits of elements 0-15/16-31 of each quarter, shifted right by 2 after
// each (bit 0 for the low nibbles, bit 1 for the high ones); V30 = 0x10.
#define Q5K_BIT(QH, SH, Q) VSHL $SH, QH.B16, V22.B16; VAND V30.B16, V22.B16, V22.B16; VORR V22.B16, Q.B16, Q.B16
#define Q5K_QUARTER(DOT, DLO, DHI) \
	VLD1.P 32(R9), [V0.B16, V1.B16]; \
	VUSHR  $4, V0.B16, V2.B16; \
	VUSHR  $4, V1.B16, V3.B16; \
	VAND   V28.B16, V0.B16, V0.B16; \
	VAND   V28.B16, V1.B16, V1.B16; \
	Q5K_BIT(V20, 4, V0); \
	Q5K_BIT(V21, 4, V1); \
	Q5K_BIT(V20, 3, V2); \
	Q5K_BIT(V21, 3, V3); \
	VUSHR  $2, V20.B16, V20.B16; \
	VUSHR  $2, V21.B16, V21.B16; \
	VLD1.P 64(R10), [V4.B16, V5.B16, V6.B16, V7.B16]; \
	DOT(DLO, 0, 1, 4, 5); \
	DOT(DHI, 2, 3, 6, 7)

#define Q5K_SUPER(DOT) \
	KQ_HEAD; \
	VLD1.P 32(R9), [V20.B16, V21.B16]; \
	Q5K_QUARTER(DOT, 8, 9); \
	Q5K_QUARTER(DOT, 10, 11); \
	Q5K_QUARTER(DOT, 12, 13); \
	Q5K_QUARTER(DOT, 14, 15); \
	KQ_TAIL

// Q6_K: R9 the weights (ql, advanced by the halves), R13 their qh, R10
// the activation quants, R11 their d. V18 = d*yd, V24-V27 the scales of
// groups 0-3, 4-7, 8-11, 12-15 as int32, V10-V17 the group sums of a
// half, V23 the scaled sums, V28 = 0x0f, V29 = 0x30, V30 = 32 (bytes).

// Q6K_LO/HI4/HI2 put 4 bits of QL (its low or high nibbles) in V6 and 2
// bits of QH, moved to bits 4-5, in V7; Q6K_DOT forms the 16 weights
// q - 32 and their products with the next 16 activations, into D.
#define Q6K_LO(QL, QH, SH) VAND V28.B16, QL.B16, V6.B16; VSHL $SH, QH.B16, V7.B16; VAND V29.B16, V7.B16, V7.B16
#define Q6K_HI4(QL, QH) VUSHR $4, QL.B16, V6.B16; VAND V29.B16, QH.B16, V7.B16
#define Q6K_HI2(QL, QH) VUSHR $4, QL.B16, V6.B16; VUSHR $2, QH.B16, V7.B16; VAND V29.B16, V7.B16, V7.B16
#define Q6K_DOT(DOT, D) \
	VORR   V7.B16, V6.B16, V6.B16; \
	VSUB   V30.B16, V6.B16, V6.B16; \
	VLD1.P 16(R10), [V8.B16]; \
	DOT(D, 6, 8)

// Q6K_HALF: 128 elements; V20/V21 get the sums of groups 0-3/4-7.
#define Q6K_HALF(DOT) \
	VLD1.P 64(R9), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	VLD1.P 32(R13), [V4.B16, V5.B16]; \
	Q6K_LO(V0, V4, 4); Q6K_DOT(DOT, 10); \
	Q6K_LO(V1, V5, 4); Q6K_DOT(DOT, 11); \
	Q6K_LO(V2, V4, 2); Q6K_DOT(DOT, 12); \
	Q6K_LO(V3, V5, 2); Q6K_DOT(DOT, 13); \
	Q6K_HI4(V0, V4); Q6K_DOT(DOT, 14); \
	Q6K_HI4(V1, V5); Q6K_DOT(DOT, 15); \
	Q6K_HI2(V2, V4); Q6K_DOT(DOT, 16); \
	Q6K_HI2(V3, V5); Q6K_DOT(DOT, 17); \
	VADDP  V11.S4, V10.S4, V20.S4; \
	VADDP  V13.S4, V12.S4, V21.S4; \
	VADDP  V21.S4, V20.S4, V20.S4; \
	VADDP  V15.S4, V14.S4, V21.S4; \
	VADDP  V17.S4, V16.S4, V10.S4; \
	VADDP  V10.S4, V21.S4, V21.S4

#define Q6K_SUPER(DOT) \
	FMOVQ  192(R9), F22; \
	SXTL_8H(23, 22); \
	SXTL2_8H(22, 22); \
	SXTL_4S(24, 23); \
	SXTL2_4S(25, 23); \
	SXTL_4S(26, 22); \
	SXTL2_4S(27, 22); \
	ADD    $208, R9, R13; \
	VLD1   (R13), V18.H[0]; \
	FCVTHS F18, F18; \
	FMOVS.P 4(R11), F19; \
	FMULS  F19, F18, F18; \
	ADD    $128, R9, R13; \
	Q6K_HALF(DOT); \
	MUL_4S(23, 20, 24); \
	MLA_4S(23, 21, 25); \
	Q6K_HALF(DOT); \
	MLA_4S(23, 20, 26); \
	MLA_4S(23, 21, 27); \
	SCVTF_4S(23, 23); \
	FMLA_S0(31, 23, 18); \
	ADD    $82, R9

// func q4kVecNEON(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q4kVecNEON(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<8, R5, R6 // the d of the super-blocks
	MOVD $292, R7
	MUL  R4, R7, R7
	ADD  R5, R7, R7    // their 32-quant sums
	VMOVI $15, V28.B16
	VMOVI $0x10, V30.B16

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVD R7, R12
	MOVD R4, R8
	MOVI0(31)
	MOVI0(29)

super:
	Q4K_SUPER(DOT32_Q4_NEON)
	SUBS $1, R8
	BNE  super

	HSUM4(31)
	FADDS  F29, F31, F31
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func q5kVecNEON(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q5kVecNEON(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<8, R5, R6 // the d of the super-blocks
	MOVD $292, R7
	MUL  R4, R7, R7
	ADD  R5, R7, R7    // their 32-quant sums
	VMOVI $15, V28.B16
	VMOVI $0x10, V30.B16

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVD R7, R12
	MOVD R4, R8
	MOVI0(31)
	MOVI0(29)

super:
	Q5K_SUPER(DOT32_Q4_NEON)
	SUBS $1, R8
	BNE  super

	HSUM4(31)
	FADDS  F29, F31, F31
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func q6kVecNEON(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q6kVecNEON(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<8, R5, R6 // the d of the super-blocks
	VMOVI $15, V28.B16
	VMOVI $0x30, V29.B16
	VMOVI $32, V30.B16

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVD R4, R8
	MOVI0(31)

super:
	Q6K_SUPER(DOT16_NEON)
	SUBS $1, R8
	BNE  super

	HSUM4(31)
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func q4kVecDot(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q4kVecDot(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<8, R5, R6 // the d of the super-blocks
	MOVD $292, R7
	MUL  R4, R7, R7
	ADD  R5, R7, R7    // their 32-quant sums
	VMOVI $15, V28.B16
	VMOVI $0x10, V30.B16

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVD R7, R12
	MOVD R4, R8
	MOVI0(31)
	MOVI0(29)

super:
	Q4K_SUPER(DOT32_SDOT)
	SUBS $1, R8
	BNE  super

	HSUM4(31)
	FADDS  F29, F31, F31
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func q5kVecDot(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q5kVecDot(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<8, R5, R6 // the d of the super-blocks
	MOVD $292, R7
	MUL  R4, R7, R7
	ADD  R5, R7, R7    // their 32-quant sums
	VMOVI $15, V28.B16
	VMOVI $0x10, V30.B16

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVD R7, R12
	MOVD R4, R8
	MOVI0(31)
	MOVI0(29)

super:
	Q5K_SUPER(DOT32_SDOT)
	SUBS $1, R8
	BNE  super

	HSUM4(31)
	FADDS  F29, F31, F31
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func q6kVecDot(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q6kVecDot(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD blocks+56(FP), R4
	MOVD x_base+64(FP), R5
	ADD  R4<<8, R5, R6 // the d of the super-blocks
	VMOVI $15, V28.B16
	VMOVI $0x30, V29.B16
	VMOVI $32, V30.B16

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R6, R11
	MOVD R4, R8
	MOVI0(31)

super:
	Q6K_SUPER(DOT16_SDOT)
	SUBS $1, R8
	BNE  super

	HSUM4(31)
	FMOVS.P F31, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET
