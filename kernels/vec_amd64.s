//go:build amd64 && gc && !purego

#include "textflag.h"

// func vecDotAVX2(a, b []float32) float32
TEXT ·vecDotAVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loop32:
	CMPQ CX, $32
	JL   loop8
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	VMOVUPS 32(SI), Y5
	VFMADD231PS 32(DI), Y5, Y1
	VMOVUPS 64(SI), Y6
	VFMADD231PS 64(DI), Y6, Y2
	VMOVUPS 96(SI), Y7
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  loop32

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
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
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
// out[i] = vecDotAVX2(q, k[i*stride:]) * scale: each row with
// vecDotAVX2's arithmetic (the same four accumulators, 32- and 8-element
// loops, reduction and scalar tail), so bit-identical. Two rows run side
// by side (Y0-Y3 and Y8-Y11, sharing the loads of q) to hide the FMA
// latency; the 32-element loop prefetches the rows eight rows ahead
// (attention's key cache streams from memory in decode).
TEXT ·dotRowsAVX2(SB), NOSPLIT, $0-84
	MOVQ out_base+0(FP), R8
	MOVQ out_len+8(FP), R9
	MOVQ q_base+24(FP), SI
	MOVQ q_len+32(FP), CX
	MOVQ k_base+48(FP), DI
	MOVQ stride+72(FP), R10
	SHLQ $2, R10
	VMOVSS scale+80(FP), X15

dotrowspair:
	CMPQ R9, $2
	JL   dotrowsone
	MOVQ SI, AX
	MOVQ DI, BX
	LEAQ (DI)(R10*1), R11
	MOVQ CX, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

dp32:
	CMPQ DX, $32
	JL   dp8
	PREFETCHT0 (BX)(R10*8)
	PREFETCHT0 64(BX)(R10*8)
	PREFETCHT0 (R11)(R10*8)
	PREFETCHT0 64(R11)(R10*8)
	VMOVUPS (AX), Y4
	VFMADD231PS (BX), Y4, Y0
	VFMADD231PS (R11), Y4, Y8
	VMOVUPS 32(AX), Y5
	VFMADD231PS 32(BX), Y5, Y1
	VFMADD231PS 32(R11), Y5, Y9
	VMOVUPS 64(AX), Y6
	VFMADD231PS 64(BX), Y6, Y2
	VFMADD231PS 64(R11), Y6, Y10
	VMOVUPS 96(AX), Y7
	VFMADD231PS 96(BX), Y7, Y3
	VFMADD231PS 96(R11), Y7, Y11
	ADDQ $128, AX
	ADDQ $128, BX
	ADDQ $128, R11
	SUBQ $32, DX
	JMP  dp32

dp8:
	CMPQ DX, $8
	JL   dpred
	VMOVUPS (AX), Y4
	VFMADD231PS (BX), Y4, Y0
	VFMADD231PS (R11), Y4, Y8
	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, R11
	SUBQ $8, DX
	JMP  dp8

dpred:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VADDPS Y9, Y8, Y8
	VADDPS Y11, Y10, Y10
	VADDPS Y10, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS X9, X8, X8
	VHADDPS X8, X8, X8
	VHADDPS X8, X8, X8

dptail:
	CMPQ DX, $0
	JE   dpdone
	VMOVSS (AX), X4
	VFMADD231SS (BX), X4, X0
	VFMADD231SS (R11), X4, X8
	ADDQ $4, AX
	ADDQ $4, BX
	ADDQ $4, R11
	DECQ DX
	JMP  dptail

dpdone:
	VMULSS X15, X0, X0
	VMULSS X15, X8, X8
	VMOVSS X0, (R8)
	VMOVSS X8, 4(R8)
	ADDQ $8, R8
	LEAQ (DI)(R10*2), DI
	SUBQ $2, R9
	JMP  dotrowspair

dotrowsone:
	TESTQ R9, R9
	JE   dotrowsend
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ CX, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

dr32:
	CMPQ DX, $32
	JL   dr8
	VMOVUPS (AX), Y4
	VFMADD231PS (BX), Y4, Y0
	VMOVUPS 32(AX), Y5
	VFMADD231PS 32(BX), Y5, Y1
	VMOVUPS 64(AX), Y6
	VFMADD231PS 64(BX), Y6, Y2
	VMOVUPS 96(AX), Y7
	VFMADD231PS 96(BX), Y7, Y3
	ADDQ $128, AX
	ADDQ $128, BX
	SUBQ $32, DX
	JMP  dr32

dr8:
	CMPQ DX, $8
	JL   drred
	VMOVUPS (AX), Y4
	VFMADD231PS (BX), Y4, Y0
	ADDQ $32, AX
	ADDQ $32, BX
	SUBQ $8, DX
	JMP  dr8

drred:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

drtail:
	CMPQ DX, $0
	JE   drdone
	VMOVSS (AX), X4
	VFMADD231SS (BX), X4, X0
	ADDQ $4, AX
	ADDQ $4, BX
	DECQ DX
	JMP  drtail

drdone:
	VMULSS X15, X0, X0
	VMOVSS X0, (R8)

dotrowsend:
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
