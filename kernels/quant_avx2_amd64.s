//go:build amd64 && gc && !purego

#include "textflag.h"

// Activation quantizers of the AVX2 tier: the same numbers as the Go
// reference (quantQ8_0, quantQ8_K), written in the q8a and q8ka layouts
// (actlayout.go). TestQuantLayouts checks them bit for bit.

DATA qabs<>+0(SB)/8, $0x7fffffff7fffffff
DATA qabs<>+8(SB)/8, $0x7fffffff7fffffff
DATA qabs<>+16(SB)/8, $0x7fffffff7fffffff
DATA qabs<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL qabs<>(SB), RODATA|NOPTR, $32
DATA qsign<>+0(SB)/8, $0x8000000080000000
DATA qsign<>+8(SB)/8, $0x8000000080000000
DATA qsign<>+16(SB)/8, $0x8000000080000000
DATA qsign<>+24(SB)/8, $0x8000000080000000
GLOBL qsign<>(SB), RODATA|NOPTR, $32
DATA qone<>+0(SB)/8, $0x3f8000003f800000
DATA qone<>+8(SB)/8, $0x3f8000003f800000
DATA qone<>+16(SB)/8, $0x3f8000003f800000
DATA qone<>+24(SB)/8, $0x3f8000003f800000
GLOBL qone<>(SB), RODATA|NOPTR, $32
DATA qhalf<>+0(SB)/8, $0x3f0000003f000000
DATA qhalf<>+8(SB)/8, $0x3f0000003f000000
DATA qhalf<>+16(SB)/8, $0x3f0000003f000000
DATA qhalf<>+24(SB)/8, $0x3f0000003f000000
GLOBL qhalf<>(SB), RODATA|NOPTR, $32
DATA q127<>+0(SB)/8, $0x42fe000042fe0000
DATA q127<>+8(SB)/8, $0x42fe000042fe0000
DATA q127<>+16(SB)/8, $0x42fe000042fe0000
DATA q127<>+24(SB)/8, $0x42fe000042fe0000
GLOBL q127<>(SB), RODATA|NOPTR, $32
DATA qm127<>+0(SB)/8, $0xc2fe0000c2fe0000
DATA qm127<>+8(SB)/8, $0xc2fe0000c2fe0000
DATA qm127<>+16(SB)/8, $0xc2fe0000c2fe0000
DATA qm127<>+24(SB)/8, $0xc2fe0000c2fe0000
GLOBL qm127<>(SB), RODATA|NOPTR, $32
DATA q127i<>+0(SB)/8, $0x0000007f0000007f
DATA q127i<>+8(SB)/8, $0x0000007f0000007f
DATA q127i<>+16(SB)/8, $0x0000007f0000007f
DATA q127i<>+24(SB)/8, $0x0000007f0000007f
GLOBL q127i<>(SB), RODATA|NOPTR, $32
DATA qpackperm<>+0(SB)/8, $0x0000000400000000
DATA qpackperm<>+8(SB)/8, $0x0000000500000001
DATA qpackperm<>+16(SB)/8, $0x0000000600000002
DATA qpackperm<>+24(SB)/8, $0x0000000700000003
GLOBL qpackperm<>(SB), RODATA|NOPTR, $32
DATA qbytes8<>+0(SB)/8, $0x0808080808080808
DATA qbytes8<>+8(SB)/8, $0x0808080808080808
DATA qbytes8<>+16(SB)/8, $0x0808080808080808
DATA qbytes8<>+24(SB)/8, $0x0808080808080808
GLOBL qbytes8<>(SB), RODATA|NOPTR, $32
DATA qpairperm<>+0(SB)/8, $0x0000000100000000
DATA qpairperm<>+8(SB)/8, $0x0000000500000004
DATA qpairperm<>+16(SB)/8, $0x0000000300000002
DATA qpairperm<>+24(SB)/8, $0x0000000700000006
GLOBL qpairperm<>(SB), RODATA|NOPTR, $32
DATA qones16<>+0(SB)/8, $0x0001000100010001
DATA qones16<>+8(SB)/8, $0x0001000100010001
DATA qones16<>+16(SB)/8, $0x0001000100010001
DATA qones16<>+24(SB)/8, $0x0001000100010001
GLOBL qones16<>(SB), RODATA|NOPTR, $32

// HMAXPS leaves in every lane of Y the maximum of its 8 floats. T is
// scratch; X is the low half of Y.
#define HMAXPS(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VMAXPS       T, X, X; \
	VMOVHLPS     X, X, T; \
	VMAXPS       T, X, X; \
	VMOVSHDUP    X, T; \
	VMAXSS       T, X, X; \
	VBROADCASTSS X, Y

// ROUNDAWAY rounds the floats of Y half away from zero, like C's roundf
// (exactly: t = trunc(y), then y - t is exact and t moves one away from
// zero when |y - t| >= 0.5). T1, T2 are scratch.
#define ROUNDAWAY(Y, T1, T2) \
	VROUNDPS $0x0b, Y, T1; \
	VSUBPS   T1, Y, T2; \
	VANDPS   qabs<>(SB), T2, T2; \
	VCMPPS   $0x1d, qhalf<>(SB), T2, T2; \
	VANDPS   qsign<>(SB), Y, Y; \
	VORPS    qone<>(SB), Y, Y; \
	VANDPS   T2, Y, Y; \
	VADDPS   T1, Y, Y

// NOTINT zeroes the lanes of Y where a conversion to int32 failed (the
// value was infinite or NaN: a block of subnormal activations makes 1/d
// overflow), as the Go reference does. T is scratch.
#define NOTINT(Y, T) \
	VPCMPEQD qsign<>(SB), Y, T; \
	VPANDN   Y, T, Y

// PACK32 packs the int32 lanes of Y0-Y3 (elements 0-7, ..., 24-31) to 32
// int8 in order in Y0 (values are within int8). Y7 = qpackperm.
#define PACK32 \
	VPACKSSDW Y1, Y0, Y0; \
	VPACKSSDW Y3, Y2, Y2; \
	VPACKSSWB Y2, Y0, Y0; \
	VPERMD    Y0, Y7, Y0

// func quantQ8aAVX2(dst []byte, x []float32)
//
// quantQ8a for len(x)/32 blocks: per block d = amax/127 (rounded to fp16,
// stored widened), q = roundf(x * (1/d)) with the unrounded d (0 when
// d = 0), -8 times the sums of pairs of q and -8 times the sum of q.
TEXT ·quantQ8aAVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	SHRQ $5, CX
	JZ   q8adone
	MOVQ CX, R9
	SHLQ $5, R9
	ADDQ DI, R9                // -8*pair sums
	MOVQ CX, R8
	SHLQ $5, R8
	ADDQ R9, R8                // d
	LEAQ (R8)(CX*4), R10       // -8*sum
	VMOVDQU qpackperm<>(SB), Y7
	VMOVDQU qbytes8<>(SB), Y8

q8ablk:
	VMOVUPS  (SI), Y0
	VMOVUPS  32(SI), Y1
	VMOVUPS  64(SI), Y2
	VMOVUPS  96(SI), Y3
	VANDPS   qabs<>(SB), Y0, Y4
	VANDPS   qabs<>(SB), Y1, Y5
	VMAXPS   Y5, Y4, Y4
	VANDPS   qabs<>(SB), Y2, Y5
	VMAXPS   Y5, Y4, Y4
	VANDPS   qabs<>(SB), Y3, Y5
	VMAXPS   Y5, Y4, Y4
	HMAXPS(Y4, X4, X5)
	VDIVPS   q127<>(SB), Y4, Y4    // d
	VMOVUPS  qone<>(SB), Y5
	VDIVPS   Y4, Y5, Y5            // 1/d
	VXORPS   Y6, Y6, Y6
	VCMPPS   $4, Y6, Y4, Y6        // d != 0
	VANDPS   Y6, Y5, Y5            // id
	VCVTPS2PH $0, X4, X6
	VCVTPH2PS X6, X6
	VMOVSS   X6, (R8)
	VMULPS   Y5, Y0, Y0
	VMULPS   Y5, Y1, Y1
	VMULPS   Y5, Y2, Y2
	VMULPS   Y5, Y3, Y3
	ROUNDAWAY(Y0, Y4, Y6)
	ROUNDAWAY(Y1, Y4, Y6)
	ROUNDAWAY(Y2, Y4, Y6)
	ROUNDAWAY(Y3, Y4, Y6)
	VCVTTPS2DQ Y0, Y0
	VCVTTPS2DQ Y1, Y1
	VCVTTPS2DQ Y2, Y2
	VCVTTPS2DQ Y3, Y3
	NOTINT(Y0, Y4)
	NOTINT(Y1, Y4)
	NOTINT(Y2, Y4)
	NOTINT(Y3, Y4)
	PACK32
	VMOVDQU  Y0, (DI)
	VPMADDUBSW Y0, Y8, Y1          // 8*(q[2j]+q[2j+1])
	VPXOR    Y2, Y2, Y2
	VPSUBW   Y1, Y2, Y1
	VMOVDQU  Y1, (R9)
	VPMADDWD qones16<>(SB), Y1, Y2
	VEXTRACTI128 $1, Y2, X3
	VPADDD   X3, X2, X2
	VPSHUFD  $0x4e, X2, X3
	VPADDD   X3, X2, X2
	VPSHUFD  $0xb1, X2, X3
	VPADDD   X3, X2, X2
	VMOVD    X2, (R10)
	ADDQ     $4, R10
	ADDQ     $128, SI
	ADDQ     $32, DI
	ADDQ     $4, R8
	ADDQ     $32, R9
	DECQ     CX
	JNZ      q8ablk

q8adone:
	VZEROUPPER
	RET

// Q8K_32 quantizes the 32 floats at off(SI) with Y5 = iscale, stores them
// at off/4(DI) and leaves the sums of each 16 in the int32 lanes of G0, G1.
#define Q8K_32(off, qoff, G0, G1) \
	VMULPS    off(SI), Y5, Y0; \
	VMULPS    off+32(SI), Y5, Y1; \
	VMULPS    off+64(SI), Y5, Y2; \
	VMULPS    off+96(SI), Y5, Y3; \
	VCVTPS2DQ Y0, Y0; \
	VCVTPS2DQ Y1, Y1; \
	VCVTPS2DQ Y2, Y2; \
	VCVTPS2DQ Y3, Y3; \
	NOTINT(Y0, Y4); \
	NOTINT(Y1, Y4); \
	NOTINT(Y2, Y4); \
	NOTINT(Y3, Y4); \
	VPMINSD   q127i<>(SB), Y0, Y0; \
	VPMINSD   q127i<>(SB), Y1, Y1; \
	VPMINSD   q127i<>(SB), Y2, Y2; \
	VPMINSD   q127i<>(SB), Y3, Y3; \
	VPADDD    Y1, Y0, G0; \
	VPADDD    Y3, Y2, G1; \
	PACK32; \
	VMOVDQU   Y0, qoff(DI)

// Q8K_SUMS reduces the lane sums of the groups of 16 in Y8-Y15 (eight
// groups) to S = their 8 totals in order. Clobbers Y0, Y1, Y8-Y15.
#define Q8K_SUMS(S) \
	VPHADDD    Y9, Y8, Y8; \
	VPHADDD    Y11, Y10, Y10; \
	VPHADDD    Y13, Y12, Y12; \
	VPHADDD    Y15, Y14, Y14; \
	VPHADDD    Y10, Y8, Y8; \
	VPHADDD    Y14, Y12, Y12; \
	VPERM2I128 $0x20, Y12, Y8, Y0; \
	VPERM2I128 $0x31, Y12, Y8, Y1; \
	VPADDD     Y1, Y0, S

// func quantQ8kaAVX2(dst []byte, x []float32)
//
// quantQ8ka for len(x)/256 super-blocks: the element of largest magnitude
// (the first on ties) gives iscale = -127/max, q = min(127,
// nearest_int(iscale*x)) (VCVTPS2DQ rounds to nearest even, like
// nearest_int), d = 1/iscale, and the sums of each 16 and 32 quants.
TEXT ·quantQ8kaAVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	SHRQ $8, CX
	JZ   q8kdone
	MOVQ CX, R8
	SHLQ $8, R8
	ADDQ DI, R8                // d
	LEAQ (R8)(CX*4), R9        // sums of 16
	MOVQ CX, R10
	SHLQ $5, R10
	ADDQ R9, R10               // sums of 32
	VMOVDQU qpackperm<>(SB), Y7
	VMOVDQU qabs<>(SB), Y6

q8kblk:
	// amax = max |x|
	VXORPS Y4, Y4, Y4
	XORQ   BX, BX
q8kmax:
	VANDPS (SI)(BX*1), Y6, Y0
	VANDPS 32(SI)(BX*1), Y6, Y1
	VMAXPS Y0, Y4, Y4
	VMAXPS Y1, Y4, Y4
	ADDQ   $64, BX
	CMPQ   BX, $1024
	JNE    q8kmax
	HMAXPS(Y4, X4, X5)
	VXORPS   X0, X0, X0
	VUCOMISS X0, X4
	JEQ      q8kzero

	// maxv = the first x with |x| = amax (amax itself if none: NaN input)
	XORQ BX, BX
q8kfind:
	VANDPS    (SI)(BX*1), Y6, Y0
	VCMPPS    $0, Y4, Y0, Y0
	VMOVMSKPS Y0, AX
	TESTL     AX, AX
	JNZ       q8kfound
	ADDQ      $32, BX
	CMPQ      BX, $1024
	JNE       q8kfind
	VMOVAPS   X4, X0
	JMP       q8kscale
q8kfound:
	BSFL      AX, AX
	LEAQ      (BX)(AX*4), BX
	VMOVSS    (SI)(BX*1), X0

q8kscale:
	VMOVSS       qm127<>(SB), X5
	VDIVSS       X0, X5, X5        // iscale = -127/maxv
	VMOVSS       qone<>(SB), X1
	VDIVSS       X5, X1, X1        // d = 1/iscale
	VMOVSS       X1, (R8)
	VBROADCASTSS X5, Y5
	Q8K_32(0, 0, Y8, Y9)
	Q8K_32(128, 32, Y10, Y11)
	Q8K_32(256, 64, Y12, Y13)
	Q8K_32(384, 96, Y14, Y15)
	Q8K_SUMS(Y6)
	Q8K_32(512, 128, Y8, Y9)
	Q8K_32(640, 160, Y10, Y11)
	Q8K_32(768, 192, Y12, Y13)
	Q8K_32(896, 224, Y14, Y15)
	Q8K_SUMS(Y4)
	VPACKSSDW    Y4, Y6, Y0
	VPERMQ       $0xd8, Y0, Y0
	VMOVDQU      Y0, (R9)
	VPHADDD      Y4, Y6, Y0
	VMOVDQU      qpairperm<>(SB), Y1
	VPERMD       Y0, Y1, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKSSDW    X1, X0, X0
	VMOVDQU      X0, (R10)
	VMOVDQU      qabs<>(SB), Y6

q8knext:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	ADDQ $16, R10
	DECQ CX
	JNZ  q8kblk

q8kdone:
	VZEROUPPER
	RET

q8kzero:
	VPXOR   Y0, Y0, Y0
	VMOVDQU Y0, (DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y0, 160(DI)
	VMOVDQU Y0, 192(DI)
	VMOVDQU Y0, 224(DI)
	MOVL    $0, (R8)
	VMOVDQU Y0, (R9)
	VMOVDQU X0, (R10)
	JMP     q8knext
