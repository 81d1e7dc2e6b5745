//go:build amd64 && gc && !purego

#include "textflag.h"

// Attention kernels for several query rows at once (the query heads that
// share a KV head). Each query row's results are bit-identical to the
// one-row kernels in vec_amd64.s: only the loads of keys and values are
// shared between rows, never a sum.

// func dot4Rows(out []float32, ostride int, q []float32, qstride int, k []float32, kstride, pairs, steps int, scale float32, next []float32)
// For query rows j < 4 (q[j*qstride:], 16*steps floats) and key rows
// i < 2*pairs (k[i*kstride:]): out[j*ostride+i] = vecDotAVX2(q_j, k_i) *
// scale, bit-identical. vecDotAVX2 sums a row in one accumulator of 8
// lanes; here the 8 (query, key) accumulators of a pair of keys (Y0-Y7:
// 4 query loads and 2 key loads per 8 FMAs) take each key row in one
// pass, 64 bytes per step, and are then reduced with the additions of
// vecDotAVX2, all eight pairs in one register (below). Each step
// prefetches the same line of both rows of next, the rows the caller
// reads after these (kstride floats apart too): in decode the key cache
// streams from memory.
TEXT ·dot4Rows(SB), NOSPLIT, $0-144
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
	MOVQ next_base+120(FP), R15
	SUBQ DI, R15
	TESTQ DX, DX
	JE   d4end

d4pair:
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

d4step:
	PREFETCHT0 (BX)(R15*1)
	PREFETCHT0 (R11)(R15*1)
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
	VMOVUPS 32(BX), Y8
	VMOVUPS 32(R11), Y9
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
	ADDQ $64, BX
	ADDQ $64, R11
	DECQ R14
	JNZ  d4step

	// Reduce the eight pairs at once, each as vecDotAVX2 does: t = lo +
	// hi (VPERM2F128 puts the halves of two pairs side by side, query j
	// and j+2), then two VHADDPS rounds give (t0+t1)+(t2+t3), the
	// additions of vecDotAVX2's VEXTRACTF128/VADDPS/VHADDPS/VHADDPS. The
	// lanes come out as (j, i) = (0,0) (0,1) (1,0) (1,1) | (2,0) (2,1)
	// (3,0) (3,1), so each query row's two results are stored as one
	// 64-bit pair.
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
	JNZ  d4pair

d4end:
	VZEROUPPER
	RET

// func axpy4Rows(y []float32, ystride int, p []float32, pstride, n int, v []float32, vstride, chunks int, next []float32)
// For rows j < 4 and i = 0, 1, ... n-1 in turn: y_j += p[j*pstride+i] *
// v[i*vstride:], over the first 16*chunks floats of y_j = y[j*ystride:],
// each element by the FMAs of axpyRowsAVX2 in the same order. 16 floats
// of each of the four rows stay in Y0-Y7 while the value rows pass (2
// loads and 4 broadcasts per 8 FMAs). Each row step prefetches the same
// 64 bytes of the same row of next (vstride floats apart too): the values
// (or keys) the caller reads next are on their way while these are
// summed.
TEXT ·axpy4Rows(SB), NOSPLIT, $0-136
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
	MOVQ next_base+112(FP), R11
	SUBQ SI, R11
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
