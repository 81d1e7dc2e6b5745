//go:build arm64 && gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// W4A16 weights (tensor.W4A16: per 128-group an fp16 d and 64 bytes of
// nibbles in Q4_0 order) times float32 activations, one activation row.
// For each group, four 4-lane accumulators V16-V19 start at zero and
// take the 16-element halves of each 32-element sub-block in turn, chunk
// k (4 elements) of a half by V(16+k) = FMLA(w, x); the values q-8 are
// widened exactly (SXTL to 16 then 32 bits, SCVTF). At the group's end
// V24 += ((V16+V18)+(V17+V19)) * d; a row's result is HSUM4(V24).
// V28 = 15 and V29 = 8 (bytes) unpack the nibbles.

// W4HALF: the 16 int8 values in V(B) times 16 activations at R10
// (advanced) into V16-V19.
#define W4HALF(B) \
	SXTL_8H(2, B); SXTL2_8H(3, B); \
	SXTL_4S(6, 2); SXTL2_4S(7, 2); SXTL_4S(8, 3); SXTL2_4S(9, 3); \
	SCVTF_4S(6, 6); SCVTF_4S(7, 7); SCVTF_4S(8, 8); SCVTF_4S(9, 9); \
	VLD1.P 64(R10), [V10.S4, V11.S4, V12.S4, V13.S4]; \
	VFMLA  V6.S4, V10.S4, V16.S4; \
	VFMLA  V7.S4, V11.S4, V17.S4; \
	VFMLA  V8.S4, V12.S4, V18.S4; \
	VFMLA  V9.S4, V13.S4, V19.S4

// W4SUB: the next sub-block at R9 (advanced): V0 = low nibbles - 8
// (elements 0-15), V1 = high nibbles - 8 (16-31).
#define W4SUB \
	VLD1.P 16(R9), [V0.B16]; \
	VUSHR  $4, V0.B16, V1.B16; \
	VAND   V28.B16, V0.B16, V0.B16; \
	VSUB   V29.B16, V0.B16, V0.B16; \
	VSUB   V29.B16, V1.B16, V1.B16; \
	W4HALF(0); \
	W4HALF(1)

// func w4a16VecNEON(out []float32, w []byte, stride, groups int, x []float32)
TEXT ·w4a16VecNEON(SB), NOSPLIT, $0-88
	MOVD  out_base+0(FP), R0
	MOVD  out_len+8(FP), R1
	MOVD  w_base+24(FP), R2
	MOVD  stride+48(FP), R3
	MOVD  groups+56(FP), R4
	MOVD  x_base+64(FP), R5
	VMOVI $15, V28.B16
	VMOVI $8, V29.B16

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVD R4, R12
	MOVI0(24)

group:
	MOVI0(16)
	MOVI0(17)
	MOVI0(18)
	MOVI0(19)
	VLD1.P 2(R9), V20.H[0]
	FCVTHS F20, F20
	W4SUB
	W4SUB
	W4SUB
	W4SUB
	FADD_4S(16, 16, 18)
	FADD_4S(17, 17, 19)
	FADD_4S(16, 16, 17)
	FMLA_S0(24, 16, 20)
	SUBS $1, R12
	BNE  group

	HSUM4(24)
	FMOVS.P F24, 4(R0)
	ADD     R3, R2
	SUBS    $1, R1
	BNE     row
	RET
