//go:build amd64 && gc && !purego

#include "textflag.h"
#include "avx2_amd64.h"

// Q8_0 and Q4_0 weights times activations in the q8a layout (see
// actlayout.go). Per 32-element block b of a row the integer dot product
// is computed exactly as 8 int32 lanes s, and float accumulator b%2 gets
// acc += (dw_b*dx_b) * float(s) (one FMA per lane; two accumulators hide
// the FMA latency); the row's result is HSUM(acc0+acc1). The one-row
// kernels prefetch the weights 1 KiB ahead (see kquant_avx2_amd64.s). The 4-row
// kernels run the same sequence per activation row, so their results are
// bit-identical.

DATA ones16<>+0(SB)/8, $0x0001000100010001
DATA ones16<>+8(SB)/8, $0x0001000100010001
DATA ones16<>+16(SB)/8, $0x0001000100010001
DATA ones16<>+24(SB)/8, $0x0001000100010001
GLOBL ones16<>(SB), RODATA|NOPTR, $32

DATA mask0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA mask0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA mask0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA mask0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL mask0f<>(SB), RODATA|NOPTR, $32

// Shift counts of the dwords: 0 in the low lane, 4 in the high one.
DATA q4shift<>+0(SB)/8, $0
DATA q4shift<>+8(SB)/8, $0
DATA q4shift<>+16(SB)/8, $0x0000000400000004
DATA q4shift<>+24(SB)/8, $0x0000000400000004
GLOBL q4shift<>(SB), RODATA|NOPTR, $32

// STORE4 adds the accumulator pairs and stores the 4 row sums to
// out[i*ostride] (DI), i < 4. Clobbers AX, R9, X0, Y8-Y15.
#define STORE4 \
	VADDPS Y9, Y8, Y8; \
	VADDPS Y11, Y10, Y10; \
	VADDPS Y13, Y12, Y12; \
	VADDPS Y15, Y14, Y14; \
	HSUM(Y8, X8, X0); \
	HSUM(Y10, X10, X0); \
	HSUM(Y12, X12, X0); \
	HSUM(Y14, X14, X0); \
	MOVQ   ostride+24(FP), AX; \
	SHLQ   $2, AX; \
	LEAQ   (AX)(AX*2), R9; \
	VMOVSS X8, (DI); \
	VMOVSS X10, (DI)(AX*1); \
	VMOVSS X12, (DI)(AX*2); \
	VMOVSS X14, (DI)(R9*1)

// Q8_0 weights: |w| is the unsigned operand of VPMADDUBSW and x*sign(w)
// the signed one (|x| <= 127, and |w| = 128 fits an unsigned byte).

// Q8_0_BLK: acc += dw*dx * (8 int32 lanes of w.x) for the block at
// woff(BX) and activations xoff(R12), doff(R13). Clobbers Y2-Y6.
#define Q8_0_BLK(woff, xoff, doff, acc) \
	VMOVDQU      woff+2(BX), Y2; \
	VPABSB       Y2, Y3; \
	VMOVDQU      xoff(R12), Y4; \
	VPSIGNB      Y2, Y4, Y4; \
	VPMADDUBSW   Y4, Y3, Y4; \
	VPMADDWD     Y15, Y4, Y4; \
	VCVTDQ2PS    Y4, Y4; \
	VCVTPH2PS    woff(BX), X5; \
	VMULSS       doff(R13), X5, X5; \
	VBROADCASTSS X5, Y5; \
	VFMADD231PS  Y4, Y5, acc

// func q8_0VecAVX2(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q8_0VecAVX2(SB), NOSPLIT, $0-88
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ stride+48(FP), R8
	MOVQ blocks+56(FP), R9
	MOVQ x_base+64(FP), R10
	MOVQ R9, R11
	SHLQ $6, R11
	ADDQ R10, R11              // d: x + 64*nb
	VMOVDQU ones16<>(SB), Y15

q80row:
	MOVQ   SI, BX
	MOVQ   R10, R12
	MOVQ   R11, R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ   R9, DX
	SHRQ   $1, DX
	JZ     q80odd

q80pair:
	PREFETCHT0 1024(BX)
	Q8_0_BLK(0, 0, 0, Y0)
	Q8_0_BLK(34, 32, 4, Y1)
	ADDQ $68, BX
	ADDQ $64, R12
	ADDQ $8, R13
	DECQ DX
	JNZ  q80pair

q80odd:
	TESTQ $1, R9
	JZ    q80sum
	Q8_0_BLK(0, 0, 0, Y0)

q80sum:
	VADDPS Y1, Y0, Y0
	HSUM(Y0, X0, X1)
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    q80row
	VZEROUPPER
	RET

// The 4-row kernels keep the two accumulators of activation row i in
// Y(8+2i), Y(9+2i) and index the activation rows as (R12), (R12)(R11*1),
// (R12)(R11*2), (R12)(R14*1) (R11 = the row stride, R14 = 3*R11).

// Q8_0_W4 loads the block at woff(BX): Y2 = w, Y3 = |w|, X5 = dw (low
// float).
#define Q8_0_W4(woff) \
	VMOVDQU      woff+2(BX), Y2; \
	VPABSB       Y2, Y3; \
	VCVTPH2PS    woff(BX), X5

// Q8_0_ROW is Q8_0_BLK for one activation row. Clobbers Y4, Y6.
#define Q8_0_ROW(xaddr, daddr, acc) \
	VMOVDQU      xaddr, Y4; \
	VPSIGNB      Y2, Y4, Y4; \
	VPMADDUBSW   Y4, Y3, Y4; \
	VPMADDWD     ones16<>(SB), Y4, Y4; \
	VCVTDQ2PS    Y4, Y4; \
	VMULSS       daddr, X5, X6; \
	VBROADCASTSS X6, Y6; \
	VFMADD231PS  Y4, Y6, acc

#define Q8_0_BLK4(woff, xoff, doff, a0, a1, a2, a3) \
	Q8_0_W4(woff); \
	Q8_0_ROW(xoff(R12), doff(R13), a0); \
	Q8_0_ROW(xoff(R12)(R11*1), doff(R13)(R11*1), a1); \
	Q8_0_ROW(xoff(R12)(R11*2), doff(R13)(R11*2), a2); \
	Q8_0_ROW(xoff(R12)(R14*1), doff(R13)(R14*1), a3)

#define ZERO8 \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	VXORPS Y12, Y12, Y12; \
	VXORPS Y13, Y13, Y13; \
	VXORPS Y14, Y14, Y14; \
	VXORPS Y15, Y15, Y15

// func q8_0Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q8_0Vec4AVX2(SB), NOSPLIT, $0-112
	MOVQ out_base+0(FP), DI
	MOVQ w_base+32(FP), SI
	MOVQ rows+64(FP), CX
	MOVQ xstride+104(FP), R11
	LEAQ (R11)(R11*2), R14

q80r4row:
	MOVQ SI, BX
	MOVQ x_base+80(FP), R12
	MOVQ blocks+72(FP), DX
	MOVQ DX, R13
	SHLQ $6, R13
	ADDQ R12, R13              // d
	ZERO8
	SHRQ $1, DX
	JZ   q80r4odd

q80r4pair:
	Q8_0_BLK4(0, 0, 0, Y8, Y10, Y12, Y14)
	Q8_0_BLK4(34, 32, 4, Y9, Y11, Y13, Y15)
	ADDQ $68, BX
	ADDQ $64, R12
	ADDQ $8, R13
	DECQ DX
	JNZ  q80r4pair

q80r4odd:
	MOVQ  blocks+72(FP), DX
	TESTQ $1, DX
	JZ    q80r4sum
	Q8_0_BLK4(0, 0, 0, Y8, Y10, Y12, Y14)

q80r4sum:
	STORE4
	ADDQ $4, DI
	ADDQ stride+56(FP), SI
	DECQ CX
	JNZ  q80r4row
	VZEROUPPER
	RET

// Q4_0 weights: the nibbles q (0..15) are the unsigned operand, so the
// pair sums are q.x; adding -8*(x[2j]+x[2j+1]) (stored with the
// activations) makes them (q-8).x before VPMADDWD widens them.

// Q4_0_W loads the nibbles of the block at woff(BX) into Y2: bytes 0-15
// are the low nibbles (elements 0-15), bytes 16-31 the high ones.
#define Q4_0_W(woff) \
	VBROADCASTI128 woff+2(BX), Y2; \
	VPSRLVD        q4shift<>(SB), Y2, Y2; \
	VPAND          mask0f<>(SB), Y2, Y2

// Q4_0_BLK: acc += dw*dx * (8 int32 lanes of (q-8).x). Activations at
// xoff(R12), their pair corrections at coff(R14), d at doff(R13).
// Clobbers Y2, Y4-Y6.
#define Q4_0_BLK(woff, xoff, coff, doff, acc) \
	VBROADCASTI128 woff+2(BX), Y2; \
	VPSRLVD        Y13, Y2, Y2; \
	VPAND          Y14, Y2, Y2; \
	VPMADDUBSW   xoff(R12), Y2, Y4; \
	VPADDW       coff(R14), Y4, Y4; \
	VPMADDWD     Y15, Y4, Y4; \
	VCVTDQ2PS    Y4, Y4; \
	VCVTPH2PS    woff(BX), X5; \
	VMULSS       doff(R13), X5, X5; \
	VBROADCASTSS X5, Y5; \
	VFMADD231PS  Y4, Y5, acc

// func q4_0VecAVX2(out []float32, w []byte, stride, blocks int, x []byte)
TEXT ·q4_0VecAVX2(SB), NOSPLIT, $0-88
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ stride+48(FP), R8
	MOVQ blocks+56(FP), R9
	MOVQ x_base+64(FP), R10
	MOVQ R9, AX
	SHLQ $5, AX
	ADDQ R10, AX               // corrections: x + 32*nb
	MOVQ R9, R11
	SHLQ $6, R11
	ADDQ R10, R11              // d: x + 64*nb
	VMOVDQU q4shift<>(SB), Y13
	VMOVDQU mask0f<>(SB), Y14
	VMOVDQU ones16<>(SB), Y15

q40row:
	MOVQ   SI, BX
	MOVQ   R10, R12
	MOVQ   R11, R13
	MOVQ   AX, R14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ   R9, DX
	SHRQ   $1, DX
	JZ     q40odd

q40pair:
	PREFETCHT0 1024(BX)
	Q4_0_BLK(0, 0, 0, 0, Y0)
	Q4_0_BLK(18, 32, 32, 4, Y1)
	ADDQ $36, BX
	ADDQ $64, R12
	ADDQ $8, R13
	ADDQ $64, R14
	DECQ DX
	JNZ  q40pair

q40odd:
	TESTQ $1, R9
	JZ    q40sum
	Q4_0_BLK(0, 0, 0, 0, Y0)

q40sum:
	VADDPS Y1, Y0, Y0
	HSUM(Y0, X0, X1)
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    q40row
	VZEROUPPER
	RET

// Q4_0_ROW is Q4_0_BLK for one activation row, with Y2 = q and X5 = dw.
// Clobbers Y4, Y6.
#define Q4_0_ROW(xaddr, caddr, daddr, acc) \
	VPMADDUBSW   xaddr, Y2, Y4; \
	VPADDW       caddr, Y4, Y4; \
	VPMADDWD     ones16<>(SB), Y4, Y4; \
	VCVTDQ2PS    Y4, Y4; \
	VMULSS       daddr, X5, X6; \
	VBROADCASTSS X6, Y6; \
	VFMADD231PS  Y4, Y6, acc

#define Q4_0_BLK4(woff, xoff, doff, a0, a1, a2, a3) \
	Q4_0_W(woff); \
	VCVTPH2PS    woff(BX), X5; \
	Q4_0_ROW(xoff(R12), xoff(R8), doff(R13), a0); \
	Q4_0_ROW(xoff(R12)(R11*1), xoff(R8)(R11*1), doff(R13)(R11*1), a1); \
	Q4_0_ROW(xoff(R12)(R11*2), xoff(R8)(R11*2), doff(R13)(R11*2), a2); \
	Q4_0_ROW(xoff(R12)(R14*1), xoff(R8)(R14*1), doff(R13)(R14*1), a3)

// func q4_0Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
TEXT ·q4_0Vec4AVX2(SB), NOSPLIT, $0-112
	MOVQ out_base+0(FP), DI
	MOVQ w_base+32(FP), SI
	MOVQ rows+64(FP), CX
	MOVQ xstride+104(FP), R11
	LEAQ (R11)(R11*2), R14

q40r4row:
	MOVQ SI, BX
	MOVQ x_base+80(FP), R12
	MOVQ blocks+72(FP), DX
	MOVQ DX, R8
	SHLQ $5, R8
	ADDQ R12, R8               // corrections
	MOVQ DX, R13
	SHLQ $6, R13
	ADDQ R12, R13              // d
	ZERO8
	SHRQ $1, DX
	JZ   q40r4odd

q40r4pair:
	Q4_0_BLK4(0, 0, 0, Y8, Y10, Y12, Y14)
	Q4_0_BLK4(18, 32, 4, Y9, Y11, Y13, Y15)
	ADDQ $36, BX
	ADDQ $64, R12
	ADDQ $64, R8
	ADDQ $8, R13
	DECQ DX
	JNZ  q40r4pair

q40r4odd:
	MOVQ  blocks+72(FP), DX
	TESTQ $1, DX
	JZ    q40r4sum
	Q4_0_BLK4(0, 0, 0, Y8, Y10, Y12, Y14)

q40r4sum:
	STORE4
	ADDQ $4, DI
	ADDQ stride+56(FP), SI
	DECQ CX
	JNZ  q40r4row
	VZEROUPPER
	RET
