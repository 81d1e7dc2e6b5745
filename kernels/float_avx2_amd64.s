//go:build amd64 && gc && !purego

#include "textflag.h"
#include "avx2_amd64.h"

// F32, F16 and BF16 weights times float32 activations. Every output has
// one accumulator of 8 lanes: chunk j (8 elements) of the row does acc =
// FMA(w_j, x_j, acc), w widened exactly to float32; the result is
// HSUM(acc). The Go wrapper adds the last cols%8 elements. Several
// outputs are computed at once (independent FMA chains; 4 weight rows for
// one activation row, a 3x4 block for four), each by that same sequence,
// so every kernel gives bit-identical results.

// func f32VecAVX2(out []float32, w []byte, stride, chunks int, x []float32)
TEXT ·f32VecAVX2(SB), NOSPLIT, $0-88
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ stride+48(FP), R8
	MOVQ chunks+56(FP), R9
	MOVQ x_base+64(FP), R10
	LEAQ (R8)(R8*2), R11       // 3*stride
	CMPQ CX, $4
	JLT  f32one

f32four:
	MOVQ   SI, BX
	MOVQ   R10, R12
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f32fourk:
	VMOVUPS     (R12), Y4
	VMOVUPS (BX), Y5
	VMOVUPS (BX)(R8*1), Y6
	VMOVUPS (BX)(R8*2), Y7
	VMOVUPS (BX)(R11*1), Y8
	VFMADD231PS Y4, Y5, Y0
	VFMADD231PS Y4, Y6, Y1
	VFMADD231PS Y4, Y7, Y2
	VFMADD231PS Y4, Y8, Y3
	ADDQ        $32, BX
	ADDQ        $32, R12
	DECQ        DX
	JNZ         f32fourk

	HSUM(Y0, X0, X4)
	HSUM(Y1, X1, X4)
	HSUM(Y2, X2, X4)
	HSUM(Y3, X3, X4)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, 12(DI)
	ADDQ   $16, DI
	LEAQ   (SI)(R8*4), SI
	SUBQ   $4, CX
	CMPQ   CX, $4
	JGE    f32four

f32one:
	TESTQ CX, CX
	JZ    f32done

f32onerow:
	MOVQ   SI, BX
	MOVQ   R10, R12
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0

f32onek:
	VMOVUPS     (R12), Y4
	VMOVUPS (BX), Y5
	VFMADD231PS Y4, Y5, Y0
	ADDQ        $32, BX
	ADDQ        $32, R12
	DECQ        DX
	JNZ         f32onek

	HSUM(Y0, X0, X4)
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    f32onerow

f32done:
	VZEROUPPER
	RET

// func f32Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, chunks int, x []float32, xstride int)
TEXT ·f32Vec4AVX2(SB), NOSPLIT, $0-112
	MOVQ out_base+0(FP), DI
	MOVQ ostride+24(FP), AX
	SHLQ $2, AX                // ostride in bytes
	LEAQ (AX)(AX*2), R13
	MOVQ w_base+32(FP), SI
	MOVQ stride+56(FP), R8
	MOVQ rows+64(FP), CX
	MOVQ chunks+72(FP), R9
	MOVQ xstride+104(FP), R11
	SHLQ $2, R11               // xstride in bytes
	LEAQ (R11)(R11*2), R14
	CMPQ CX, $3
	JLT  f324one

f324three:
	MOVQ   SI, BX
	MOVQ   x_base+80(FP), R10
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

f324threek:
	VMOVUPS (BX), Y12
	VMOVUPS (BX)(R8*1), Y13
	VMOVUPS (BX)(R8*2), Y14
	VMOVUPS     (R10), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VFMADD231PS Y15, Y14, Y2
	VMOVUPS     (R10)(R11*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y5
	VMOVUPS     (R10)(R11*2), Y15
	VFMADD231PS Y15, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS     (R10)(R14*1), Y15
	VFMADD231PS Y15, Y12, Y9
	VFMADD231PS Y15, Y13, Y10
	VFMADD231PS Y15, Y14, Y11
	ADDQ        $32, BX
	ADDQ        $32, R10
	DECQ        DX
	JNZ         f324threek

	HSUM(Y0, X0, X15)
	HSUM(Y1, X1, X15)
	HSUM(Y2, X2, X15)
	HSUM(Y3, X3, X15)
	HSUM(Y4, X4, X15)
	HSUM(Y5, X5, X15)
	HSUM(Y6, X6, X15)
	HSUM(Y7, X7, X15)
	HSUM(Y8, X8, X15)
	HSUM(Y9, X9, X15)
	HSUM(Y10, X10, X15)
	HSUM(Y11, X11, X15)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, (DI)(AX*1)
	VMOVSS X4, 4(DI)(AX*1)
	VMOVSS X5, 8(DI)(AX*1)
	VMOVSS X6, (DI)(AX*2)
	VMOVSS X7, 4(DI)(AX*2)
	VMOVSS X8, 8(DI)(AX*2)
	VMOVSS X9, (DI)(R13*1)
	VMOVSS X10, 4(DI)(R13*1)
	VMOVSS X11, 8(DI)(R13*1)
	ADDQ   $12, DI
	LEAQ   (SI)(R8*2), SI
	ADDQ   R8, SI
	SUBQ   $3, CX
	CMPQ   CX, $3
	JGE    f324three

f324one:
	TESTQ CX, CX
	JZ    f324done

f324onerow:
	MOVQ   SI, BX
	MOVQ   x_base+80(FP), R10
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y3, Y3, Y3
	VXORPS Y6, Y6, Y6
	VXORPS Y9, Y9, Y9

f324onek:
	VMOVUPS (BX), Y12
	VFMADD231PS (R10), Y12, Y0
	VFMADD231PS (R10)(R11*1), Y12, Y3
	VFMADD231PS (R10)(R11*2), Y12, Y6
	VFMADD231PS (R10)(R14*1), Y12, Y9
	ADDQ        $32, BX
	ADDQ        $32, R10
	DECQ        DX
	JNZ         f324onek

	HSUM(Y0, X0, X15)
	HSUM(Y3, X3, X15)
	HSUM(Y6, X6, X15)
	HSUM(Y9, X9, X15)
	VMOVSS X0, (DI)
	VMOVSS X3, (DI)(AX*1)
	VMOVSS X6, (DI)(AX*2)
	VMOVSS X9, (DI)(R13*1)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    f324onerow

f324done:
	VZEROUPPER
	RET

// func f16VecAVX2(out []float32, w []byte, stride, chunks int, x []float32)
TEXT ·f16VecAVX2(SB), NOSPLIT, $0-88
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ stride+48(FP), R8
	MOVQ chunks+56(FP), R9
	MOVQ x_base+64(FP), R10
	LEAQ (R8)(R8*2), R11       // 3*stride
	CMPQ CX, $4
	JLT  f16one

f16four:
	MOVQ   SI, BX
	MOVQ   R10, R12
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f16fourk:
	VMOVUPS     (R12), Y4
	VCVTPH2PS (BX), Y5
	VCVTPH2PS (BX)(R8*1), Y6
	VCVTPH2PS (BX)(R8*2), Y7
	VCVTPH2PS (BX)(R11*1), Y8
	VFMADD231PS Y4, Y5, Y0
	VFMADD231PS Y4, Y6, Y1
	VFMADD231PS Y4, Y7, Y2
	VFMADD231PS Y4, Y8, Y3
	ADDQ        $16, BX
	ADDQ        $32, R12
	DECQ        DX
	JNZ         f16fourk

	HSUM(Y0, X0, X4)
	HSUM(Y1, X1, X4)
	HSUM(Y2, X2, X4)
	HSUM(Y3, X3, X4)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, 12(DI)
	ADDQ   $16, DI
	LEAQ   (SI)(R8*4), SI
	SUBQ   $4, CX
	CMPQ   CX, $4
	JGE    f16four

f16one:
	TESTQ CX, CX
	JZ    f16done

f16onerow:
	MOVQ   SI, BX
	MOVQ   R10, R12
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0

f16onek:
	VMOVUPS     (R12), Y4
	VCVTPH2PS (BX), Y5
	VFMADD231PS Y4, Y5, Y0
	ADDQ        $16, BX
	ADDQ        $32, R12
	DECQ        DX
	JNZ         f16onek

	HSUM(Y0, X0, X4)
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    f16onerow

f16done:
	VZEROUPPER
	RET

// func f16Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, chunks int, x []float32, xstride int)
TEXT ·f16Vec4AVX2(SB), NOSPLIT, $0-112
	MOVQ out_base+0(FP), DI
	MOVQ ostride+24(FP), AX
	SHLQ $2, AX                // ostride in bytes
	LEAQ (AX)(AX*2), R13
	MOVQ w_base+32(FP), SI
	MOVQ stride+56(FP), R8
	MOVQ rows+64(FP), CX
	MOVQ chunks+72(FP), R9
	MOVQ xstride+104(FP), R11
	SHLQ $2, R11               // xstride in bytes
	LEAQ (R11)(R11*2), R14
	CMPQ CX, $3
	JLT  f164one

f164three:
	MOVQ   SI, BX
	MOVQ   x_base+80(FP), R10
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

f164threek:
	VCVTPH2PS (BX), Y12
	VCVTPH2PS (BX)(R8*1), Y13
	VCVTPH2PS (BX)(R8*2), Y14
	VMOVUPS     (R10), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VFMADD231PS Y15, Y14, Y2
	VMOVUPS     (R10)(R11*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y5
	VMOVUPS     (R10)(R11*2), Y15
	VFMADD231PS Y15, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS     (R10)(R14*1), Y15
	VFMADD231PS Y15, Y12, Y9
	VFMADD231PS Y15, Y13, Y10
	VFMADD231PS Y15, Y14, Y11
	ADDQ        $16, BX
	ADDQ        $32, R10
	DECQ        DX
	JNZ         f164threek

	HSUM(Y0, X0, X15)
	HSUM(Y1, X1, X15)
	HSUM(Y2, X2, X15)
	HSUM(Y3, X3, X15)
	HSUM(Y4, X4, X15)
	HSUM(Y5, X5, X15)
	HSUM(Y6, X6, X15)
	HSUM(Y7, X7, X15)
	HSUM(Y8, X8, X15)
	HSUM(Y9, X9, X15)
	HSUM(Y10, X10, X15)
	HSUM(Y11, X11, X15)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, (DI)(AX*1)
	VMOVSS X4, 4(DI)(AX*1)
	VMOVSS X5, 8(DI)(AX*1)
	VMOVSS X6, (DI)(AX*2)
	VMOVSS X7, 4(DI)(AX*2)
	VMOVSS X8, 8(DI)(AX*2)
	VMOVSS X9, (DI)(R13*1)
	VMOVSS X10, 4(DI)(R13*1)
	VMOVSS X11, 8(DI)(R13*1)
	ADDQ   $12, DI
	LEAQ   (SI)(R8*2), SI
	ADDQ   R8, SI
	SUBQ   $3, CX
	CMPQ   CX, $3
	JGE    f164three

f164one:
	TESTQ CX, CX
	JZ    f164done

f164onerow:
	MOVQ   SI, BX
	MOVQ   x_base+80(FP), R10
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y3, Y3, Y3
	VXORPS Y6, Y6, Y6
	VXORPS Y9, Y9, Y9

f164onek:
	VCVTPH2PS (BX), Y12
	VFMADD231PS (R10), Y12, Y0
	VFMADD231PS (R10)(R11*1), Y12, Y3
	VFMADD231PS (R10)(R11*2), Y12, Y6
	VFMADD231PS (R10)(R14*1), Y12, Y9
	ADDQ        $16, BX
	ADDQ        $32, R10
	DECQ        DX
	JNZ         f164onek

	HSUM(Y0, X0, X15)
	HSUM(Y3, X3, X15)
	HSUM(Y6, X6, X15)
	HSUM(Y9, X9, X15)
	VMOVSS X0, (DI)
	VMOVSS X3, (DI)(AX*1)
	VMOVSS X6, (DI)(AX*2)
	VMOVSS X9, (DI)(R13*1)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    f164onerow

f164done:
	VZEROUPPER
	RET

// func bf16VecAVX2(out []float32, w []byte, stride, chunks int, x []float32)
TEXT ·bf16VecAVX2(SB), NOSPLIT, $0-88
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ stride+48(FP), R8
	MOVQ chunks+56(FP), R9
	MOVQ x_base+64(FP), R10
	LEAQ (R8)(R8*2), R11       // 3*stride
	CMPQ CX, $4
	JLT  bf16one

bf16four:
	MOVQ   SI, BX
	MOVQ   R10, R12
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

bf16fourk:
	VMOVUPS     (R12), Y4
	VPMOVZXWD (BX), Y5
	VPSLLD $16, Y5, Y5
	VPMOVZXWD (BX)(R8*1), Y6
	VPSLLD $16, Y6, Y6
	VPMOVZXWD (BX)(R8*2), Y7
	VPSLLD $16, Y7, Y7
	VPMOVZXWD (BX)(R11*1), Y8
	VPSLLD $16, Y8, Y8
	VFMADD231PS Y4, Y5, Y0
	VFMADD231PS Y4, Y6, Y1
	VFMADD231PS Y4, Y7, Y2
	VFMADD231PS Y4, Y8, Y3
	ADDQ        $16, BX
	ADDQ        $32, R12
	DECQ        DX
	JNZ         bf16fourk

	HSUM(Y0, X0, X4)
	HSUM(Y1, X1, X4)
	HSUM(Y2, X2, X4)
	HSUM(Y3, X3, X4)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, 12(DI)
	ADDQ   $16, DI
	LEAQ   (SI)(R8*4), SI
	SUBQ   $4, CX
	CMPQ   CX, $4
	JGE    bf16four

bf16one:
	TESTQ CX, CX
	JZ    bf16done

bf16onerow:
	MOVQ   SI, BX
	MOVQ   R10, R12
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0

bf16onek:
	VMOVUPS     (R12), Y4
	VPMOVZXWD (BX), Y5
	VPSLLD $16, Y5, Y5
	VFMADD231PS Y4, Y5, Y0
	ADDQ        $16, BX
	ADDQ        $32, R12
	DECQ        DX
	JNZ         bf16onek

	HSUM(Y0, X0, X4)
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    bf16onerow

bf16done:
	VZEROUPPER
	RET

// func bf16Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, chunks int, x []float32, xstride int)
TEXT ·bf16Vec4AVX2(SB), NOSPLIT, $0-112
	MOVQ out_base+0(FP), DI
	MOVQ ostride+24(FP), AX
	SHLQ $2, AX                // ostride in bytes
	LEAQ (AX)(AX*2), R13
	MOVQ w_base+32(FP), SI
	MOVQ stride+56(FP), R8
	MOVQ rows+64(FP), CX
	MOVQ chunks+72(FP), R9
	MOVQ xstride+104(FP), R11
	SHLQ $2, R11               // xstride in bytes
	LEAQ (R11)(R11*2), R14
	CMPQ CX, $3
	JLT  bf164one

bf164three:
	MOVQ   SI, BX
	MOVQ   x_base+80(FP), R10
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

bf164threek:
	VPMOVZXWD (BX), Y12
	VPSLLD $16, Y12, Y12
	VPMOVZXWD (BX)(R8*1), Y13
	VPSLLD $16, Y13, Y13
	VPMOVZXWD (BX)(R8*2), Y14
	VPSLLD $16, Y14, Y14
	VMOVUPS     (R10), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VFMADD231PS Y15, Y14, Y2
	VMOVUPS     (R10)(R11*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y5
	VMOVUPS     (R10)(R11*2), Y15
	VFMADD231PS Y15, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS     (R10)(R14*1), Y15
	VFMADD231PS Y15, Y12, Y9
	VFMADD231PS Y15, Y13, Y10
	VFMADD231PS Y15, Y14, Y11
	ADDQ        $16, BX
	ADDQ        $32, R10
	DECQ        DX
	JNZ         bf164threek

	HSUM(Y0, X0, X15)
	HSUM(Y1, X1, X15)
	HSUM(Y2, X2, X15)
	HSUM(Y3, X3, X15)
	HSUM(Y4, X4, X15)
	HSUM(Y5, X5, X15)
	HSUM(Y6, X6, X15)
	HSUM(Y7, X7, X15)
	HSUM(Y8, X8, X15)
	HSUM(Y9, X9, X15)
	HSUM(Y10, X10, X15)
	HSUM(Y11, X11, X15)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, (DI)(AX*1)
	VMOVSS X4, 4(DI)(AX*1)
	VMOVSS X5, 8(DI)(AX*1)
	VMOVSS X6, (DI)(AX*2)
	VMOVSS X7, 4(DI)(AX*2)
	VMOVSS X8, 8(DI)(AX*2)
	VMOVSS X9, (DI)(R13*1)
	VMOVSS X10, 4(DI)(R13*1)
	VMOVSS X11, 8(DI)(R13*1)
	ADDQ   $12, DI
	LEAQ   (SI)(R8*2), SI
	ADDQ   R8, SI
	SUBQ   $3, CX
	CMPQ   CX, $3
	JGE    bf164three

bf164one:
	TESTQ CX, CX
	JZ    bf164done

bf164onerow:
	MOVQ   SI, BX
	MOVQ   x_base+80(FP), R10
	MOVQ   R9, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y3, Y3, Y3
	VXORPS Y6, Y6, Y6
	VXORPS Y9, Y9, Y9

bf164onek:
	VPMOVZXWD (BX), Y12
	VPSLLD $16, Y12, Y12
	VFMADD231PS (R10), Y12, Y0
	VFMADD231PS (R10)(R11*1), Y12, Y3
	VFMADD231PS (R10)(R11*2), Y12, Y6
	VFMADD231PS (R10)(R14*1), Y12, Y9
	ADDQ        $16, BX
	ADDQ        $32, R10
	DECQ        DX
	JNZ         bf164onek

	HSUM(Y0, X0, X15)
	HSUM(Y3, X3, X15)
	HSUM(Y6, X6, X15)
	HSUM(Y9, X9, X15)
	VMOVSS X0, (DI)
	VMOVSS X3, (DI)(AX*1)
	VMOVSS X6, (DI)(AX*2)
	VMOVSS X9, (DI)(R13*1)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    bf164onerow

bf164done:
	VZEROUPPER
	RET

