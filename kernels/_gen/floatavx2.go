package main

// The AVX2 float-weight matrix-vector kernels (float_avx2_amd64.s): F32,
// F16 and BF16 weights times one float32 vector (fltAVec) or four
// (fltAVec4). Both kernels of a type share the one per-output sequence
// (fltAFile), so their results are bit-identical; the AVX-512 tier
// (float512.go) keeps it too.

import "fmt"

func init() { files["float_avx2_amd64.s"] = fltAFile }

// fltAType describes how a float weight type widens 8 columns of a row
// (at address p) exactly to float32 in Y register r.
type fltAType struct {
	name string
	eb   int // bytes per element: the weight pointer moves 8*eb a chunk
	load func(a *asm, p string, r int)
}

var fltATypes = []fltAType{
	{"f32", 4, func(a *asm, p string, r int) {
		a.op("VMOVUPS %s, Y%d", p, r)
	}},
	{"f16", 2, func(a *asm, p string, r int) {
		a.op("VCVTPH2PS %s, Y%d", p, r)
	}},
	// bf16 is the high half of a float32: zero-extend each to 32 bits
	// and shift it up.
	{"bf16", 2, func(a *asm, p string, r int) {
		a.op("VPMOVZXWD %s, Y%d", p, r)
		a.op("VPSLLD $16, Y%d, Y%d", r, r)
	}},
}

// fltAFile writes float_avx2_amd64.s. Every output has one accumulator
// of 8 lanes: chunk j (8 elements) of the row does acc = FMA(w_j, x_j,
// acc), w widened exactly to float32; the result is HSUM(acc) (the macro
// of avx2_amd64.h). The Go wrapper adds the last cols%8 elements.
// Several outputs are computed at once (independent FMA chains; 4 weight
// rows for one activation row, a 3x4 block for four), each by that same
// sequence, so every kernel gives bit-identical results.
func fltAFile() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`#include "avx2_amd64.h"`)
	a.raw("")
	a.raw("// F32, F16 and BF16 weights times float32 activations. Every output has")
	a.raw("// one accumulator of 8 lanes: chunk j (8 elements) of the row does acc =")
	a.raw("// FMA(w_j, x_j, acc), w widened exactly to float32; the result is")
	a.raw("// HSUM(acc). The Go wrapper adds the last cols%%8 elements. Several")
	a.raw("// outputs are computed at once (independent FMA chains; 4 weight rows for")
	a.raw("// one activation row, a 3x4 block for four), each by that same sequence,")
	a.raw("// so every kernel gives bit-identical results.")
	a.raw("")
	for _, t := range fltATypes {
		fltAVec(a, t)
		fltAVec4(a, t)
	}
	return a
}

// fltARow returns the address of weight row r (0-3) of a group at BX,
// R8/R11 = the row stride x1/x3.
func fltARow(r int) string {
	return [4]string{"(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(BX)(R11*1)"}[r]
}

// fltAAt returns the address base+off with the index idx ("" for none),
// written as the hand-written kernels did: no 0 offset.
func fltAAt(off int, base, idx string) string {
	s := "(" + base + ")" + idx
	if off != 0 {
		s = fmt.Sprint(off) + s
	}
	return s
}

// fltAVec emits <t>VecAVX2(out []float32, w []byte, stride, chunks int,
// x []float32): len(out) rows of chunks 8-column chunks times one
// activation vector, four rows at a time, then the rest one by one.
// Registers: DI out, CX rows left, SI the group's first row, R8/R11 the
// row stride x1/x3, R9 chunks, R10 x; in a group BX the weights, R12 x,
// DX chunks left, Y4 the 8 activations, Y5+r the widened weights of row
// r, Y0+r its sum (X4 the HSUM scratch).
func fltAVec(a *asm, t fltAType) {
	name := t.name + "VecAVX2"
	l := func(s string) string { return t.name + s }
	a.raw("// %s: 4 weight rows at a time (Y0-Y3) against one activation", name)
	a.raw("// vector, then the last rows one by one.")
	a.raw("//")
	a.raw("// func %s(out []float32, w []byte, stride, chunks int, x []float32)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-88", name)
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ out_len+8(FP), CX")
	a.op("MOVQ w_base+24(FP), SI")
	a.op("MOVQ stride+48(FP), R8")
	a.op("MOVQ chunks+56(FP), R9")
	a.op("MOVQ x_base+64(FP), R10")
	a.op("LEAQ (R8)(R8*2), R11       // 3*stride")
	a.op("CMPQ CX, $4")
	a.op("JLT  %s", l("one"))
	a.raw("")
	// group: a group of rows weight rows (4 or 1): zero the sums, the
	// chunk loop (label k), reduce and store the sums.
	group := func(rows int, k string) {
		a.op("MOVQ   SI, BX")
		a.op("MOVQ   R10, R12")
		a.op("MOVQ   R9, DX")
		for r := 0; r < rows; r++ {
			a.op("VXORPS Y%d, Y%d, Y%d", r, r, r)
		}
		a.raw("")
		a.label(l(k))
		a.op("VMOVUPS     (R12), Y4")
		for r := 0; r < rows; r++ {
			t.load(a, fltARow(r), 5+r)
		}
		for r := 0; r < rows; r++ {
			a.op("VFMADD231PS Y4, Y%d, Y%d", 5+r, r)
		}
		a.op("ADDQ        $%d, BX", 8*t.eb)
		a.op("ADDQ        $32, R12")
		a.op("DECQ        DX")
		a.op("JNZ         %s", l(k))
		a.raw("")
		for r := 0; r < rows; r++ {
			a.op("HSUM(Y%d, X%d, X4)", r, r)
		}
		for r := 0; r < rows; r++ {
			a.op("VMOVSS X%d, %s", r, fltAAt(4*r, "DI", ""))
		}
		a.op("ADDQ   $%d, DI", 4*rows)
	}
	a.label(l("four"))
	if t.eb == 4 {
		group(4, "fourk") // F32 measured slower with fltAFour's prefetch
	} else {
		fltAFour(a, t, l)
	}
	a.op("LEAQ   (SI)(R8*4), SI")
	a.op("SUBQ   $4, CX")
	a.op("CMPQ   CX, $4")
	a.op("JGE    %s", l("four"))
	fltAOneRows(a, l, func() { group(1, "onek") })
}

// fltAFour emits fltAVec's group of four F16 or BF16 rows: four chunks
// (a 64-byte line of each row) a step, row k's line floatPrefetch bytes
// on prefetched in chunk k, then the last chunks one at a time. Weights
// streamed from memory: the rows read at once are as many streams, which
// the hardware prefetchers followed poorly (BenchmarkDecodeStream). Each
// row keeps its one FMA chain over its chunks in order.
func fltAFour(a *asm, t fltAType, l func(string) string) {
	a.op("MOVQ   SI, BX")
	a.op("MOVQ   R10, R12")
	a.op("MOVQ   R9, DX")
	for r := 0; r < 4; r++ {
		a.op("VXORPS Y%d, Y%d, Y%d", r, r, r)
	}
	chunk := func(k int) {
		a.op("VMOVUPS     %s, Y4", fltAAt(32*k, "R12", ""))
		for r := 0; r < 4; r++ {
			row := fltARow(r)
			t.load(a, fltAAt(8*t.eb*k, "BX", row[4:]), 5+r)
		}
		for r := 0; r < 4; r++ {
			a.op("VFMADD231PS Y4, Y%d, Y%d", 5+r, r)
		}
	}
	a.op("SHRQ        $2, DX")
	a.op("JZ          %s", l("fourr"))
	a.label(l("fours"))
	for k := 0; k < 4; k++ {
		chunk(k)
		a.op("PREFETCHT0  %s", fltAAt(floatPrefetch, "BX", fltARow(k)[4:]))
	}
	a.op("ADDQ        $%d, BX", 32*t.eb)
	a.op("ADDQ        $128, R12")
	a.op("DECQ        DX")
	a.op("JNZ         %s", l("fours"))
	a.label(l("fourr"))
	a.op("MOVQ        R9, DX")
	a.op("ANDQ        $3, DX")
	a.op("JZ          %s", l("foure"))
	a.label(l("fourk"))
	chunk(0)
	a.op("ADDQ        $%d, BX", 8*t.eb)
	a.op("ADDQ        $32, R12")
	a.op("DECQ        DX")
	a.op("JNZ         %s", l("fourk"))
	a.label(l("foure"))
	for r := 0; r < 4; r++ {
		a.op("HSUM(Y%d, X%d, X4)", r, r)
	}
	for r := 0; r < 4; r++ {
		a.op("VMOVSS X%d, %s", r, fltAAt(4*r, "DI", ""))
	}
	a.op("ADDQ   $16, DI")
}

// fltAVec4 emits <t>Vec4AVX2(out []float32, ostride int, w []byte,
// stride, rows, chunks int, x []float32, xstride int): rows weight rows
// times four activation rows, a 3x4 block at a time, then the last rows
// one by one against all four. Registers: DI out, AX/R13 ostride x1/x3
// in bytes, SI the block's first weight row, R8 stride, CX rows left, R9
// chunks, R11/R14 xstride x1/x3 in bytes; in a block BX the weights, R10
// x, DX chunks left, Y12+j the widened weights of row j, Y15 the 8
// activations of row i (in the single-row loop the FMAs read them from
// memory), Y(3i+j) the sum of weight row j with activation row i, stored
// to out[i*ostride+j] (X15 the HSUM scratch).
func fltAVec4(a *asm, t fltAType) {
	name := t.name + "Vec4AVX2"
	l := func(s string) string { return t.name + "4" + s }
	xrow := [4]string{"", "(R11*1)", "(R11*2)", "(R14*1)"}
	orow := [4]string{"", "(AX*1)", "(AX*2)", "(R13*1)"}
	a.raw("// %s: 3x4 blocks (3 weight rows x 4 activation rows; Y(3i+j) sums", name)
	a.raw("// weight row j with activation row i), then the last rows one by one.")
	a.raw("//")
	a.raw("// func %s(out []float32, ostride int, w []byte, stride, rows, chunks int, x []float32, xstride int)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-112", name)
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ ostride+24(FP), AX")
	a.op("SHLQ $2, AX                // ostride in bytes")
	a.op("LEAQ (AX)(AX*2), R13")
	a.op("MOVQ w_base+32(FP), SI")
	a.op("MOVQ stride+56(FP), R8")
	a.op("MOVQ rows+64(FP), CX")
	a.op("MOVQ chunks+72(FP), R9")
	a.op("MOVQ xstride+104(FP), R11")
	a.op("SHLQ $2, R11               // xstride in bytes")
	a.op("LEAQ (R11)(R11*2), R14")
	a.op("CMPQ CX, $3")
	a.op("JLT  %s", l("one"))
	a.raw("")
	// block: a rows x 4 block (rows 3 or 1): zero the sums, the chunk
	// loop (label k), reduce and store the sums.
	block := func(rows int, k string) {
		a.op("MOVQ   SI, BX")
		a.op("MOVQ   x_base+80(FP), R10")
		a.op("MOVQ   R9, DX")
		for i := 0; i < 4; i++ {
			for j := 0; j < rows; j++ {
				a.op("VXORPS Y%d, Y%d, Y%d", 3*i+j, 3*i+j, 3*i+j)
			}
		}
		a.raw("")
		a.label(l(k))
		for j := 0; j < rows; j++ {
			t.load(a, fltARow(j), 12+j)
		}
		for i := 0; i < 4; i++ {
			x := fltAAt(0, "R10", xrow[i])
			if rows == 1 {
				a.op("VFMADD231PS %s, Y12, Y%d", x, 3*i)
				continue
			}
			a.op("VMOVUPS     %s, Y15", x)
			for j := 0; j < rows; j++ {
				a.op("VFMADD231PS Y15, Y%d, Y%d", 12+j, 3*i+j)
			}
		}
		a.op("ADDQ        $%d, BX", 8*t.eb)
		a.op("ADDQ        $32, R10")
		a.op("DECQ        DX")
		a.op("JNZ         %s", l(k))
		a.raw("")
		for i := 0; i < 4; i++ {
			for j := 0; j < rows; j++ {
				a.op("HSUM(Y%d, X%d, X15)", 3*i+j, 3*i+j)
			}
		}
		for i := 0; i < 4; i++ {
			for j := 0; j < rows; j++ {
				a.op("VMOVSS X%d, %s", 3*i+j, fltAAt(4*j, "DI", orow[i]))
			}
		}
		a.op("ADDQ   $%d, DI", 4*rows)
	}
	a.label(l("three"))
	block(3, "threek")
	a.op("LEAQ   (SI)(R8*2), SI")
	a.op("ADDQ   R8, SI")
	a.op("SUBQ   $3, CX")
	a.op("CMPQ   CX, $3")
	a.op("JGE    %s", l("three"))
	fltAOneRows(a, l, func() { block(1, "onek") })
}

// fltAOneRows ends both kernels: the rows left after the wide steps (CX
// of them), one at a time through row (a one-row group or block that
// ends with the stores), then the return.
func fltAOneRows(a *asm, l func(string) string, row func()) {
	a.raw("")
	a.label(l("one"))
	a.op("TESTQ CX, CX")
	a.op("JZ    %s", l("done"))
	a.raw("")
	a.label(l("onerow"))
	row()
	a.op("ADDQ   R8, SI")
	a.op("DECQ   CX")
	a.op("JNZ    %s", l("onerow"))
	a.raw("")
	a.label(l("done"))
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}
