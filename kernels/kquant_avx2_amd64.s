//go:build amd64 && gc && !purego

#include "textflag.h"
#include "avx2_amd64.h"

// Q4_K, Q5_K and Q6_K weights times activations in the q8ka layout (see
// actlayout.go). Per super-block the integer sums (scales and, for Q6_K,
// the offset of 32 included) are computed exactly in 8 int32 lanes; the
// float accumulator then gets acc += (d*yd) * float(lanes), and for Q4_K/Q5_K
// acc -= (dmin*yd) * float(the 4 lanes of sum m*bsum). The row's result
// is HSUM(acc). The 4-row kernels run the same sequence per activation
// row, so their results are bit-identical.

DATA kmask0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kmask0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kmask0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kmask0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL kmask0f<>(SB), RODATA|NOPTR, $32

DATA kmask03<>+0(SB)/8, $0x0303030303030303
DATA kmask03<>+8(SB)/8, $0x0303030303030303
DATA kmask03<>+16(SB)/8, $0x0303030303030303
DATA kmask03<>+24(SB)/8, $0x0303030303030303
GLOBL kmask03<>(SB), RODATA|NOPTR, $32

DATA kmask0c<>+0(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA kmask0c<>+8(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA kmask0c<>+16(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA kmask0c<>+24(SB)/8, $0x0c0c0c0c0c0c0c0c
GLOBL kmask0c<>(SB), RODATA|NOPTR, $32

DATA kmask30<>+0(SB)/8, $0x3030303030303030
DATA kmask30<>+8(SB)/8, $0x3030303030303030
DATA kmask30<>+16(SB)/8, $0x3030303030303030
DATA kmask30<>+24(SB)/8, $0x3030303030303030
GLOBL kmask30<>(SB), RODATA|NOPTR, $32

DATA kmaskc0<>+0(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA kmaskc0<>+8(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA kmaskc0<>+16(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA kmaskc0<>+24(SB)/8, $0xc0c0c0c0c0c0c0c0
GLOBL kmaskc0<>(SB), RODATA|NOPTR, $32

DATA kmask3f<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA kmask3f<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL kmask3f<>(SB), RODATA|NOPTR, $16

DATA kshift4<>+0(SB)/8, $0x0000000400000000
DATA kshift4<>+8(SB)/8, $0x0000000000000000
GLOBL kshift4<>(SB), RODATA|NOPTR, $16

DATA q4kshuf<>+0(SB)/8, $0x0100010001000100
DATA q4kshuf<>+8(SB)/8, $0x0100010001000100
DATA q4kshuf<>+16(SB)/8, $0x0100010001000100
DATA q4kshuf<>+24(SB)/8, $0x0100010001000100
DATA q4kshuf<>+32(SB)/8, $0x0302030203020302
DATA q4kshuf<>+40(SB)/8, $0x0302030203020302
DATA q4kshuf<>+48(SB)/8, $0x0302030203020302
DATA q4kshuf<>+56(SB)/8, $0x0302030203020302
DATA q4kshuf<>+64(SB)/8, $0x0504050405040504
DATA q4kshuf<>+72(SB)/8, $0x0504050405040504
DATA q4kshuf<>+80(SB)/8, $0x0504050405040504
DATA q4kshuf<>+88(SB)/8, $0x0504050405040504
DATA q4kshuf<>+96(SB)/8, $0x0706070607060706
DATA q4kshuf<>+104(SB)/8, $0x0706070607060706
DATA q4kshuf<>+112(SB)/8, $0x0706070607060706
DATA q4kshuf<>+120(SB)/8, $0x0706070607060706
DATA q4kshuf<>+128(SB)/8, $0x0908090809080908
DATA q4kshuf<>+136(SB)/8, $0x0908090809080908
DATA q4kshuf<>+144(SB)/8, $0x0908090809080908
DATA q4kshuf<>+152(SB)/8, $0x0908090809080908
DATA q4kshuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kshuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kshuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kshuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kshuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kshuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kshuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kshuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kshuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kshuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kshuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kshuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q4kshuf<>(SB), RODATA|NOPTR, $256

DATA q6kshuf<>+0(SB)/8, $0x0100010001000100
DATA q6kshuf<>+8(SB)/8, $0x0100010001000100
DATA q6kshuf<>+16(SB)/8, $0x0302030203020302
DATA q6kshuf<>+24(SB)/8, $0x0302030203020302
DATA q6kshuf<>+32(SB)/8, $0x0504050405040504
DATA q6kshuf<>+40(SB)/8, $0x0504050405040504
DATA q6kshuf<>+48(SB)/8, $0x0706070607060706
DATA q6kshuf<>+56(SB)/8, $0x0706070607060706
DATA q6kshuf<>+64(SB)/8, $0x0908090809080908
DATA q6kshuf<>+72(SB)/8, $0x0908090809080908
DATA q6kshuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kshuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kshuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kshuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kshuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6kshuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6kshuf<>(SB), RODATA|NOPTR, $128

DATA kscdup0<>+0(SB)/8, $0x8001800180008000
DATA kscdup0<>+8(SB)/8, $0x8003800380028002
GLOBL kscdup0<>(SB), RODATA|NOPTR, $16
DATA kscdup1<>+0(SB)/8, $0x8005800580048004
DATA kscdup1<>+8(SB)/8, $0x8007800780068006
GLOBL kscdup1<>(SB), RODATA|NOPTR, $16
DATA kmins<>+0(SB)/8, $0x800b800a80098008
DATA kmins<>+8(SB)/8, $0x800f800e800d800c
GLOBL kmins<>(SB), RODATA|NOPTR, $16

// The one-activation-row kernels (decode: weights streamed from memory
// once) prefetch the weights 1 KiB ahead, which the hardware prefetcher
// alone does not sustain behind this much arithmetic per byte; a prefetch
// past the end of the matrix is harmless.
//
// The Q4_K kernels are software-pipelined: the scales of block b+1 are
// decoded (into the other of two stack buffers) before block b's dot
// products, so the decode's latency overlaps the previous block's work.

// Q4K_SCALES decodes the 12 packed 6-bit scales and mins of the block at
// woff(BX): the dword at buf+4j(SP) = scale j in both int16 halves (for
// VPBROADCASTD), MN = the 8 mins as int16. Clobbers X0-X2.
//   sc[0:4] = a & 0x3f,  sc[4:8] = c & 0x0f | (a >> 6) << 4,
//   m[0:4]  = b & 0x3f,  m[4:8]  = c >> 4  | (b >> 6) << 4,
// bytewise, for the little-endian words a, b, c of bytes 4-15.
#define Q4K_SCALES(woff, buf, MN) \
	VMOVDQU    woff+4(BX), X0; \
	VPSRLD     $6, X0, X1; \
	VPAND      kmask03<>(SB), X1, X1; \
	VPSLLD     $4, X1, X1; \
	VPSHUFD    $0xaa, X0, X2; \
	VPSRLVD    kshift4<>(SB), X2, X2; \
	VPAND      kmask0f<>(SB), X2, X2; \
	VPOR       X1, X2, X2; \
	VPAND      kmask3f<>(SB), X0, X0; \
	VPUNPCKLDQ X2, X0, X0; \
	VPSHUFB    kscdup0<>(SB), X0, X1; \
	VPSHUFB    kscdup1<>(SB), X0, X2; \
	VPSHUFB    kmins<>(SB), X0, MN; \
	VMOVDQU    X1, buf(SP); \
	VMOVDQU    X2, buf+16(SP)

// Q4K_UNPACK loads 32 bytes of nibbles: Y1 = low nibbles (sub-block 2k),
// Y2 = high nibbles (2k+1), Y3 and Y4 = their scales in every int16
// (from the stack at s0, s1).
#define Q4K_UNPACK(woff, s0, s1, mask) \
	VMOVDQU      woff(BX), Y1; \
	VPSRLW       $4, Y1, Y2; \
	VPAND        mask, Y1, Y1; \
	VPAND        mask, Y2, Y2; \
	VPBROADCASTD s0(SP), Y3; \
	VPBROADCASTD s1(SP), Y4

// Q4K_DOT: Ilo += sc*(q.x) for the low sub-block, Ihi for the high one.
// The nibbles are the unsigned operand (pair sums <= 2*15*127).
// Clobbers Y0, Y5.
#define Q4K_DOT(xlo, xhi, Ilo, Ihi) \
	VPMADDUBSW xlo, Y1, Y5; \
	VPMADDWD   Y3, Y5, Y5; \
	VPADDD     Y5, Ilo, Ilo; \
	VPMADDUBSW xhi, Y2, Y0; \
	VPMADDWD   Y4, Y0, Y0; \
	VPADDD     Y0, Ihi, Ihi

// Q4K_D: X1 = [d, dmin] of the block (the first two halves at BX).
#define Q4K_D VCVTPH2PS (BX), X1

// Q4K_FLOAT: F += (d*yd)*float(I); F -= (dmin*yd)*float(MN.bsums), the
// products d*yd and dmin*yd rounded once (lanes of one VMULPS).
// Clobbers I, Y0, Y2, X3, X4, Y5.
#define Q4K_FLOAT(yd, bsums, I, F, MN) \
	VCVTDQ2PS    I, I; \
	VBROADCASTSS yd, X3; \
	VMULPS       X3, X1, X4; \
	VBROADCASTSS X4, Y5; \
	VFMADD231PS  I, Y5, F; \
	VPMADDWD     bsums, MN, X0; \
	VCVTDQ2PS    X0, X0; \
	VMOVSHDUP    X4, X2; \
	VBROADCASTSS X2, Y2; \
	VFNMADD231PS Y0, Y2, F

// Q4K_BLOCK1: one block of one activation row (two integer accumulators
// Y8, Y9; F = Y12), scales in stack buffer buf and MN.
#define Q4K_BLOCK1(buf, MN) \
	PREFETCHT0 1024(BX); \
	PREFETCHT0 1088(BX); \
	PREFETCHT0 1152(BX); \
	VPXOR Y8, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	Q4K_UNPACK(16, buf+0, buf+4, Y14); \
	Q4K_DOT(0(R12), 32(R12), Y8, Y9); \
	Q4K_UNPACK(48, buf+8, buf+12, Y14); \
	Q4K_DOT(64(R12), 96(R12), Y8, Y9); \
	Q4K_UNPACK(80, buf+16, buf+20, Y14); \
	Q4K_DOT(128(R12), 160(R12), Y8, Y9); \
	Q4K_UNPACK(112, buf+24, buf+28, Y14); \
	Q4K_DOT(192(R12), 224(R12), Y8, Y9); \
	VPADDD Y9, Y8, Y8; \
	Q4K_D; \
	Q4K_FLOAT((R13), (AX), Y8, Y12, MN)

#define Q4K_NEXT1 \
	ADDQ $144, BX; \
	ADDQ $256, R12; \
	ADDQ $4, R13; \
	ADDQ $16, AX

// Q4K_DOT4 runs Q4K_DOT for the four activation rows at offsets lo, hi
// (one integer accumulator each, Y8-Y11).
#define Q4K_DOT4(lo, hi) \
	Q4K_DOT(lo(R12), hi(R12), Y8, Y8); \
	Q4K_DOT(lo(R12)(R11*1), hi(R12)(R11*1), Y9, Y9); \
	Q4K_DOT(lo(R12)(R11*2), hi(R12)(R11*2), Y10, Y10); \
	Q4K_DOT(lo(R12)(R14*1), hi(R12)(R14*1), Y11, Y11)

// Q4K_BLOCK4: one block of four activation rows (F = Y12-Y15).
#define Q4K_BLOCK4(buf, MN) \
	VPXOR Y8, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11; \
	Q4K_UNPACK(16, buf+0, buf+4, kmask0f<>(SB)); \
	Q4K_DOT4(0, 32); \
	Q4K_UNPACK(48, buf+8, buf+12, kmask0f<>(SB)); \
	Q4K_DOT4(64, 96); \
	Q4K_UNPACK(80, buf+16, buf+20, kmask0f<>(SB)); \
	Q4K_DOT4(128, 160); \
	Q4K_UNPACK(112, buf+24, buf+28, kmask0f<>(SB)); \
	Q4K_DOT4(192, 224); \
	Q4K_D; \
	Q4K_FLOAT((R13), (R8), Y8, Y12, MN); \
	Q4K_FLOAT((R13)(R11*1), (R8)(R11*1), Y9, Y13, MN); \
	Q4K_FLOAT((R13)(R11*2), (R8)(R11*2), Y10, Y14, MN); \
	Q4K_FLOAT((R13)(R14*1), (R8)(R14*1), Y11, Y15, MN)

#define Q4K_NEXT4 \
	ADDQ $144, BX; \
	ADDQ $256, R12; \
	ADDQ $4, R13; \
	ADDQ $16, R8


// kbits+32b: the byte 1<<b in every byte (Q5_K's fifth bits).
DATA kbits<>+0(SB)/8, $0x0101010101010101
DATA kbits<>+8(SB)/8, $0x0101010101010101
DATA kbits<>+16(SB)/8, $0x0101010101010101
DATA kbits<>+24(SB)/8, $0x0101010101010101
DATA kbits<>+32(SB)/8, $0x0202020202020202
DATA kbits<>+40(SB)/8, $0x0202020202020202
DATA kbits<>+48(SB)/8, $0x0202020202020202
DATA kbits<>+56(SB)/8, $0x0202020202020202
DATA kbits<>+64(SB)/8, $0x0404040404040404
DATA kbits<>+72(SB)/8, $0x0404040404040404
DATA kbits<>+80(SB)/8, $0x0404040404040404
DATA kbits<>+88(SB)/8, $0x0404040404040404
DATA kbits<>+96(SB)/8, $0x0808080808080808
DATA kbits<>+104(SB)/8, $0x0808080808080808
DATA kbits<>+112(SB)/8, $0x0808080808080808
DATA kbits<>+120(SB)/8, $0x0808080808080808
DATA kbits<>+128(SB)/8, $0x1010101010101010
DATA kbits<>+136(SB)/8, $0x1010101010101010
DATA kbits<>+144(SB)/8, $0x1010101010101010
DATA kbits<>+152(SB)/8, $0x1010101010101010
DATA kbits<>+160(SB)/8, $0x2020202020202020
DATA kbits<>+168(SB)/8, $0x2020202020202020
DATA kbits<>+176(SB)/8, $0x2020202020202020
DATA kbits<>+184(SB)/8, $0x2020202020202020
DATA kbits<>+192(SB)/8, $0x4040404040404040
DATA kbits<>+200(SB)/8, $0x4040404040404040
DATA kbits<>+208(SB)/8, $0x4040404040404040
DATA kbits<>+216(SB)/8, $0x4040404040404040
DATA kbits<>+224(SB)/8, $0x8080808080808080
DATA kbits<>+232(SB)/8, $0x8080808080808080
DATA kbits<>+240(SB)/8, $0x8080808080808080
DATA kbits<>+248(SB)/8, $0x8080808080808080
GLOBL kbits<>(SB), RODATA|NOPTR, $256

// Q5_K: as Q4_K, with the fifth bit of each quant from qh (bytes 16-47):
// bit 2k of qh[l] for element 64k+l (low nibble of chunk k), bit 2k+1
// for element 64k+32+l. Quants 0..31: pair sums <= 2*31*127.

// Q5K_HIGH ORs into dst the bit selected by mask from qh, moved to bit 4
// (masked first, so the 16-bit shift moves nothing across bytes).
// Clobbers Y5.
#define Q5K_HIGH(mask, shiftop, shift, dst) \
	VMOVDQU mask, Y5; \
	VPAND   16(BX), Y5, Y5; \
	shiftop $shift, Y5, Y5; \
	VPOR    Y5, dst, dst

#define Q5K_UNPACK(woff, s0, s1, mask, lobit, loop, losh, hibit, hiop, hish) \
	VMOVDQU      woff(BX), Y1; \
	VPSRLW       $4, Y1, Y2; \
	VPAND        mask, Y1, Y1; \
	VPAND        mask, Y2, Y2; \
	Q5K_HIGH(kbits<>+32*lobit(SB), loop, losh, Y1); \
	Q5K_HIGH(kbits<>+32*hibit(SB), hiop, hish, Y2); \
	VPBROADCASTD s0(SP), Y3; \
	VPBROADCASTD s1(SP), Y4

#define Q5K_BLOCK1(buf, MN) \
	PREFETCHT0 1024(BX); \
	PREFETCHT0 1088(BX); \
	PREFETCHT0 1152(BX); \
	VPXOR Y8, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	Q5K_UNPACK(48, buf+0, buf+4, Y14, 0, VPSLLW, 4, 1, VPSLLW, 3); \
	Q4K_DOT(0(R12), 32(R12), Y8, Y9); \
	Q5K_UNPACK(80, buf+8, buf+12, Y14, 2, VPSLLW, 2, 3, VPSLLW, 1); \
	Q4K_DOT(64(R12), 96(R12), Y8, Y9); \
	Q5K_UNPACK(112, buf+16, buf+20, Y14, 4, VPSLLW, 0, 5, VPSRLW, 1); \
	Q4K_DOT(128(R12), 160(R12), Y8, Y9); \
	Q5K_UNPACK(144, buf+24, buf+28, Y14, 6, VPSRLW, 2, 7, VPSRLW, 3); \
	Q4K_DOT(192(R12), 224(R12), Y8, Y9); \
	VPADDD Y9, Y8, Y8; \
	Q4K_D; \
	Q4K_FLOAT((R13), (AX), Y8, Y12, MN)

#define Q5K_NEXT1 \
	ADDQ $176, BX; \
	ADDQ $256, R12; \
	ADDQ $4, R13; \
	ADDQ $16, AX

#define Q5K_BLOCK4(buf, MN) \
	VPXOR Y8, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11; \
	Q5K_UNPACK(48, buf+0, buf+4, kmask0f<>(SB), 0, VPSLLW, 4, 1, VPSLLW, 3); \
	Q4K_DOT4(0, 32); \
	Q5K_UNPACK(80, buf+8, buf+12, kmask0f<>(SB), 2, VPSLLW, 2, 3, VPSLLW, 1); \
	Q4K_DOT4(64, 96); \
	Q5K_UNPACK(112, buf+16, buf+20, kmask0f<>(SB), 4, VPSLLW, 0, 5, VPSRLW, 1); \
	Q4K_DOT4(128, 160); \
	Q5K_UNPACK(144, buf+24, buf+28, kmask0f<>(SB), 6, VPSRLW, 2, 7, VPSRLW, 3); \
	Q4K_DOT4(192, 224); \
	Q4K_D; \
	Q4K_FLOAT((R13), (R8), Y8, Y12, MN); \
	Q4K_FLOAT((R13)(R11*1), (R8)(R11*1), Y9, Y13, MN); \
	Q4K_FLOAT((R13)(R11*2), (R8)(R11*2), Y10, Y14, MN); \
	Q4K_FLOAT((R13)(R14*1), (R8)(R14*1), Y11, Y15, MN)

#define Q5K_NEXT4 \
	ADDQ $176, BX; \
	ADDQ $256, R12; \
	ADDQ $4, R13; \
	ADDQ $16, R8

// STORE4F stores HSUM(Y12..Y15) to out[i*ostride] (DI), i < 4.
// Clobbers AX, R9, X0.
#define STORE4F \
	HSUM(Y12, X12, X0); \
	HSUM(Y13, X13, X0); \
	HSUM(Y14, X14, X0); \
	HSUM(Y15, X15, X0); \
	MOVQ   ostride+24(FP), AX; \
	SHLQ   $2, AX; \
	LEAQ   (AX)(AX*2), R9; \
	VMOVSS X12, (DI); \
	VMOVSS X13, (DI)(AX*1); \
	VMOVSS X14, (DI)(AX*2); \
	VMOVSS X15, (DI)(R9*1)

// func q4kVecAVX2(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q4kVecAVX2(SB), NOSPLIT, $64-88
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ stride+48(FP), R8
	MOVQ blocks+56(FP), R9
	MOVQ x_base+64(FP), R10
	MOVQ R9, R11
	SHLQ $8, R11
	ADDQ R10, R11              // yd: x + 256*nb
	LEAQ (R9)(R9*8), R14
	SHLQ $2, R14
	ADDQ R11, R14              // sums of 32: x + 292*nb
	VMOVDQU kmask0f<>(SB), Y14

q4krow:
	MOVQ   SI, BX
	MOVQ   R9, DX
	MOVQ   R10, R12
	MOVQ   R11, R13
	MOVQ   R14, AX
	VXORPS Y12, Y12, Y12
	Q4K_SCALES(0, 0, X7)
	DECQ   DX

q4kloop:
	JZ   q4klast0
	Q4K_SCALES(144, 32, X11)
	Q4K_BLOCK1(0, X7)
	Q4K_NEXT1
	DECQ DX
	JZ   q4klast1
	Q4K_SCALES(144, 0, X7)
	Q4K_BLOCK1(32, X11)
	Q4K_NEXT1
	DECQ DX
	JMP  q4kloop

q4klast0:
	Q4K_BLOCK1(0, X7)
	JMP q4kend

q4klast1:
	Q4K_BLOCK1(32, X11)

q4kend:
	HSUM(Y12, X12, X0)
	VMOVSS X12, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    q4krow
	VZEROUPPER
	RET

// func q4kVec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q4kVec4AVX2(SB), NOSPLIT, $64-112
	MOVQ out_base+0(FP), DI
	MOVQ w_base+32(FP), SI
	MOVQ rows+64(FP), CX
	MOVQ xstride+104(FP), R11
	LEAQ (R11)(R11*2), R14

q4k4row:
	MOVQ   SI, BX
	MOVQ   blocks+72(FP), DX
	MOVQ   x_base+80(FP), R12
	MOVQ   DX, R13
	SHLQ   $8, R13
	ADDQ   R12, R13            // yd
	LEAQ   (DX)(DX*8), R8
	SHLQ   $2, R8
	ADDQ   R13, R8             // sums of 32
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	Q4K_SCALES(0, 0, X7)
	DECQ   DX

q4k4loop:
	JZ   q4k4last0
	Q4K_SCALES(144, 32, X6)
	Q4K_BLOCK4(0, X7)
	Q4K_NEXT4
	DECQ DX
	JZ   q4k4last1
	Q4K_SCALES(144, 0, X7)
	Q4K_BLOCK4(32, X6)
	Q4K_NEXT4
	DECQ DX
	JMP  q4k4loop

q4k4last0:
	Q4K_BLOCK4(0, X7)
	JMP q4k4end

q4k4last1:
	Q4K_BLOCK4(32, X6)

q4k4end:
	STORE4F
	ADDQ $4, DI
	ADDQ stride+56(FP), SI
	DECQ CX
	JNZ  q4k4row
	VZEROUPPER
	RET

// func q5kVecAVX2(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q5kVecAVX2(SB), NOSPLIT, $64-88
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ stride+48(FP), R8
	MOVQ blocks+56(FP), R9
	MOVQ x_base+64(FP), R10
	MOVQ R9, R11
	SHLQ $8, R11
	ADDQ R10, R11              // yd: x + 256*nb
	LEAQ (R9)(R9*8), R14
	SHLQ $2, R14
	ADDQ R11, R14              // sums of 32: x + 292*nb
	VMOVDQU kmask0f<>(SB), Y14

q5krow:
	MOVQ   SI, BX
	MOVQ   R9, DX
	MOVQ   R10, R12
	MOVQ   R11, R13
	MOVQ   R14, AX
	VXORPS Y12, Y12, Y12
	Q4K_SCALES(0, 0, X7)
	DECQ   DX

q5kloop:
	JZ   q5klast0
	Q4K_SCALES(176, 32, X11)
	Q5K_BLOCK1(0, X7)
	Q5K_NEXT1
	DECQ DX
	JZ   q5klast1
	Q4K_SCALES(176, 0, X7)
	Q5K_BLOCK1(32, X11)
	Q5K_NEXT1
	DECQ DX
	JMP  q5kloop

q5klast0:
	Q5K_BLOCK1(0, X7)
	JMP q5kend

q5klast1:
	Q5K_BLOCK1(32, X11)

q5kend:
	HSUM(Y12, X12, X0)
	VMOVSS X12, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    q5krow
	VZEROUPPER
	RET

// func q5kVec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q5kVec4AVX2(SB), NOSPLIT, $64-112
	MOVQ out_base+0(FP), DI
	MOVQ w_base+32(FP), SI
	MOVQ rows+64(FP), CX
	MOVQ xstride+104(FP), R11
	LEAQ (R11)(R11*2), R14

q5k4row:
	MOVQ   SI, BX
	MOVQ   blocks+72(FP), DX
	MOVQ   x_base+80(FP), R12
	MOVQ   DX, R13
	SHLQ   $8, R13
	ADDQ   R12, R13            // yd
	LEAQ   (DX)(DX*8), R8
	SHLQ   $2, R8
	ADDQ   R13, R8             // sums of 32
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	Q4K_SCALES(0, 0, X7)
	DECQ   DX

q5k4loop:
	JZ   q5k4last0
	Q4K_SCALES(176, 32, X6)
	Q5K_BLOCK4(0, X7)
	Q5K_NEXT4
	DECQ DX
	JZ   q5k4last1
	Q4K_SCALES(176, 0, X7)
	Q5K_BLOCK4(32, X6)
	Q5K_NEXT4
	DECQ DX
	JMP  q5k4loop

q5k4last0:
	Q5K_BLOCK4(0, X7)
	JMP q5k4end

q5k4last1:
	Q5K_BLOCK4(32, X6)

q5k4end:
	STORE4F
	ADDQ $4, DI
	ADDQ stride+56(FP), SI
	DECQ CX
	JNZ  q5k4row
	VZEROUPPER
	RET

// Q6K_CORR: I = -32 * sum_g sc_g*bsum_g (the offset of the 6-bit quants,
// which enter unsigned), for the 16 scales in Y7. Clobbers Y0.
#define Q6K_CORR(bsums, I) \
	VPMADDWD bsums, Y7, Y0; \
	VPSLLD   $5, Y0, Y0; \
	VPXOR    I, I, I; \
	VPSUBD   Y0, I, I

// Q6K_SCALES8: Y6 = the 8 int8 scales at off(BX) as int16, in both lanes.
#define Q6K_SCALES8(off) \
	VPMOVSXBW off(BX), X6; \
	VPERMQ    $0x44, Y6, Y6

// Q6K_UNPACK: the 6-bit quants (0..63) of one half super-block from 32
// bytes of low nibbles at ql, 32 more at qr and 32 bytes of high bits at
// qh: Y1, Y2, Y4, Y5 = elements 0-31, 32-63, 64-95, 96-127. Clobbers Y0, Y3.
#define Q6K_UNPACK(ql, qr, qh) \
	VMOVDQU ql(BX), Y1; \
	VMOVDQU qr(BX), Y2; \
	VMOVDQU qh(BX), Y3; \
	VPSRLW  $4, Y1, Y4; \
	VPAND   kmask0f<>(SB), Y4, Y4; \
	VPAND   kmask0f<>(SB), Y1, Y1; \
	VPSRLW  $4, Y2, Y5; \
	VPAND   kmask0f<>(SB), Y5, Y5; \
	VPAND   kmask0f<>(SB), Y2, Y2; \
	VPAND   kmask03<>(SB), Y3, Y0; \
	VPSLLW  $4, Y0, Y0; \
	VPOR    Y0, Y1, Y1; \
	VPAND   kmask0c<>(SB), Y3, Y0; \
	VPSLLW  $2, Y0, Y0; \
	VPOR    Y0, Y2, Y2; \
	VPAND   kmask30<>(SB), Y3, Y0; \
	VPOR    Y0, Y4, Y4; \
	VPAND   kmaskc0<>(SB), Y3, Y3; \
	VPSRLW  $2, Y3, Y3; \
	VPOR    Y3, Y5, Y5

// Q6K_SCALE: Y3 = the scales of chunk c of the half (16 elements each
// lane) in every int16 of its lane.
#define Q6K_SCALE(c) VPSHUFB q6kshuf<>+(32*c)(SB), Y6, Y3

// Q6K_DOT: I += sc*(q.x). Pair sums <= 2*63*127. Clobbers Y0.
#define Q6K_DOT(xaddr, q, I) \
	VPMADDUBSW xaddr, q, Y0; \
	VPMADDWD   Y3, Y0, Y0; \
	VPADDD     Y0, I, I

// Q6K_FLOAT: F += (d*yd)*float(I), with Y1 = d. Clobbers I, Y3.
#define Q6K_FLOAT(yd, I, F) \
	VCVTDQ2PS    I, I; \
	VBROADCASTSS yd, Y3; \
	VMULPS       Y3, Y1, Y3; \
	VFMADD231PS  I, Y3, F

// func q6kVecAVX2(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q6kVecAVX2(SB), NOSPLIT, $0-88
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ stride+48(FP), R8
	MOVQ blocks+56(FP), R9
	MOVQ x_base+64(FP), R10
	MOVQ R9, R11
	SHLQ $8, R11
	ADDQ R10, R11              // yd: x + 256*nb
	LEAQ (R11)(R9*4), R14      // sums of 16: x + 260*nb

q6krow:
	MOVQ   SI, BX
	MOVQ   R9, DX
	MOVQ   R10, R12
	MOVQ   R11, R13
	MOVQ   R14, AX
	VXORPS Y12, Y12, Y12

q6kblk:
	PREFETCHT0 1024(BX)
	PREFETCHT0 1088(BX)
	PREFETCHT0 1152(BX)
	PREFETCHT0 1216(BX)
	VPMOVSXBW 192(BX), Y7
	Q6K_CORR((AX), Y8)
	Q6K_SCALES8(192)
	Q6K_UNPACK(0, 32, 128)
	Q6K_SCALE(0)
	Q6K_DOT(0(R12), Y1, Y8)
	Q6K_SCALE(1)
	Q6K_DOT(32(R12), Y2, Y8)
	Q6K_SCALE(2)
	Q6K_DOT(64(R12), Y4, Y8)
	Q6K_SCALE(3)
	Q6K_DOT(96(R12), Y5, Y8)
	Q6K_SCALES8(200)
	Q6K_UNPACK(64, 96, 160)
	Q6K_SCALE(0)
	Q6K_DOT(128(R12), Y1, Y8)
	Q6K_SCALE(1)
	Q6K_DOT(160(R12), Y2, Y8)
	Q6K_SCALE(2)
	Q6K_DOT(192(R12), Y4, Y8)
	Q6K_SCALE(3)
	Q6K_DOT(224(R12), Y5, Y8)
	VPBROADCASTW 208(BX), X1
	VCVTPH2PS    X1, Y1
	Q6K_FLOAT((R13), Y8, Y12)
	ADDQ $210, BX
	ADDQ $256, R12
	ADDQ $4, R13
	ADDQ $32, AX
	DECQ DX
	JNZ  q6kblk

	HSUM(Y12, X12, X0)
	VMOVSS X12, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    q6krow
	VZEROUPPER
	RET

// Q6K_DOT4 runs chunk c (quants in q, activations at offset off) for the
// four activation rows.
#define Q6K_DOT4(c, off, q) \
	Q6K_SCALE(c); \
	Q6K_DOT(off(R12), q, Y8); \
	Q6K_DOT(off(R12)(R11*1), q, Y9); \
	Q6K_DOT(off(R12)(R11*2), q, Y10); \
	Q6K_DOT(off(R12)(R14*1), q, Y11)

// func q6kVec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q6kVec4AVX2(SB), NOSPLIT, $0-112
	MOVQ out_base+0(FP), DI
	MOVQ w_base+32(FP), SI
	MOVQ rows+64(FP), CX
	MOVQ xstride+104(FP), R11
	LEAQ (R11)(R11*2), R14

q6k4row:
	MOVQ   SI, BX
	MOVQ   blocks+72(FP), DX
	MOVQ   x_base+80(FP), R12
	MOVQ   DX, R13
	SHLQ   $8, R13
	ADDQ   R12, R13            // yd
	LEAQ   (R13)(DX*4), R8     // sums of 16
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15

q6k4blk:
	VPMOVSXBW 192(BX), Y7
	Q6K_CORR((R8), Y8)
	Q6K_CORR((R8)(R11*1), Y9)
	Q6K_CORR((R8)(R11*2), Y10)
	Q6K_CORR((R8)(R14*1), Y11)
	Q6K_SCALES8(192)
	Q6K_UNPACK(0, 32, 128)
	Q6K_DOT4(0, 0, Y1)
	Q6K_DOT4(1, 32, Y2)
	Q6K_DOT4(2, 64, Y4)
	Q6K_DOT4(3, 96, Y5)
	Q6K_SCALES8(200)
	Q6K_UNPACK(64, 96, 160)
	Q6K_DOT4(0, 128, Y1)
	Q6K_DOT4(1, 160, Y2)
	Q6K_DOT4(2, 192, Y4)
	Q6K_DOT4(3, 224, Y5)
	VPBROADCASTW 208(BX), X1
	VCVTPH2PS    X1, Y1
	Q6K_FLOAT((R13), Y8, Y12)
	Q6K_FLOAT((R13)(R11*1), Y9, Y13)
	Q6K_FLOAT((R13)(R11*2), Y10, Y14)
	Q6K_FLOAT((R13)(R14*1), Y11, Y15)
	ADDQ $210, BX
	ADDQ $256, R12
	ADDQ $4, R13
	ADDQ $32, R8
	DECQ DX
	JNZ  q6k4blk

	STORE4F
	ADDQ $4, DI
	ADDQ stride+56(FP), SI
	DECQ CX
	JNZ  q6k4row
	VZEROUPPER
	RET
