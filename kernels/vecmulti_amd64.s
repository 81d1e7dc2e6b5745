//go:build amd64 && gc && !purego

#include "textflag.h"

// Attention kernels for several query rows at once (the query heads that
// share a KV head). Each query row's results are bit-identical to the
// one-row kernels in vec_amd64.s: only the loads of keys and values are
// shared between rows, never a sum.

// func dot4RowsAVX2(out []float32, ostride int, q []float32, qstride int, k []float32, kstride, pairs, chunks int, scale float32)
// For query rows j < 4 (q[j*qstride:], 32*chunks floats) and key rows
// i < 2*pairs (k[i*kstride:]): out[j*ostride+i] = vecDotAVX2(q_j, k_i) *
// scale. vecDotAVX2 sums a row of 32*chunks floats in four accumulators,
// accumulator c taking the 8 floats at 32*s+8*c for s = 0, 1, ...; they
// are independent, so here accumulator c is computed for all 8 (query,
// key) pairs of a pair of keys at once (Y0-Y7: 4 query loads and 2 key
// loads per 8 FMAs), kept on the stack, and the four are then reduced as
// vecDotAVX2 does. Each step prefetches the same part of the key rows
// eight rows ahead (in decode the key cache streams from memory, and the
// four strided passes over a pair of rows leave the hardware prefetchers
// too little to go on); a prefetch past the last key is harmless.
TEXT ·dot4RowsAVX2(SB), 0, $1024-116
	MOVQ out_base+0(FP), R8
	MOVQ ostride+24(FP), R9
	SHLQ $2, R9
	MOVQ q_base+32(FP), SI
	MOVQ qstride+56(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R13
	MOVQ k_base+64(FP), DI
	MOVQ kstride+88(FP), R10
	SHLQ $2, R10
	MOVQ pairs+96(FP), DX
	VMOVSS scale+112(FP), X15
	TESTQ DX, DX
	JE   d4end

d4pair:
	XORQ CX, CX

d4col:
	LEAQ (SI)(CX*1), AX
	LEAQ (DI)(CX*1), BX
	LEAQ (BX)(R10*1), R11
	MOVQ chunks+104(FP), R14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

d4step:
	PREFETCHT0 (BX)(R10*8)
	PREFETCHT0 (R11)(R10*8)
	VMOVUPS (BX), Y8
	VMOVUPS (R11), Y9
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
	ADDQ $128, AX
	ADDQ $128, BX
	ADDQ $128, R11
	DECQ R14
	JNZ  d4step
	VMOVUPS Y0, 0(SP)(CX*8)
	VMOVUPS Y1, 32(SP)(CX*8)
	VMOVUPS Y2, 64(SP)(CX*8)
	VMOVUPS Y3, 96(SP)(CX*8)
	VMOVUPS Y4, 128(SP)(CX*8)
	VMOVUPS Y5, 160(SP)(CX*8)
	VMOVUPS Y6, 192(SP)(CX*8)
	VMOVUPS Y7, 224(SP)(CX*8)
	ADDQ $32, CX
	CMPQ CX, $128
	JL   d4col

	// Reduce pair (j, i) from its four accumulators at 32*(2j+i) +
	// 256*c(SP) as vecDotAVX2 does, scale and store.
	LEAQ (R9)(R9*2), AX
	VMOVUPS 0(SP), Y0
	VADDPS 256(SP), Y0, Y0
	VMOVUPS 512(SP), Y2
	VADDPS 768(SP), Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMULSS X15, X0, X0
	VMOVSS X0, (R8)
	VMOVUPS 32(SP), Y0
	VADDPS 288(SP), Y0, Y0
	VMOVUPS 544(SP), Y2
	VADDPS 800(SP), Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMULSS X15, X0, X0
	VMOVSS X0, 4(R8)
	VMOVUPS 64(SP), Y0
	VADDPS 320(SP), Y0, Y0
	VMOVUPS 576(SP), Y2
	VADDPS 832(SP), Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMULSS X15, X0, X0
	VMOVSS X0, (R8)(R9*1)
	VMOVUPS 96(SP), Y0
	VADDPS 352(SP), Y0, Y0
	VMOVUPS 608(SP), Y2
	VADDPS 864(SP), Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMULSS X15, X0, X0
	VMOVSS X0, 4(R8)(R9*1)
	VMOVUPS 128(SP), Y0
	VADDPS 384(SP), Y0, Y0
	VMOVUPS 640(SP), Y2
	VADDPS 896(SP), Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMULSS X15, X0, X0
	VMOVSS X0, (R8)(R9*2)
	VMOVUPS 160(SP), Y0
	VADDPS 416(SP), Y0, Y0
	VMOVUPS 672(SP), Y2
	VADDPS 928(SP), Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMULSS X15, X0, X0
	VMOVSS X0, 4(R8)(R9*2)
	VMOVUPS 192(SP), Y0
	VADDPS 448(SP), Y0, Y0
	VMOVUPS 704(SP), Y2
	VADDPS 960(SP), Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMULSS X15, X0, X0
	VMOVSS X0, (R8)(AX*1)
	VMOVUPS 224(SP), Y0
	VADDPS 480(SP), Y0, Y0
	VMOVUPS 736(SP), Y2
	VADDPS 992(SP), Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMULSS X15, X0, X0
	VMOVSS X0, 4(R8)(AX*1)
	ADDQ $8, R8
	LEAQ (DI)(R10*2), DI
	DECQ DX
	JNZ  d4pair

d4end:
	VZEROUPPER
	RET

// func axpy4RowsAVX2(y []float32, ystride int, p []float32, pstride, n int, v []float32, vstride, chunks int)
// For rows j < 4 and i = 0, 1, ... n-1 in turn: y_j += p[j*pstride+i] *
// v[i*vstride:], over the first 16*chunks floats of y_j = y[j*ystride:],
// each element by the FMAs of axpyRowsAVX2 in the same order. 16 floats
// of each of the four rows stay in Y0-Y7 while the value rows pass (2
// loads and 4 broadcasts per 8 FMAs). Each row step prefetches the same
// 64 bytes of the value row 16 rows ahead (the next block of values in
// attention), so that block's lines are on their way while this one is
// summed.
TEXT ·axpy4RowsAVX2(SB), NOSPLIT, $0-112
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
	SHLQ $2, R10
	MOVQ R10, R11
	SHLQ $4, R11
	MOVQ chunks+104(FP), CX
	TESTQ CX, CX
	JE   a4end
	CMPQ n+64(FP), $0
	JE   a4end

a4chunk:
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

a4row:
	PREFETCHT0 (BX)(R11*1)
	VMOVUPS (BX), Y8
	VMOVUPS 32(BX), Y9
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
	JNZ  a4row
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (DI)(R9*1)
	VMOVUPS Y3, 32(DI)(R9*1)
	VMOVUPS Y4, (DI)(R9*2)
	VMOVUPS Y5, 32(DI)(R9*2)
	VMOVUPS Y6, (DI)(R13*1)
	VMOVUPS Y7, 32(DI)(R13*1)
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  a4chunk

a4end:
	VZEROUPPER
	RET
