//go:build amd64 && gc && !purego

#include "textflag.h"

// func vecDotAVX2(a, b []float32) float32
// The dot product in one accumulator of 8 lanes: lane i takes the
// products of elements 8s+i for s = 0, 1, ... in order (FMA); then the
// lanes are added as (l0+l4 + l1+l5) + (l2+l6 + l3+l7), each sum in that
// order ((t0+t1)+(t2+t3) with t_i = l_i+l_(i+4)), and the last len%8
// products are added one at a time (FMA). dotRowsAVX2 and dot4Rows
// compute the same sums, several keys at a time: an attention score is
// the same whichever of them computes it. (One chain of FMAs is
// latency-bound for a single pair of vectors, but those kernels run
// eight chains side by side, and a single pass through each row
// streams it from memory in order.)
TEXT ·vecDotAVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VXORPS Y0, Y0, Y0

loop8:
	CMPQ CX, $8
	JL   reduce
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8

reduce:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

tail:
	CMPQ CX, $0
	JE   done
	VMOVSS (SI), X4
	VFMADD231SS (DI), X4, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func vecAxpyAVX2(y, x []float32, s float32)
TEXT ·vecAxpyAVX2(SB), NOSPLIT, $0-52
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	VBROADCASTSS s+48(FP), Y15

loop32:
	CMPQ CX, $32
	JL   loop8
	VMOVUPS (DI), Y0
	VFMADD231PS (SI), Y15, Y0
	VMOVUPS Y0, (DI)
	VMOVUPS 32(DI), Y1
	VFMADD231PS 32(SI), Y15, Y1
	VMOVUPS Y1, 32(DI)
	VMOVUPS 64(DI), Y2
	VFMADD231PS 64(SI), Y15, Y2
	VMOVUPS Y2, 64(DI)
	VMOVUPS 96(DI), Y3
	VFMADD231PS 96(SI), Y15, Y3
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  loop32

loop8:
	CMPQ CX, $8
	JL   tail
	VMOVUPS (DI), Y0
	VFMADD231PS (SI), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8

tail:
	CMPQ CX, $0
	JE   done
	VMOVSS (DI), X0
	VFMADD231SS (SI), X15, X0
	VMOVSS X0, (DI)
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	VZEROUPPER
	RET

// func dotRowsAVX2(out, q, k []float32, stride int, scale float32)
// out[i] = vecDotAVX2(q, k[i*stride:]) * scale, bit-identical (the same
// lanes, reduction and tail). When len(q) is a positive multiple of 16,
// eight keys run side by side (Y0-Y7, eight independent FMA chains
// sharing each load of q), 64 bytes of each key row per step with a
// prefetch of the same line eight rows ahead (attention's key cache
// streams from memory in decode), and the eight results are reduced in
// one register as dot4Rows does; the other keys, and other widths,
// go one at a time.
TEXT ·dotRowsAVX2(SB), NOSPLIT, $0-84
	MOVQ out_base+0(FP), R8
	MOVQ out_len+8(FP), R9
	MOVQ q_base+24(FP), SI
	MOVQ q_len+32(FP), CX
	MOVQ k_base+48(FP), DI
	MOVQ stride+72(FP), R10
	SHLQ $2, R10
	VBROADCASTSS scale+80(FP), Y15
	LEAQ (R10)(R10*2), R13
	LEAQ (R10)(R10*4), R14
	LEAQ (R13)(R10*4), R15
	TESTQ CX, CX
	JE   drone
	MOVQ CX, AX
	ANDQ $15, AX
	JNZ  drone

dr8keys:
	CMPQ R9, $8
	JL   drone
	MOVQ SI, AX
	MOVQ DI, BX
	LEAQ (DI)(R10*8), R12
	MOVQ CX, DX
	SHRQ $4, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

dr8step:
	PREFETCHT0 (R12)
	PREFETCHT0 (R12)(R10*1)
	PREFETCHT0 (R12)(R10*2)
	PREFETCHT0 (R12)(R13*1)
	PREFETCHT0 (R12)(R10*4)
	PREFETCHT0 (R12)(R14*1)
	PREFETCHT0 (R12)(R13*2)
	PREFETCHT0 (R12)(R15*1)
	VMOVUPS (AX), Y8
	VFMADD231PS (BX), Y8, Y0
	VFMADD231PS (BX)(R10*1), Y8, Y1
	VFMADD231PS (BX)(R10*2), Y8, Y2
	VFMADD231PS (BX)(R13*1), Y8, Y3
	VFMADD231PS (BX)(R10*4), Y8, Y4
	VFMADD231PS (BX)(R14*1), Y8, Y5
	VFMADD231PS (BX)(R13*2), Y8, Y6
	VFMADD231PS (BX)(R15*1), Y8, Y7
	VMOVUPS 32(AX), Y9
	VFMADD231PS 32(BX), Y9, Y0
	VFMADD231PS 32(BX)(R10*1), Y9, Y1
	VFMADD231PS 32(BX)(R10*2), Y9, Y2
	VFMADD231PS 32(BX)(R13*1), Y9, Y3
	VFMADD231PS 32(BX)(R10*4), Y9, Y4
	VFMADD231PS 32(BX)(R14*1), Y9, Y5
	VFMADD231PS 32(BX)(R13*2), Y9, Y6
	VFMADD231PS 32(BX)(R15*1), Y9, Y7
	ADDQ $64, AX
	ADDQ $64, BX
	ADDQ $64, R12
	DECQ DX
	JNZ  dr8step

	// Lane i of the result is key i, reduced as vecDotAVX2 reduces.
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
	VMOVUPS Y0, (R8)
	ADDQ $32, R8
	LEAQ (DI)(R10*8), DI
	SUBQ $8, R9
	JMP  dr8keys

drone:
	TESTQ R9, R9
	JE   drend
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ CX, DX
	VXORPS Y0, Y0, Y0

dr1loop8:
	CMPQ DX, $8
	JL   dr1red
	VMOVUPS (AX), Y4
	VFMADD231PS (BX), Y4, Y0
	ADDQ $32, AX
	ADDQ $32, BX
	SUBQ $8, DX
	JMP  dr1loop8

dr1red:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

dr1tail:
	CMPQ DX, $0
	JE   dr1done
	VMOVSS (AX), X4
	VFMADD231SS (BX), X4, X0
	ADDQ $4, AX
	ADDQ $4, BX
	DECQ DX
	JMP  dr1tail

dr1done:
	VMULSS X15, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	ADDQ R10, DI
	DECQ R9
	JMP  drone

drend:
	VZEROUPPER
	RET

// func axpyRowsAVX2(y, p, v []float32, stride int)
// For each element of y, in order of i: y = fma(p[i], v[i*stride+e], y),
// as vecAxpyAVX2 called for each i. y is kept in registers 32, then 8,
// then 1 element at a time while every row passes; the 32-element loop
// prefetches the same 128 bytes of the row 16 rows ahead.
TEXT ·axpyRowsAVX2(SB), NOSPLIT, $0-80
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), CX
	MOVQ p_base+24(FP), R8
	MOVQ p_len+32(FP), R9
	MOVQ v_base+48(FP), SI
	MOVQ stride+72(FP), R10
	SHLQ $2, R10
	MOVQ R10, R11
	SHLQ $4, R11
	TESTQ R9, R9
	JE   axpyrowsend

axpyrows32:
	CMPQ CX, $32
	JL   axpyrows8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ SI, BX
	MOVQ R8, AX
	MOVQ R9, DX

axpyrows32i:
	PREFETCHT0 (BX)(R11*1)
	PREFETCHT0 64(BX)(R11*1)
	VBROADCASTSS (AX), Y15
	VFMADD231PS (BX), Y15, Y0
	VFMADD231PS 32(BX), Y15, Y1
	VFMADD231PS 64(BX), Y15, Y2
	VFMADD231PS 96(BX), Y15, Y3
	ADDQ $4, AX
	ADDQ R10, BX
	DECQ DX
	JNZ  axpyrows32i
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	SUBQ $32, CX
	JMP  axpyrows32

axpyrows8:
	CMPQ CX, $8
	JL   axpyrows1
	VMOVUPS (DI), Y0
	MOVQ SI, BX
	MOVQ R8, AX
	MOVQ R9, DX

axpyrows8i:
	VBROADCASTSS (AX), Y15
	VFMADD231PS (BX), Y15, Y0
	ADDQ $4, AX
	ADDQ R10, BX
	DECQ DX
	JNZ  axpyrows8i
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  axpyrows8

axpyrows1:
	CMPQ CX, $0
	JE   axpyrowsend
	VMOVSS (DI), X0
	MOVQ SI, BX
	MOVQ R8, AX
	MOVQ R9, DX

axpyrows1i:
	VMOVSS (AX), X15
	VFMADD231SS (BX), X15, X0
	ADDQ $4, AX
	ADDQ R10, BX
	DECQ DX
	JNZ  axpyrows1i
	VMOVSS X0, (DI)
	ADDQ $4, DI
	ADDQ $4, SI
	DECQ CX
	JMP  axpyrows1

axpyrowsend:
	VZEROUPPER
	RET
