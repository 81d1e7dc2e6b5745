//go:build arm64 && gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// encSamples holds one instance of each macro of neon_arm64.h per operand
// pattern (every register field at 0 and at 31); it is never called.
// encoding_arm64_test.go reads its words (encSampleWord) and compares
// them with objdump's encodings.
TEXT ·encSamples(SB), NOSPLIT|NOFRAME, $0-0
	MOVI0(31) // movi v31.2d, #0x0
	MOVI0(0) // movi v0.2d, #0x0
	SDOT_4S(31, 0, 16) // sdot v31.4s, v0.16b, v16.16b
	SDOT_4S(0, 31, 1) // sdot v0.4s, v31.16b, v1.16b
	SDOT_4S(5, 10, 31) // sdot v5.4s, v10.16b, v31.16b
	SMULL_8H(31, 0, 16) // smull v31.8h, v0.8b, v16.8b
	SMULL_8H(0, 31, 1) // smull v0.8h, v31.8b, v1.8b
	SMULL_8H(5, 10, 31) // smull v5.8h, v10.8b, v31.8b
	SMULL2_8H(31, 0, 16) // smull2 v31.8h, v0.16b, v16.16b
	SMULL2_8H(0, 31, 1) // smull2 v0.8h, v31.16b, v1.16b
	SMULL2_8H(5, 10, 31) // smull2 v5.8h, v10.16b, v31.16b
	SMLAL_8H(31, 0, 16) // smlal v31.8h, v0.8b, v16.8b
	SMLAL_8H(0, 31, 1) // smlal v0.8h, v31.8b, v1.8b
	SMLAL_8H(5, 10, 31) // smlal v5.8h, v10.8b, v31.8b
	SMLAL2_8H(31, 0, 16) // smlal2 v31.8h, v0.16b, v16.16b
	SMLAL2_8H(0, 31, 1) // smlal2 v0.8h, v31.16b, v1.16b
	SMLAL2_8H(5, 10, 31) // smlal2 v5.8h, v10.16b, v31.16b
	SMULL_4S(31, 0, 16) // smull v31.4s, v0.4h, v16.4h
	SMULL_4S(0, 31, 1) // smull v0.4s, v31.4h, v1.4h
	SMULL_4S(5, 10, 31) // smull v5.4s, v10.4h, v31.4h
	SMLAL2_4S(31, 0, 16) // smlal2 v31.4s, v0.8h, v16.8h
	SMLAL2_4S(0, 31, 1) // smlal2 v0.4s, v31.8h, v1.8h
	SMLAL2_4S(5, 10, 31) // smlal2 v5.4s, v10.8h, v31.8h
	MUL_4S(31, 0, 16) // mul v31.4s, v0.4s, v16.4s
	MUL_4S(0, 31, 1) // mul v0.4s, v31.4s, v1.4s
	MUL_4S(5, 10, 31) // mul v5.4s, v10.4s, v31.4s
	MLA_4S(31, 0, 16) // mla v31.4s, v0.4s, v16.4s
	MLA_4S(0, 31, 1) // mla v0.4s, v31.4s, v1.4s
	MLA_4S(5, 10, 31) // mla v5.4s, v10.4s, v31.4s
	FADD_4S(31, 0, 16) // fadd v31.4s, v0.4s, v16.4s
	FADD_4S(0, 31, 1) // fadd v0.4s, v31.4s, v1.4s
	FADD_4S(5, 10, 31) // fadd v5.4s, v10.4s, v31.4s
	FMUL_4S(31, 0, 16) // fmul v31.4s, v0.4s, v16.4s
	FMUL_4S(0, 31, 1) // fmul v0.4s, v31.4s, v1.4s
	FMUL_4S(5, 10, 31) // fmul v5.4s, v10.4s, v31.4s
	FADDP_4S(31, 0, 16) // faddp v31.4s, v0.4s, v16.4s
	FADDP_4S(0, 31, 1) // faddp v0.4s, v31.4s, v1.4s
	FADDP_4S(5, 10, 31) // faddp v5.4s, v10.4s, v31.4s
	FMLA_S0(31, 0, 16) // fmla v31.4s, v0.4s, v16.s[0]
	FMLA_S0(0, 31, 1) // fmla v0.4s, v31.4s, v1.s[0]
	FMLA_S0(5, 10, 31) // fmla v5.4s, v10.4s, v31.s[0]
	FMLA_SI(31, 0, 16, 1) // fmla v31.4s, v0.4s, v16.s[1]
	FMLA_SI(0, 31, 1, 2) // fmla v0.4s, v31.4s, v1.s[2]
	FMLA_SI(5, 10, 31, 3) // fmla v5.4s, v10.4s, v31.s[3]
	FMLA_SI(9, 22, 15, 0) // fmla v9.4s, v22.4s, v15.s[0]
	SADDLP_4S(31, 0) // saddlp v31.4s, v0.8h
	SADDLP_4S(0, 31) // saddlp v0.4s, v31.8h
	SADDLP_4S(9, 22) // saddlp v9.4s, v22.8h
	SADALP_4S(31, 0) // sadalp v31.4s, v0.8h
	SADALP_4S(0, 31) // sadalp v0.4s, v31.8h
	SADALP_4S(9, 22) // sadalp v9.4s, v22.8h
	SXTL_8H(31, 0) // sxtl v31.8h, v0.8b
	SXTL_8H(0, 31) // sxtl v0.8h, v31.8b
	SXTL_8H(9, 22) // sxtl v9.8h, v22.8b
	SXTL2_8H(31, 0) // sxtl2 v31.8h, v0.16b
	SXTL2_8H(0, 31) // sxtl2 v0.8h, v31.16b
	SXTL2_8H(9, 22) // sxtl2 v9.8h, v22.16b
	SXTL_4S(31, 0) // sxtl v31.4s, v0.4h
	SXTL_4S(0, 31) // sxtl v0.4s, v31.4h
	SXTL_4S(9, 22) // sxtl v9.4s, v22.4h
	SXTL2_4S(31, 0) // sxtl2 v31.4s, v0.8h
	SXTL2_4S(0, 31) // sxtl2 v0.4s, v31.8h
	SXTL2_4S(9, 22) // sxtl2 v9.4s, v22.8h
	SCVTF_4S(31, 0) // scvtf v31.4s, v0.4s
	SCVTF_4S(0, 31) // scvtf v0.4s, v31.4s
	SCVTF_4S(9, 22) // scvtf v9.4s, v22.4s
	SCVTF_S(31, 0) // scvtf s31, s0
	SCVTF_S(0, 31) // scvtf s0, s31
	SCVTF_S(9, 22) // scvtf s9, s22
	FADDP_S(31, 0) // faddp s31, v0.2s
	FADDP_S(0, 31) // faddp s0, v31.2s
	FADDP_S(9, 22) // faddp s9, v22.2s
	FCVTL_4S(31, 0) // fcvtl v31.4s, v0.4h
	FCVTL_4S(0, 31) // fcvtl v0.4s, v31.4h
	FCVTL_4S(9, 22) // fcvtl v9.4s, v22.4h
	FCVTL2_4S(31, 0) // fcvtl2 v31.4s, v0.8h
	FCVTL2_4S(0, 31) // fcvtl2 v0.4s, v31.8h
	FCVTL2_4S(9, 22) // fcvtl2 v9.4s, v22.8h
	SMMLA_4S(31, 0, 16) // smmla v31.4s, v0.16b, v16.16b
	SMMLA_4S(0, 31, 1) // smmla v0.4s, v31.16b, v1.16b
	SMMLA_4S(5, 10, 31) // smmla v5.4s, v10.16b, v31.16b
	FRINTA_4S(31, 0) // frinta v31.4s, v0.4s
	FRINTA_4S(0, 31) // frinta v0.4s, v31.4s
	FRINTA_4S(9, 22) // frinta v9.4s, v22.4s
	RET

// func encSampleWord(i int) uint32
TEXT ·encSampleWord(SB), NOSPLIT, $0-12
	MOVD  $·encSamples(SB), R0
	MOVD  i+0(FP), R1
	MOVWU (R0)(R1<<2), R2
	MOVW  R2, ret+8(FP)
	RET

// func spinPause()
TEXT ·spinPause(SB), NOSPLIT|NOFRAME, $0-0
	YIELD
	RET
