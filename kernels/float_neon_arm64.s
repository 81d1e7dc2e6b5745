//go:build arm64 && gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// F32, F16 and BF16 weights times float32 activations: the first
// 8*chunks elements of each row (the Go wrapper adds the rest). Sixteen
// elements at a time go into four 4-lane accumulators V16-V19 with FMLA
// (an odd last chunk of 8 into V16-V17); a row's result is
// HSUM4((V16+V18)+(V17+V19)). Weights are widened to float32 in V0-V3:
// fp16 by FCVTL, bf16 by interleaving zero half-words below them (V31 = 0).

// LOAD16_*: 16 weights at R9 (advanced) as floats into V0-V3.
#define LOAD16_F32 VLD1.P 64(R9), [V0.S4, V1.S4, V2.S4, V3.S4]
#define LOAD16_F16 VLD1.P 32(R9), [V20.H8, V21.H8]; FCVTL_4S(0, 20); FCVTL2_4S(1, 20); FCVTL_4S(2, 21); FCVTL2_4S(3, 21)
#define LOAD16_BF16 \
	VLD1.P 32(R9), [V20.H8, V21.H8]; \
	VZIP1  V20.H8, V31.H8, V0.H8; \
	VZIP2  V20.H8, V31.H8, V1.H8; \
	VZIP1  V21.H8, V31.H8, V2.H8; \
	VZIP2  V21.H8, V31.H8, V3.H8

// LOAD8_*: 8 weights into V0-V1.
#define LOAD8_F32 VLD1.P 32(R9), [V0.S4, V1.S4]
#define LOAD8_F16 VLD1.P 16(R9), [V20.H8]; FCVTL_4S(0, 20); FCVTL2_4S(1, 20)
#define LOAD8_BF16 VLD1.P 16(R9), [V20.H8]; VZIP1 V20.H8, V31.H8, V0.H8; VZIP2 V20.H8, V31.H8, V1.H8

// func f32VecNEON(out []float32, w []byte, stride, chunks int, x []float32)
TEXT ·f32VecNEON(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD chunks+56(FP), R4
	MOVD x_base+64(FP), R5
	LSR  $1, R4, R6 // pairs of chunks
	AND  $1, R4, R7 // a last single chunk
	MOVI0(31)

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVI0(16)
	MOVI0(17)
	MOVI0(18)
	MOVI0(19)
	CBZ  R6, one
	MOVD R6, R12

loop:
	LOAD16_F32
	VLD1.P 64(R10), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4
	VFMLA  V2.S4, V6.S4, V18.S4
	VFMLA  V3.S4, V7.S4, V19.S4
	SUBS   $1, R12
	BNE    loop

one:
	CBZ    R7, done
	LOAD8_F32
	VLD1.P 32(R10), [V4.S4, V5.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4

done:
	FADD_4S(16, 16, 18)
	FADD_4S(17, 17, 19)
	FADD_4S(16, 16, 17)
	HSUM4(16)
	FMOVS.P F16, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func f16VecNEON(out []float32, w []byte, stride, chunks int, x []float32)
TEXT ·f16VecNEON(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD chunks+56(FP), R4
	MOVD x_base+64(FP), R5
	LSR  $1, R4, R6 // pairs of chunks
	AND  $1, R4, R7 // a last single chunk
	MOVI0(31)

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVI0(16)
	MOVI0(17)
	MOVI0(18)
	MOVI0(19)
	CBZ  R6, one
	MOVD R6, R12

loop:
	LOAD16_F16
	VLD1.P 64(R10), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4
	VFMLA  V2.S4, V6.S4, V18.S4
	VFMLA  V3.S4, V7.S4, V19.S4
	SUBS   $1, R12
	BNE    loop

one:
	CBZ    R7, done
	LOAD8_F16
	VLD1.P 32(R10), [V4.S4, V5.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4

done:
	FADD_4S(16, 16, 18)
	FADD_4S(17, 17, 19)
	FADD_4S(16, 16, 17)
	HSUM4(16)
	FMOVS.P F16, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET

// func bf16VecNEON(out []float32, w []byte, stride, chunks int, x []float32)
TEXT ·bf16VecNEON(SB), NOSPLIT, $0-88
	MOVD out_base+0(FP), R0
	MOVD out_len+8(FP), R1
	MOVD w_base+24(FP), R2
	MOVD stride+48(FP), R3
	MOVD chunks+56(FP), R4
	MOVD x_base+64(FP), R5
	LSR  $1, R4, R6 // pairs of chunks
	AND  $1, R4, R7 // a last single chunk
	MOVI0(31)

row:
	MOVD R2, R9
	MOVD R5, R10
	MOVI0(16)
	MOVI0(17)
	MOVI0(18)
	MOVI0(19)
	CBZ  R6, one
	MOVD R6, R12

loop:
	LOAD16_BF16
	VLD1.P 64(R10), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4
	VFMLA  V2.S4, V6.S4, V18.S4
	VFMLA  V3.S4, V7.S4, V19.S4
	SUBS   $1, R12
	BNE    loop

one:
	CBZ    R7, done
	LOAD8_BF16
	VLD1.P 32(R10), [V4.S4, V5.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4

done:
	FADD_4S(16, 16, 18)
	FADD_4S(17, 17, 19)
	FADD_4S(16, 16, 17)
	HSUM4(16)
	FMOVS.P F16, 4(R0)
	ADD    R3, R2
	SUBS   $1, R1
	BNE    row
	RET
