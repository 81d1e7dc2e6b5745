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

// Q4K_UNPACK puts a quarter's weights in V0-V3 (elements 0-15, 16-31 of
// the low nibbles, then of the high ones); KQ_DOTS multiplies them by the
// next 64 activations at XP.
#define Q4K_UNPACK \
	VLD1.P 32(R9), [V0.B16, V1.B16]; \
	VUSHR  $4, V0.B16, V2.B16; \
	VUSHR  $4, V1.B16, V3.B16; \
	VAND   V28.B16, V0.B16, V0.B16; \
	VAND   V28.B16, V1.B16, V1.B16
#define KQ_DOTS(DOT, XP, DLO, DHI) \
	VLD1.P 64(XP), [V4.B16, V5.B16, V6.B16, V7.B16]; \
	DOT(DLO, 0, 1, 4, 5); \
	DOT(DHI, 2, 3, 6, 7)
// Q4K_QUARTER: 64 elements (32 bytes of nibbles): sub-block sums into DLO
// (low nibbles) and DHI (high nibbles).
#define Q4K_QUARTER(DOT, DLO, DHI) Q4K_UNPACK; KQ_DOTS(DOT, R10, DLO, DHI)

// KQ_SCALES: the 12 bytes of 6-bit scales and mins at R9 (advanced past
// them): V24/V25 the scales of sub-blocks 0-3/4-7 as int32, V23 the mins
// as int16. Scratch R13-R17, R19-R21, V22.
#define KQ_SCALES \
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
	VUXTL  V23.B8, V23.H8

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
	KQ_SCALES; \
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
#define Q5K_UNPACK \
	Q4K_UNPACK; \
	Q5K_BIT(V20, 4, V0); \
	Q5K_BIT(V21, 4, V1); \
	Q5K_BIT(V20, 3, V2); \
	Q5K_BIT(V21, 3, V3); \
	VUSHR  $2, V20.B16, V20.B16; \
	VUSHR  $2, V21.B16, V21.B16
#define Q5K_QUARTER(DOT, DLO, DHI) Q5K_UNPACK; KQ_DOTS(DOT, R10, DLO, DHI)

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

// The 4-row kernels (one weight row times four activation rows, rows
// xstride bytes apart): each quarter (Q4_K, Q5_K) or 64-element group of
// 4 (Q6_K) is loaded and unpacked once and multiplied by the four rows in
// turn. The float steps per activation row are those of the one-row
// kernels (the same products in the same lanes, the same FMAs, the same
// final sum), so the results are bit-identical; the integer sums are only
// regrouped, which is exact. Per super-block the four rows' yd form one
// vector: lane r of V18 is d*yd_r, and for Q4_K and Q5_K lane r of V11
// holds row r's mins' scalar (FMLS per lane rounds like FMSUB).
//
// Q4_K and Q5_K: R9 the weights, R10-R12 and R22 the activation quants of
// rows 0-3, R23 and R24 row 0's d and 32-quant sums (rows 1-3 at R7, R8,
// R25 = 1, 2, 3 times xstride further). V0-V3 the unpacked weights, V4-V7
// activations, V8/V9 a row's sums of the quarter's two sub-blocks, V23,
// V27, V29, V31 their pair sums (kept from an even quarter to the next),
// V16, V17, V19, V10 the scaled sub-block sums, V12-V15 the float lanes
// of rows 0-3. Q5_K adds V20/V21 (high bits), V22, V30 as in Q5K_BIT.

// K4_HEAD: as KQ_HEAD for four activation rows.
#define K4_LANE(OFF, BASE, V) ADD OFF, BASE, R13; VLD1 (R13), V
#define K4_MINS(P, OFF) ADD OFF, R24, R13; VLD1 (R13), [V26.H8]; SMULL_4S(P, 23, 26); SMLAL2_4S(P, 23, 26)
#define K4_HEAD \
	VLD1.P 4(R9), V18.S[0]; \
	FCVTL_4S(18, 18); \
	VDUP   V18.S[1], V21.S4; \
	VDUP   V18.S[0], V18.S4; \
	K4_LANE(R7, R23, V19.S[1]); \
	K4_LANE(R8, R23, V19.S[2]); \
	K4_LANE(R25, R23, V19.S[3]); \
	VLD1.P 4(R23), V19.S[0]; \
	FMUL_4S(18, 18, 19); \
	FMUL_4S(21, 21, 19); \
	KQ_SCALES; \
	K4_MINS(1, R7); \
	K4_MINS(2, R8); \
	K4_MINS(3, R25); \
	VLD1.P 16(R24), [V26.H8]; \
	SMULL_4S(0, 23, 26); \
	SMLAL2_4S(0, 23, 26); \
	VADDP  V1.S4, V0.S4, V0.S4; \
	VADDP  V3.S4, V2.S4, V2.S4; \
	VADDP  V2.S4, V0.S4, V0.S4; \
	SCVTF_4S(0, 0); \
	VFMLS  V21.S4, V0.S4, V11.S4

// K4_EVEN/K4_ODD: one row's part of quarter 0 or 2 / 1 or 3: the pair
// sums P of the first, then the sums of four sub-blocks, times the scales
// SC, into I (OP: MUL_4S for quarter 1, MLA_4S for quarter 3).
#define K4_EVEN(DOT, XP, P) KQ_DOTS(DOT, XP, 8, 9); VADDP V9.S4, V8.S4, P.S4
#define K4_ODD(DOT, XP, P, OP, I, SC) \
	KQ_DOTS(DOT, XP, 8, 9); \
	VADDP  V9.S4, V8.S4, V8.S4; \
	VADDP  V8.S4, P.S4, V8.S4; \
	OP(I, 8, SC)
#define K4_EVEN4(DOT) \
	K4_EVEN(DOT, R10, V23); \
	K4_EVEN(DOT, R11, V27); \
	K4_EVEN(DOT, R12, V29); \
	K4_EVEN(DOT, R22, V31)
#define K4_ODD4(DOT, OP, SC) \
	K4_ODD(DOT, R10, V23, OP, 16, SC); \
	K4_ODD(DOT, R11, V27, OP, 17, SC); \
	K4_ODD(DOT, R12, V29, OP, 19, SC); \
	K4_ODD(DOT, R22, V31, OP, 10, SC)

// K4_TAIL: the scaled sums I0-I3 of rows 0-3 into their float lanes.
#define K4_TAIL(I0, I1, I2, I3) \
	SCVTF_4S(I0, I0); \
	FMLA_S0(12, I0, 18); \
	SCVTF_4S(I1, I1); \
	FMLA_SI(13, I1, 18, 1); \
	SCVTF_4S(I2, I2); \
	FMLA_SI(14, I2, 18, 2); \
	SCVTF_4S(I3, I3); \
	FMLA_SI(15, I3, 18, 3)

#define Q4K4_SUPER(DOT) \
	K4_HEAD; \
	Q4K_UNPACK; \
	K4_EVEN4(DOT); \
	Q4K_UNPACK; \
	K4_ODD4(DOT, MUL_4S, 24); \
	Q4K_UNPACK; \
	K4_EVEN4(DOT); \
	Q4K_UNPACK; \
	K4_ODD4(DOT, MLA_4S, 25); \
	K4_TAIL(16, 17, 19, 10)

#define Q5K4_SUPER(DOT) \
	K4_HEAD; \
	VLD1.P 32(R9), [V20.B16, V21.B16]; \
	Q5K_UNPACK; \
	K4_EVEN4(DOT); \
	Q5K_UNPACK; \
	K4_ODD4(DOT, MUL_4S, 24); \
	Q5K_UNPACK; \
	K4_EVEN4(DOT); \
	Q5K_UNPACK; \
	K4_ODD4(DOT, MLA_4S, 25); \
	K4_TAIL(16, 17, 19, 10)

// K4_STORE: row r's result ((a0+a1)+(a2+a3)) (+ lane r of V11 with MINS)
// to out[r*ostride]; R0 moves to the next weight row.
#define K4_ADDMIN(F, L) VDUP V11.S[L], V26.S4; FADDS F26, F, F
#define K4_NOMIN(F, L)
#define K4_STORE(MIN) \
	HSUM4(12); \
	MIN(F12, 0); \
	FMOVS  F12, (R0); \
	HSUM4(13); \
	MIN(F13, 1); \
	ADD    R1, R0, R13; \
	FMOVS  F13, (R13); \
	HSUM4(14); \
	MIN(F14, 2); \
	ADD    R1, R13, R13; \
	FMOVS  F14, (R13); \
	HSUM4(15); \
	MIN(F15, 3); \
	ADD    R1, R13, R13; \
	FMOVS  F15, (R13); \
	ADD    $4, R0

// K4_SETUP, after the arguments are loaded (R0 out, R1 ostride, R2 w,
// R3 stride, R4 rows, R5 blocks, R10 x, R7 xstride): R1 in bytes,
// R11/R12/R22 activation rows 1-3, R8/R25 2 and 3 times xstride, R23 row
// 0's d.
#define K4_SETUP \
	LSL  $2, R1; \
	ADD  R7, R7, R8; \
	ADD  R7, R8, R25; \
	ADD  R7, R10, R11; \
	ADD  R8, R10, R12; \
	ADD  R25, R10, R22; \
	ADD  R5<<8, R10, R23

// KQ4_BODY: the row loop of the Q4_K/Q5_K 4-row kernels.
#define KQ4_BODY(SUPER, DOT) \
	K4_SETUP; \
	MOVD $292, R24; \
	MUL  R5, R24, R24; \
	ADD  R10, R24, R24; \
	VMOVI $15, V28.B16; \
	VMOVI $0x10, V30.B16; \
row: \
	MOVD R2, R9; \
	MOVD R5, R6; \
	MOVI0(11); \
	MOVI0(12); \
	MOVI0(13); \
	MOVI0(14); \
	MOVI0(15); \
super: \
	SUPER(DOT); \
	SUBS $1, R6; \
	BNE  super; \
	K4_STORE(K4_ADDMIN); \
	SUB  R5<<8, R10; \
	SUB  R5<<8, R11; \
	SUB  R5<<8, R12; \
	SUB  R5<<8, R22; \
	SUB  R5<<2, R23; \
	SUB  R5<<4, R24; \
	ADD  R3, R2; \
	SUBS $1, R4; \
	BNE  row; \
	RET

// func q4kVec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q4kVec4NEON(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R10
	MOVD xstride+104(FP), R7
	KQ4_BODY(Q4K4_SUPER, DOT32_Q4_NEON)

// func q4kVec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q4kVec4Dot(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R10
	MOVD xstride+104(FP), R7
	KQ4_BODY(Q4K4_SUPER, DOT32_SDOT)

// func q5kVec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q5kVec4NEON(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R10
	MOVD xstride+104(FP), R7
	KQ4_BODY(Q5K4_SUPER, DOT32_Q4_NEON)

// func q5kVec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q5kVec4Dot(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R10
	MOVD xstride+104(FP), R7
	KQ4_BODY(Q5K4_SUPER, DOT32_SDOT)

// Q6_K, 4 rows: R9 the weights (ql), R13 their qh, R10-R12/R22 the
// activation quants of rows 0-3, R23 row 0's d. Per half, V0-V3 hold ql
// and V4/V5 qh; groups 0-3, then 4-7, are unpacked into V6-V9 and
// multiplied by each row (activations V10, group sums V11, V20, V21),
// giving the four groups' sums times their scales into I (V16, V17, V19,
// V23 for rows 0-3). V31 scratch, other registers as in q6kVecNEON.

// Q6K4_W: W = (the 4 bits of QL at LO) | (2 bits of QH, at bits 4-5)
// minus 32.
#define Q6K4_W(LO, HI, W) LO; HI; VORR V31.B16, W.B16, W.B16; VSUB V30.B16, W.B16, W.B16
#define Q6K4_QLO(QL, W) VAND V28.B16, QL.B16, W.B16
#define Q6K4_QHI(QL, W) VUSHR $4, QL.B16, W.B16
#define Q6K4_H(QH, SH) VSHL $SH, QH.B16, V31.B16; VAND V29.B16, V31.B16, V31.B16
#define Q6K4_H4(QH) VAND V29.B16, QH.B16, V31.B16
#define Q6K4_H2(QH) VUSHR $2, QH.B16, V31.B16; VAND V29.B16, V31.B16, V31.B16

#define Q6K4_ROW(DOT, XP, OP, I, SC) \
	VLD1.P 16(XP), [V10.B16]; \
	DOT(11, 6, 10); \
	VLD1.P 16(XP), [V10.B16]; \
	DOT(20, 7, 10); \
	VADDP  V20.S4, V11.S4, V11.S4; \
	VLD1.P 16(XP), [V10.B16]; \
	DOT(20, 8, 10); \
	VLD1.P 16(XP), [V10.B16]; \
	DOT(21, 9, 10); \
	VADDP  V21.S4, V20.S4, V20.S4; \
	VADDP  V20.S4, V11.S4, V11.S4; \
	OP(I, 11, SC)
#define Q6K4_ROWS(DOT, OP, SC) \
	Q6K4_ROW(DOT, R10, OP, 16, SC); \
	Q6K4_ROW(DOT, R11, OP, 17, SC); \
	Q6K4_ROW(DOT, R12, OP, 19, SC); \
	Q6K4_ROW(DOT, R22, OP, 23, SC)

// Q6K4_HALF: 128 elements; OPA/OPB and SCA/SCB for groups 0-3 and 4-7.
#define Q6K4_HALF(DOT, OPA, SCA, OPB, SCB) \
	VLD1.P 64(R9), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	VLD1.P 32(R13), [V4.B16, V5.B16]; \
	Q6K4_W(Q6K4_QLO(V0, V6), Q6K4_H(V4, 4), V6); \
	Q6K4_W(Q6K4_QLO(V1, V7), Q6K4_H(V5, 4), V7); \
	Q6K4_W(Q6K4_QLO(V2, V8), Q6K4_H(V4, 2), V8); \
	Q6K4_W(Q6K4_QLO(V3, V9), Q6K4_H(V5, 2), V9); \
	Q6K4_ROWS(DOT, OPA, SCA); \
	Q6K4_W(Q6K4_QHI(V0, V6), Q6K4_H4(V4), V6); \
	Q6K4_W(Q6K4_QHI(V1, V7), Q6K4_H4(V5), V7); \
	Q6K4_W(Q6K4_QHI(V2, V8), Q6K4_H2(V4), V8); \
	Q6K4_W(Q6K4_QHI(V3, V9), Q6K4_H2(V5), V9); \
	Q6K4_ROWS(DOT, OPB, SCB)

#define Q6K4_SUPER(DOT) \
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
	VDUP   V18.S[0], V18.S4; \
	K4_LANE(R7, R23, V31.S[1]); \
	K4_LANE(R8, R23, V31.S[2]); \
	K4_LANE(R25, R23, V31.S[3]); \
	VLD1.P 4(R23), V31.S[0]; \
	FMUL_4S(18, 18, 31); \
	ADD    $128, R9, R13; \
	Q6K4_HALF(DOT, MUL_4S, 24, MLA_4S, 25); \
	Q6K4_HALF(DOT, MLA_4S, 26, MLA_4S, 27); \
	K4_TAIL(16, 17, 19, 23); \
	ADD    $82, R9

#define Q6K4_BODY(DOT) \
	K4_SETUP; \
	VMOVI $15, V28.B16; \
	VMOVI $0x30, V29.B16; \
	VMOVI $32, V30.B16; \
row: \
	MOVD R2, R9; \
	MOVD R5, R6; \
	MOVI0(12); \
	MOVI0(13); \
	MOVI0(14); \
	MOVI0(15); \
super: \
	Q6K4_SUPER(DOT); \
	SUBS $1, R6; \
	BNE  super; \
	K4_STORE(K4_NOMIN); \
	SUB  R5<<8, R10; \
	SUB  R5<<8, R11; \
	SUB  R5<<8, R12; \
	SUB  R5<<8, R22; \
	SUB  R5<<2, R23; \
	ADD  R3, R2; \
	SUBS $1, R4; \
	BNE  row; \
	RET

// func q6kVec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q6kVec4NEON(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R10
	MOVD xstride+104(FP), R7
	Q6K4_BODY(DOT16_NEON)

// func q6kVec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q6kVec4Dot(SB), NOSPLIT, $0-112
	MOVD out_base+0(FP), R0
	MOVD ostride+24(FP), R1
	MOVD w_base+32(FP), R2
	MOVD stride+56(FP), R3
	MOVD rows+64(FP), R4
	MOVD blocks+72(FP), R5
	MOVD x_base+80(FP), R10
	MOVD xstride+104(FP), R7
	Q6K4_BODY(DOT16_SDOT)
