//go:build arm64 && gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Q8_0 and Q4_0 weights times four activation rows (q8a layout) with
// SMMLA, for the i8mm tier: two weight rows by two activation rows per
// 2x2 int32 tile, lanes (w0,x0) (w0,x1) (w1,x0) (w1,x1). Each output
// still gets exactly the float sequence of q8a_neon_arm64.s: block b's
// exact sum times (dw*dx) FMA'd into accumulator b%4, tail blocks into a
// fifth, then ((a0+a1)+(a2+a3)) + tail, so the results are bit-identical
// to the dotprod one-row kernels'. rows must be even (the Go wrapper
// runs an odd last row with the dotprod kernel).
//
// Registers: V0-V3 the two rows' block (Q4_0 unpacked to q-8), V4-V7 its
// four 8-element chunks of both rows (ZIP1/ZIP2 .2D), V8-V11 two
// activation rows' block, V12-V15 their chunks, V16 the int tile, V17
// the weight scales (dw0 dw0 dw1 dw1), V18 activation d (dx0 dx1 dx0 dx1),
// V19 their product, V20-V23 and V24-V27 the block-lane accumulators of
// activation rows 0-1 and 2-3, V30/V31 their tails, V28/V29 Q4_0's 0x0f
// and 8.

#define LOADW_Q8 \
	VLD1.P 2(R9), V17.H[0]; VLD1.P 32(R9), [V0.B16, V1.B16]; \
	VLD1.P 2(R10), V17.H[1]; VLD1.P 32(R10), [V2.B16, V3.B16]

#define LOADW_Q4 \
	VLD1.P 2(R9), V17.H[0]; VLD1.P 16(R9), [V0.B16]; \
	VLD1.P 2(R10), V17.H[1]; VLD1.P 16(R10), [V2.B16]; \
	VUSHR $4, V0.B16, V1.B16; VAND V28.B16, V0.B16, V0.B16; VSUB V29.B16, V0.B16, V0.B16; VSUB V29.B16, V1.B16, V1.B16; \
	VUSHR $4, V2.B16, V3.B16; VAND V28.B16, V2.B16, V2.B16; VSUB V29.B16, V2.B16, V2.B16; VSUB V29.B16, V3.B16, V3.B16

// WPREP: the loaded block's scales widened and paired, its chunks zipped.
#define WPREP \
	FCVTL_4S(17, 17); VZIP1 V17.S4, V17.S4, V17.S4; \
	VZIP1 V2.D2, V0.D2, V4.D2; VZIP2 V2.D2, V0.D2, V5.D2; \
	VZIP1 V3.D2, V1.D2, V6.D2; VZIP2 V3.D2, V1.D2, V7.D2

// PAIR: the block times activation rows at XA, XB (quants) and DA, DB
// (float d), all advanced, FMA'd into ACC.
#define PAIR(XA, XB, DA, DB, ACC) \
	VLD1.P 32(XA), [V8.B16, V9.B16]; VLD1.P 32(XB), [V10.B16, V11.B16]; \
	VZIP1 V10.D2, V8.D2, V12.D2; VZIP2 V10.D2, V8.D2, V13.D2; \
	VZIP1 V11.D2, V9.D2, V14.D2; VZIP2 V11.D2, V9.D2, V15.D2; \
	MOVI0(16); SMMLA_4S(16, 4, 12); SMMLA_4S(16, 5, 13); SMMLA_4S(16, 6, 14); SMMLA_4S(16, 7, 15); \
	SCVTF_4S(16, 16); \
	VLD1.P 4(DA), V18.S[0]; VLD1.P 4(DB), V18.S[1]; VDUP V18.D[0], V18.D2; \
	FMUL_4S(19, 17, 18); \
	VFMLA V16.S4, V19.S4, ACC.S4

#define BLOCK(LOADW, ACCA, ACCB) \
	LOADW; WPREP; \
	PAIR(R15, R16, R20, R21, ACCA); \
	PAIR(R17, R19, R22, R23, ACCB)

// FINISH: tile accumulators A0-A3 and tail T reduced into V0, whose
// lanes (w0,xa) (w0,xb) (w1,xa) (w1,xb) are stored as (w0,w1) at OA and
// OB.
#define FINISH(A0, A1, A2, A3, T, OA, OB) \
	FADD_4S(A0, A0, A1); FADD_4S(A2, A2, A3); FADD_4S(A0, A0, A2); FADD_4S(0, A0, T); \
	VUZP1 V0.S4, V0.S4, V1.S4; VUZP2 V0.S4, V0.S4, V2.S4; \
	FMOVD F1, (OA); FMOVD F2, (OB)

// MMBODY is the kernel for one block type:
// func(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
#define MMBODY(LOADW) \
	MOVD out_base+0(FP), R0; \
	MOVD ostride+24(FP), R1; \
	LSL  $2, R1; \
	MOVD w_base+32(FP), R2; \
	MOVD stride+56(FP), R3; \
	MOVD rows+64(FP), R4; \
	MOVD blocks+72(FP), R5; \
	MOVD x_base+80(FP), R8; \
	MOVD xstride+104(FP), R7; \
	ADD  R7, R8, R11; \
	ADD  R7, R11, R12; \
	ADD  R7, R12, R13; \
	LSR  $2, R5, R6; \
	AND  $3, R5, R7; \
	VMOVI $15, V28.B16; \
	VMOVI $8, V29.B16; \
row: \
	MOVD R2, R9; \
	ADD  R3, R2, R10; \
	MOVD R8, R15; \
	MOVD R11, R16; \
	MOVD R12, R17; \
	MOVD R13, R19; \
	ADD  R5<<6, R8, R20; \
	ADD  R5<<6, R11, R21; \
	ADD  R5<<6, R12, R22; \
	ADD  R5<<6, R13, R23; \
	MOVI0(20); MOVI0(21); MOVI0(22); MOVI0(23); \
	MOVI0(24); MOVI0(25); MOVI0(26); MOVI0(27); \
	MOVI0(30); MOVI0(31); \
	CBZ  R6, tail; \
	MOVD R6, R14; \
group: \
	BLOCK(LOADW, V20, V24); \
	BLOCK(LOADW, V21, V25); \
	BLOCK(LOADW, V22, V26); \
	BLOCK(LOADW, V23, V27); \
	SUBS $1, R14; \
	BNE  group; \
tail: \
	CBZ  R7, done; \
	MOVD R7, R14; \
tail1: \
	BLOCK(LOADW, V30, V31); \
	SUBS $1, R14; \
	BNE  tail1; \
done: \
	ADD  R1, R0, R24; \
	FINISH(20, 21, 22, 23, 30, R0, R24); \
	ADD  R1, R24, R25; \
	ADD  R1, R25, R26; \
	FINISH(24, 25, 26, 27, 31, R25, R26); \
	ADD  $8, R0; \
	ADD  R3<<1, R2; \
	SUBS $2, R4; \
	BNE  row; \
	RET

// func q8_0Vec4MM(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q8_0Vec4MM(SB), NOSPLIT, $0-112
	MMBODY(LOADW_Q8)

// func q4_0Vec4MM(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q4_0Vec4MM(SB), NOSPLIT, $0-112
	MMBODY(LOADW_Q4)
