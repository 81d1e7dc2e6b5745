//go:build amd64 && gc && !purego

#include "textflag.h"

// The f16 forms of dot4Rows and axpy4Rows (vecmulti_amd64.s):
// keys and values are loaded as halves and widened with VCVTPH2PS
// (exact), then go through the same FMAs in the same order, so each
// result is bit-identical to the float32 kernel on the widened rows. A
// step reads 32 bytes of a row instead of 64: the point of an f16 cache
// is half the bytes streamed from memory per token.

// func dot4RowsF16(out []float32, ostride int, q []float32, qstride int, k []uint16, kstride, pairs, steps int, scale float32, next []uint16)
TEXT ·dot4RowsF16(SB), NOSPLIT, $0-144
	MOVQ out_base+0(FP), R8
	MOVQ ostride+24(FP), R9
	SHLQ $2, R9
	MOVQ q_base+32(FP), SI
	MOVQ qstride+56(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R13
	MOVQ k_base+64(FP), DI
	MOVQ kstride+88(FP), R10
	SHLQ $1, R10
	MOVQ pairs+96(FP), DX
	VBROADCASTSS scale+112(FP), Y15
	MOVQ next_base+120(FP), R15
	SUBQ DI, R15
	TESTQ DX, DX
	JE   h4end

h4pair:
	MOVQ SI, AX
	MOVQ DI, BX
	LEAQ (DI)(R10*1), R11
	MOVQ steps+104(FP), R14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

h4step:
	PREFETCHT0 (BX)(R15*1)
	PREFETCHT0 (R11)(R15*1)
	VCVTPH2PS (BX), Y8
	VCVTPH2PS (R11), Y9
	VMOVUPS (AX), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VMOVUPS (AX)(R12*1), Y11
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VMOVUPS (AX)(R12*2), Y12
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VMOVUPS (AX)(R13*1), Y13
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	VCVTPH2PS 16(BX), Y8
	VCVTPH2PS 16(R11), Y9
	VMOVUPS 32(AX), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VMOVUPS 32(AX)(R12*1), Y11
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VMOVUPS 32(AX)(R12*2), Y12
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VMOVUPS 32(AX)(R13*1), Y13
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ $64, AX
	ADDQ $32, BX
	ADDQ $32, R11
	DECQ R14
	JNZ  h4step

	// The reduction of dot4Rows.
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x31, Y4, Y0, Y9
	VADDPS Y9, Y8, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x31, Y5, Y1, Y10
	VADDPS Y10, Y9, Y9
	VHADDPS Y9, Y8, Y12
	VPERM2F128 $0x20, Y6, Y2, Y8
	VPERM2F128 $0x31, Y6, Y2, Y9
	VADDPS Y9, Y8, Y8
	VPERM2F128 $0x20, Y7, Y3, Y9
	VPERM2F128 $0x31, Y7, Y3, Y10
	VADDPS Y10, Y9, Y9
	VHADDPS Y9, Y8, Y13
	VHADDPS Y13, Y12, Y0
	VMULPS Y15, Y0, Y0
	LEAQ (R9)(R9*2), AX
	VMOVLPS X0, (R8)
	VMOVHPS X0, (R8)(R9*1)
	VEXTRACTF128 $1, Y0, X1
	VMOVLPS X1, (R8)(R9*2)
	VMOVHPS X1, (R8)(AX*1)
	ADDQ $8, R8
	LEAQ (DI)(R10*2), DI
	DECQ DX
	JNZ  h4pair

h4end:
	VZEROUPPER
	RET

// func axpy4RowsF16(y []float32, ystride int, p []float32, pstride, n int, v []uint16, vstride, chunks int, next []uint16)
TEXT ·axpy4RowsF16(SB), NOSPLIT, $0-136
	MOVQ y_base+0(FP), DI
	MOVQ ystride+24(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R13
	MOVQ p_base+32(FP), R8
	MOVQ pstride+56(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R14
	MOVQ v_base+72(FP), SI
	MOVQ vstride+96(FP), R10
	SHLQ $1, R10
	MOVQ next_base+112(FP), R11
	SUBQ SI, R11
	MOVQ chunks+104(FP), CX
	TESTQ CX, CX
	JE   ha4end
	CMPQ n+64(FP), $0
	JE   ha4end

ha4chunk:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (DI)(R9*1), Y2
	VMOVUPS 32(DI)(R9*1), Y3
	VMOVUPS (DI)(R9*2), Y4
	VMOVUPS 32(DI)(R9*2), Y5
	VMOVUPS (DI)(R13*1), Y6
	VMOVUPS 32(DI)(R13*1), Y7
	MOVQ R8, AX
	MOVQ SI, BX
	MOVQ n+64(FP), DX

ha4row:
	PREFETCHT0 (BX)(R11*1)
	VCVTPH2PS (BX), Y8
	VCVTPH2PS 16(BX), Y9
	VBROADCASTSS (AX), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VBROADCASTSS (AX)(R12*1), Y11
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VBROADCASTSS (AX)(R12*2), Y12
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VBROADCASTSS (AX)(R14*1), Y13
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ $4, AX
	ADDQ R10, BX
	DECQ DX
	JNZ  ha4row
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (DI)(R9*1)
	VMOVUPS Y3, 32(DI)(R9*1)
	VMOVUPS Y4, (DI)(R9*2)
	VMOVUPS Y5, 32(DI)(R9*2)
	VMOVUPS Y6, (DI)(R13*1)
	VMOVUPS Y7, 32(DI)(R13*1)
	ADDQ $64, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  ha4chunk

ha4end:
	VZEROUPPER
	RET

// func f32ToF16AVX2(dst []uint16, src []float32)
// len(src) is a multiple of 8; immediate 0 rounds to nearest even.
TEXT ·f32ToF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	JE   tohdone

tohloop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  tohloop

tohdone:
	VZEROUPPER
	RET

// func f16ToF32SIMD(dst []float32, src []uint16)
// len(src) is a multiple of 8.
TEXT ·f16ToF32SIMD(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	JE   tofdone

tofloop:
	VCVTPH2PS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  tofloop

tofdone:
	VZEROUPPER
	RET
