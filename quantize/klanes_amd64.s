//go:build amd64 && !purego

#include "textflag.h"

// Constants of nearestInt: 1.5*2^23 as float32, the mantissa mask and the
// bias subtracted from it.
DATA qkMagic<>+0(SB)/4, $0x4b400000
GLOBL qkMagic<>(SB), RODATA|NOPTR, $4
DATA qkMant<>+0(SB)/4, $0x007fffff
GLOBL qkMant<>(SB), RODATA|NOPTR, $4
DATA qkBias<>+0(SB)/4, $0x00400000
GLOBL qkBias<>(SB), RODATA|NOPTR, $4

// func qkx2SumsAVX2(xt, wt *[32][8]float32, lo, iscale *[8]float32, nmax int32, laux *[32][8]int32, sums *[3][8]float32)
//
// For each of the 8 lanes, in element order i = 0..31 (the scalar order,
// so every lane's float32 results are bit-identical to qkx2SumsGo):
// l = clamp(nearestInt(iscale*(x-lo)), 0, nmax); laux = l; wl = w*l;
// sumL += wl; sumL2 += wl*l; sumXL += wl*x.
TEXT ·qkx2SumsAVX2(SB), NOSPLIT, $0-56
	MOVQ xt+0(FP), SI
	MOVQ wt+8(FP), DI
	MOVQ lo+16(FP), AX
	VMOVUPS (AX), Y1
	MOVQ iscale+24(FP), AX
	VMOVUPS (AX), Y0
	MOVL nmax+32(FP), AX
	VMOVD AX, X2
	VPBROADCASTD X2, Y2
	VPXOR Y3, Y3, Y3
	VPBROADCASTD qkMagic<>(SB), Y4
	VPBROADCASTD qkMant<>(SB), Y5
	VPBROADCASTD qkBias<>(SB), Y6
	MOVQ laux+40(FP), DX
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	MOVQ $32, CX

sumsLoop:
	VMOVUPS (SI), Y10
	VSUBPS Y1, Y10, Y11
	VMULPS Y0, Y11, Y11
	VADDPS Y4, Y11, Y11
	VPAND Y5, Y11, Y11
	VPSUBD Y6, Y11, Y11
	VPMINSD Y2, Y11, Y11
	VPMAXSD Y3, Y11, Y11
	VMOVDQU Y11, (DX)
	VCVTDQ2PS Y11, Y12
	VMULPS (DI), Y12, Y13
	VADDPS Y13, Y7, Y7
	VMULPS Y12, Y13, Y14
	VADDPS Y14, Y8, Y8
	VMULPS Y10, Y13, Y14
	VADDPS Y14, Y9, Y9
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ CX
	JNZ sumsLoop

	MOVQ sums+48(FP), AX
	VMOVUPS Y7, (AX)
	VMOVUPS Y8, 32(AX)
	VMOVUPS Y9, 64(AX)
	VZEROUPPER
	RET

// func qkx2ErrAVX2(xt, wt *[32][8]float32, laux *[32][8]int32, scale, min, cur *[8]float32)
//
// Per lane, in element order: diff = scale*l + min - x; cur += w*diff*diff
// (cur starts at 0).
TEXT ·qkx2ErrAVX2(SB), NOSPLIT, $0-48
	MOVQ xt+0(FP), SI
	MOVQ wt+8(FP), DI
	MOVQ laux+16(FP), DX
	MOVQ scale+24(FP), AX
	VMOVUPS (AX), Y0
	MOVQ min+32(FP), AX
	VMOVUPS (AX), Y1
	VXORPS Y7, Y7, Y7
	MOVQ $32, CX

errLoop:
	VCVTDQ2PS (DX), Y10
	VMULPS Y0, Y10, Y10
	VADDPS Y1, Y10, Y10
	VSUBPS (SI), Y10, Y10
	VMULPS Y10, Y10, Y10
	VMULPS (DI), Y10, Y10
	VADDPS Y10, Y7, Y7
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ CX
	JNZ errLoop

	MOVQ cur+40(FP), AX
	VMOVUPS Y7, (AX)
	VZEROUPPER
	RET

// func qxSumsAVX2(xt *[16][8]float32, iscale *[8]float32, nmax int32, laux *[16][8]int32, sums *[2][8]float32)
//
// make_qx_quants' inner loop for 8 lanes, per lane in element order:
// l = clamp(nearestInt(iscale*x), -nmax, nmax-1); laux = l; w = x*x;
// sumlx += w*x*l; suml2 += w*l*l (products left to right).
TEXT ·qxSumsAVX2(SB), NOSPLIT, $0-40
	MOVQ xt+0(FP), SI
	MOVQ iscale+8(FP), AX
	VMOVUPS (AX), Y0
	MOVL nmax+16(FP), AX
	MOVL AX, BX
	DECL BX
	NEGL AX
	VMOVD AX, X2
	VPBROADCASTD X2, Y2 // -nmax
	VMOVD BX, X3
	VPBROADCASTD X3, Y3 // nmax-1
	VPBROADCASTD qkMagic<>(SB), Y4
	VPBROADCASTD qkMant<>(SB), Y5
	VPBROADCASTD qkBias<>(SB), Y6
	MOVQ laux+24(FP), DX
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	MOVQ $16, CX

qxLoop:
	VMOVUPS (SI), Y10
	VMULPS Y0, Y10, Y11
	VADDPS Y4, Y11, Y11
	VPAND Y5, Y11, Y11
	VPSUBD Y6, Y11, Y11
	VPMINSD Y3, Y11, Y11
	VPMAXSD Y2, Y11, Y11
	VMOVDQU Y11, (DX)
	VCVTDQ2PS Y11, Y12
	VMULPS Y10, Y10, Y13 // w = x*x
	VMULPS Y10, Y13, Y14 // w*x
	VMULPS Y12, Y14, Y14 // (w*x)*l
	VADDPS Y14, Y7, Y7
	VMULPS Y12, Y13, Y14 // w*l
	VMULPS Y12, Y14, Y14 // (w*l)*l
	VADDPS Y14, Y8, Y8
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNZ qxLoop

	MOVQ sums+32(FP), AX
	VMOVUPS Y7, (AX)
	VMOVUPS Y8, 32(AX)
	VZEROUPPER
	RET
