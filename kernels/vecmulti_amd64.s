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
// loads per 8 FMAs), kept on the stack, and the four are then reduced
// with the additions of vecDotAVX2, all eight pairs in one register
// (below). Each step prefetches the same part of the key rows
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
	VBROADCASTSS scale+112(FP), Y15
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

	// Reduce the eight pairs at once, each as vecDotAVX2 does: s =
	// (a0+a1)+(a2+a3) per pair (index 2j+i, its accumulator c at
	// 32*(2j+i) + 256*c(SP)), then t = s[0:4]+s[4:8] for two pairs at a
	// time (VPERM2F128 puts their halves side by side), then two
	// VHADDPS rounds give (t0+t1)+(t2+t3), the same additions as
	// vecDotAVX2's VEXTRACTF128/VADDPS/VHADDPS/VHADDPS. The lanes come
	// out as (j, i) = (0,0) (0,1) (1,0) (1,1) | (2,0) (2,1) (3,0) (3,1),
	// so each query row's two results are stored as one 64-bit pair.
	VMOVUPS 0(SP), Y0
	VADDPS 256(SP), Y0, Y0
	VMOVUPS 512(SP), Y8
	VADDPS 768(SP), Y8, Y8
	VADDPS Y8, Y0, Y0
	VMOVUPS 128(SP), Y1
	VADDPS 384(SP), Y1, Y1
	VMOVUPS 640(SP), Y8
	VADDPS 896(SP), Y8, Y8
	VADDPS Y8, Y1, Y1
	VPERM2F128 $0x20, Y1, Y0, Y2
	VPERM2F128 $0x31, Y1, Y0, Y3
	VADDPS Y3, Y2, Y4
	VMOVUPS 32(SP), Y0
	VADDPS 288(SP), Y0, Y0
	VMOVUPS 544(SP), Y8
	VADDPS 800(SP), Y8, Y8
	VADDPS Y8, Y0, Y0
	VMOVUPS 160(SP), Y1
	VADDPS 416(SP), Y1, Y1
	VMOVUPS 672(SP), Y8
	VADDPS 928(SP), Y8, Y8
	VADDPS Y8, Y1, Y1
	VPERM2F128 $0x20, Y1, Y0, Y2
	VPERM2F128 $0x31, Y1, Y0, Y3
	VADDPS Y3, Y2, Y5
	VHADDPS Y5, Y4, Y12
	VMOVUPS 64(SP), Y0
	VADDPS 320(SP), Y0, Y0
	VMOVUPS 576(SP), Y8
	VADDPS 832(SP), Y8, Y8
	VADDPS Y8, Y0, Y0
	VMOVUPS 192(SP), Y1
	VADDPS 448(SP), Y1, Y1
	VMOVUPS 704(SP), Y8
	VADDPS 960(SP), Y8, Y8
	VADDPS Y8, Y1, Y1
	VPERM2F128 $0x20, Y1, Y0, Y2
	VPERM2F128 $0x31, Y1, Y0, Y3
	VADDPS Y3, Y2, Y6
	VMOVUPS 96(SP), Y0
	VADDPS 352(SP), Y0, Y0
	VMOVUPS 608(SP), Y8
	VADDPS 864(SP), Y8, Y8
	VADDPS Y8, Y0, Y0
	VMOVUPS 224(SP), Y1
	VADDPS 480(SP), Y1, Y1
	VMOVUPS 736(SP), Y8
	VADDPS 992(SP), Y8, Y8
	VADDPS Y8, Y1, Y1
	VPERM2F128 $0x20, Y1, Y0, Y2
	VPERM2F128 $0x31, Y1, Y0, Y3
	VADDPS Y3, Y2, Y7
	VHADDPS Y7, Y6, Y13
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
