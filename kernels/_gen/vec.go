package main

import "fmt"

// vec_amd64.s: the float32 dot products and axpys of attention and of the
// float matrix paths (AVX2 + FMA).
//
// Every kernel here runs a row in widths that shrink: a loop of 32 or 8
// floats (YMM), then one float at a time (XMM, scalar). vecAForm gives
// the instructions of a width; vecALoopTest and vecACount the loop test
// and count-down, so that the scalar tail of each kernel is the same code
// as its vector loops with the other instructions.

func init() { files["vec_amd64.s"] = vecAFile }

func vecAFile() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw("")
	vecADot(a)
	vecAAxpy(a)
	vecADotRows(a)
	vecAAxpyRows(a)
	return a
}

// vecAMem formats the memory operand off(base)(index): off 0 is left
// out, and so is the index when it is "".
func vecAMem(off int, base, index string) string {
	s := "(" + base + ")"
	if off != 0 {
		s = fmt.Sprintf("%d%s", off, s)
	}
	if index != "" {
		s += "(" + index + ")"
	}
	return s
}

// vecAForm returns the load/store and FMA instructions and the register
// of a loop of w floats: packed YMM for w >= 8, scalar XMM for w = 1.
func vecAForm(w int) (mov, fma string, reg func(int) string) {
	if w == 1 {
		return "VMOVSS", "VFMADD231SS", func(i int) string { return fmt.Sprintf("X%d", i) }
	}
	return "VMOVUPS", "VFMADD231PS", y
}

// vecALoopTest leaves a loop of w floats for next when fewer than w are
// left in n (for w = 1: when none is).
func vecALoopTest(a *asm, n string, w int, next string) {
	if w == 1 {
		a.op("CMPQ %s, $0", n)
		a.op("JE %s", next)
		return
	}
	a.op("CMPQ %s, $%d", n, w)
	a.op("JL %s", next)
}

// vecACount takes w floats off the count n.
func vecACount(a *asm, n string, w int) {
	if w == 1 {
		a.op("DECQ %s", n)
		return
	}
	a.op("SUBQ $%d, %s", w, n)
}

// vecAZero clears Y0 to Y(n-1).
func vecAZero(a *asm, n int) {
	for i := 0; i < n; i++ {
		a.op("VXORPS %s, %s, %s", y(i), y(i), y(i))
	}
}

// vecADot1 is the dot product of vecDotAVX2 on the rows at x and y, n
// floats, leaving it in X0 (lowest lane) at label done: one accumulator
// Y0 of 8 lanes, lane i taking the products of elements 8s+i for s = 0,
// 1, ... in order (FMA); then the lanes added as (l0+l4 + l1+l5) +
// (l2+l6 + l3+l7), each sum in that order ((t0+t1)+(t2+t3) with t_i =
// l_i+l_(i+4): VEXTRACTF128/VADDPS, then two VHADDPS); then the last
// n%8 products added one at a time (FMA). dotRowsAVX2 runs it for its
// single keys, so every key gets the same sum. The labels are p+"loop8",
// p+red, p+"tail" and p+"done" (p the kernel's prefix). x, y, n are
// advanced; Y4 and X1 are scratch.
func vecADot1(a *asm, x, yr, n, p, red string) {
	for _, w := range []int{8, 1} {
		mov, fma, reg := vecAForm(w)
		loop, next := p+"loop8", p+red
		if w == 1 {
			loop, next = p+"tail", p+"done"
		}
		a.label(loop)
		vecALoopTest(a, n, w, next)
		a.op("%s %s, %s", mov, vecAMem(0, x, ""), reg(4))
		a.op("%s %s, %s, %s", fma, vecAMem(0, yr, ""), reg(4), reg(0))
		a.op("ADDQ $%d, %s", 4*w, x)
		a.op("ADDQ $%d, %s", 4*w, yr)
		vecACount(a, n, w)
		a.op("JMP %s", loop)
		a.raw("")
		if w == 8 {
			a.label(p + red)
			a.op("VEXTRACTF128 $1, Y0, X1")
			a.op("VADDPS X1, X0, X0")
			a.op("VHADDPS X0, X0, X0")
			a.op("VHADDPS X0, X0, X0")
			a.raw("")
		}
	}
	a.label(p + "done")
}

// vecADot writes vecDotAVX2: the one-row dot product of vecADot1. It is
// the reference of every attention score on amd64: dotRowsAVX2 and
// dot4Rows compute the same sums, several keys at a time, so a score is
// the same whichever of them computes it. (One chain of FMAs is
// latency-bound for a single pair of vectors, but those kernels run
// eight chains side by side, and a single pass through each row streams
// it from memory in order.)
func vecADot(a *asm) {
	a.raw("// func vecDotAVX2(a, b []float32) float32")
	a.raw("// The dot product in one accumulator of 8 lanes (FMA, element 8s+i in lane i),")
	a.raw("// the lanes added as (l0+l4 + l1+l5) + (l2+l6 + l3+l7), then the last len%%8")
	a.raw("// products one at a time. dotRowsAVX2 and dot4Rows compute the same sums.")
	a.raw("TEXT ·vecDotAVX2(SB), NOSPLIT, $0-52")
	a.op("MOVQ a_base+0(FP), SI")
	a.op("MOVQ a_len+8(FP), CX")
	a.op("MOVQ b_base+24(FP), DI")
	a.op("VXORPS Y0, Y0, Y0")
	a.raw("")
	vecADot1(a, "SI", "DI", "CX", "", "reduce")
	a.op("VZEROUPPER")
	a.op("MOVSS X0, ret+48(FP)")
	a.op("RET")
	a.raw("")
}

// vecAAxpyWidths are the loop widths (floats) of vecAxpyAVX2 and
// axpyRowsAVX2: four registers, one, then scalars.
var vecAAxpyWidths = []int{32, 8, 1}

// vecAAxpy writes vecAxpyAVX2: y += s*x (one FMA per element, s in Y15),
// in loops of 32 floats (four registers), 8, then one at a time; the
// loops differ only in their width (vecAForm).
func vecAAxpy(a *asm) {
	a.raw("// func vecAxpyAVX2(y, x []float32, s float32)")
	a.raw("TEXT ·vecAxpyAVX2(SB), NOSPLIT, $0-52")
	a.op("MOVQ y_base+0(FP), DI")
	a.op("MOVQ y_len+8(FP), CX")
	a.op("MOVQ x_base+24(FP), SI")
	a.op("VBROADCASTSS s+48(FP), Y15")
	a.raw("")
	name := func(w int) string {
		if w == 1 {
			return "tail"
		}
		return fmt.Sprintf("loop%d", w)
	}
	for i, w := range vecAAxpyWidths {
		next := "done"
		if i+1 < len(vecAAxpyWidths) {
			next = name(vecAAxpyWidths[i+1])
		}
		mov, fma, reg := vecAForm(w)
		a.label(name(w))
		vecALoopTest(a, "CX", w, next)
		for r := 0; r < (w+7)/8; r++ {
			a.op("%s %s, %s", mov, vecAMem(32*r, "DI", ""), reg(r))
			a.op("%s %s, %s, %s", fma, vecAMem(32*r, "SI", ""), reg(15), reg(r))
			a.op("%s %s, %s", mov, reg(r), vecAMem(32*r, "DI", ""))
		}
		a.op("ADDQ $%d, SI", 4*w)
		a.op("ADDQ $%d, DI", 4*w)
		vecACount(a, "CX", w)
		a.op("JMP %s", name(w))
		a.raw("")
	}
	a.label("done")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// vecARows8 indexes eight rows from a base register with the row stride
// s in R10: R13 = 3s, R14 = 5s, R15 = 7s.
var vecARows8 = [8]string{"", "R10*1", "R10*2", "R13*1", "R10*4", "R14*1", "R13*2", "R15*1"}

// vecAReduce8 reduces eight accumulators Y0-Y7 of 8 lanes each into the
// eight lanes of Y0, each as vecDotAVX2 reduces its one accumulator, and
// scales them by Y15. For the pair (Yk, Yk+4), VPERM2F128 $0x20 and $0x31
// put the low halves of both side by side and the high halves side by
// side, and one VADDPS gives t = lo + hi of Yk (low lane) and of Yk+4
// (high lane); VHADDPS of the t of Yk and Yk+1 gives (t0+t1, t2+t3) of
// each, and a last VHADDPS of the (0,1) and (2,3) results gives
// (t0+t1)+(t2+t3): vecDotAVX2's VEXTRACTF128/VADDPS/VHADDPS/VHADDPS, on
// all eight at once. Lane i of the result is accumulator i. Y8-Y10, Y12,
// Y13 are scratch.
func vecAReduce8(a *asm) {
	for g := 0; g < 2; g++ {
		for h := 0; h < 2; h++ {
			lo, hi := y(2*g+h), y(2*g+h+4)
			d, t := y(8+h), y(9+h)
			a.op("VPERM2F128 $0x20, %s, %s, %s", hi, lo, d)
			a.op("VPERM2F128 $0x31, %s, %s, %s", hi, lo, t)
			a.op("VADDPS %s, %s, %s", t, d, d)
		}
		a.op("VHADDPS Y9, Y8, %s", y(12+g))
	}
	a.op("VHADDPS Y13, Y12, Y0")
	a.op("VMULPS Y15, Y0, Y0")
}

// vecADotRows writes dotRowsAVX2(out, q, k, stride, scale): out[i] =
// vecDotAVX2(q, k[i*stride:]) * scale, bit-identical (the same lanes,
// reduction and tail). When len(q) is a positive multiple of 16, eight
// keys run side by side (Y0-Y7, eight independent FMA chains sharing
// each load of q), 64 bytes of each key row per step with a prefetch of
// the same line eight rows ahead (attention's key cache streams from
// memory in decode), and the eight results are reduced in one register
// as dot4Rows does (vecAReduce8: lane i of the result is key i); the
// other keys, and other widths, go one at a time (vecADot1).
//
// Registers: R8 out, R9 keys left, SI q, CX len(q), DI the key row, R10
// the stride in bytes (R13, R14, R15: 3, 5, 7 times it), Y15 scale; in
// the loops AX, BX the q and key pointers, DX the count, R12 the
// prefetch pointer.
func vecADotRows(a *asm) {
	a.raw("// func dotRowsAVX2(out, q, k []float32, stride int, scale float32)")
	a.raw("// out[i] = vecDotAVX2(q, k[i*stride:]) * scale, bit-identical: eight keys at a")
	a.raw("// time when len(q) is a positive multiple of 16, the others one at a time.")
	a.raw("TEXT ·dotRowsAVX2(SB), NOSPLIT, $0-84")
	a.op("MOVQ out_base+0(FP), R8")
	a.op("MOVQ out_len+8(FP), R9")
	a.op("MOVQ q_base+24(FP), SI")
	a.op("MOVQ q_len+32(FP), CX")
	a.op("MOVQ k_base+48(FP), DI")
	a.op("MOVQ stride+72(FP), R10")
	a.op("SHLQ $2, R10")
	a.op("VBROADCASTSS scale+80(FP), Y15")
	a.op("LEAQ (R10)(R10*2), R13")
	a.op("LEAQ (R10)(R10*4), R14")
	a.op("LEAQ (R13)(R10*4), R15")
	a.op("TESTQ CX, CX")
	a.op("JE drone")
	a.op("MOVQ CX, AX")
	a.op("ANDQ $15, AX")
	a.op("JNZ drone")
	a.raw("")
	a.label("dr8keys")
	a.op("CMPQ R9, $8")
	a.op("JL drone")
	a.op("MOVQ SI, AX")
	a.op("MOVQ DI, BX")
	a.op("LEAQ (DI)(R10*8), R12")
	a.op("MOVQ CX, DX")
	a.op("SHRQ $4, DX")
	vecAZero(a, 8)
	a.raw("")
	a.label("dr8step")
	for _, ix := range vecARows8 {
		a.op("PREFETCHT0 %s", vecAMem(0, "R12", ix))
	}
	for h := 0; h < 2; h++ {
		a.op("VMOVUPS %s, %s", vecAMem(32*h, "AX", ""), y(8+h))
		for r, ix := range vecARows8 {
			a.op("VFMADD231PS %s, %s, %s", vecAMem(32*h, "BX", ix), y(8+h), y(r))
		}
	}
	a.op("ADDQ $64, AX")
	a.op("ADDQ $64, BX")
	a.op("ADDQ $64, R12")
	a.op("DECQ DX")
	a.op("JNZ dr8step")
	a.raw("")
	a.op("// Lane i of the result is key i, reduced as vecDotAVX2 reduces.")
	vecAReduce8(a)
	a.op("VMOVUPS Y0, (R8)")
	a.op("ADDQ $32, R8")
	a.op("LEAQ (DI)(R10*8), DI")
	a.op("SUBQ $8, R9")
	a.op("JMP dr8keys")
	a.raw("")
	a.label("drone")
	a.op("TESTQ R9, R9")
	a.op("JE drend")
	a.op("MOVQ SI, AX")
	a.op("MOVQ DI, BX")
	a.op("MOVQ CX, DX")
	a.op("VXORPS Y0, Y0, Y0")
	a.raw("")
	vecADot1(a, "AX", "BX", "DX", "dr1", "red")
	a.op("VMULSS X15, X0, X0")
	a.op("VMOVSS X0, (R8)")
	a.op("ADDQ $4, R8")
	a.op("ADDQ R10, DI")
	a.op("DECQ R9")
	a.op("JMP drone")
	a.raw("")
	a.label("drend")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// vecAAxpyRowsAhead is how many rows ahead axpyRowsAVX2's 32-float loop
// prefetches (as a shift of the stride: 16 rows).
const vecAAxpyRowsAhead = 4

// vecAAxpyRows writes axpyRowsAVX2(y, p, v, stride): for each element
// of y, in order of i, y = fma(p[i], v[i*stride+e], y), as vecAxpyAVX2
// called for each i. y is kept in registers 32, then 8, then 1 element
// at a time (the widths of vecAxpyAVX2) while every row passes; the
// 32-element loop prefetches the same 128 bytes of the row 16 rows
// ahead.
//
// Registers: DI y, CX its floats left, R8 p, R9 len(p), SI v at the
// current column, R10 the stride in bytes, R11 the prefetch distance;
// in the row loop AX p, BX the row, DX the rows left, Y15 (X15) p[i].
func vecAAxpyRows(a *asm) {
	a.raw("// func axpyRowsAVX2(y, p, v []float32, stride int)")
	a.raw("// y = fma(p[i], v[i*stride+e], y) for each i in order, as vecAxpyAVX2 for each")
	a.raw("// i: y is held in registers (32, 8, then 1 element) while every row passes.")
	a.raw("TEXT ·axpyRowsAVX2(SB), NOSPLIT, $0-80")
	a.op("MOVQ y_base+0(FP), DI")
	a.op("MOVQ y_len+8(FP), CX")
	a.op("MOVQ p_base+24(FP), R8")
	a.op("MOVQ p_len+32(FP), R9")
	a.op("MOVQ v_base+48(FP), SI")
	a.op("MOVQ stride+72(FP), R10")
	a.op("SHLQ $2, R10")
	a.op("MOVQ R10, R11")
	a.op("SHLQ $%d, R11", vecAAxpyRowsAhead)
	a.op("TESTQ R9, R9")
	a.op("JE axpyrowsend")
	a.raw("")
	l := func(w int) string { return fmt.Sprintf("axpyrows%d", w) }
	for i, w := range vecAAxpyWidths {
		next := "axpyrowsend"
		if i+1 < len(vecAAxpyWidths) {
			next = l(vecAAxpyWidths[i+1])
		}
		mov, fma, reg := vecAForm(w)
		n := (w + 7) / 8
		a.label(l(w))
		vecALoopTest(a, "CX", w, next)
		for r := 0; r < n; r++ {
			a.op("%s %s, %s", mov, vecAMem(32*r, "DI", ""), reg(r))
		}
		a.op("MOVQ SI, BX")
		a.op("MOVQ R8, AX")
		a.op("MOVQ R9, DX")
		a.raw("")
		a.label(l(w) + "i")
		if w == 32 {
			for off := 0; off < 128; off += 64 {
				a.op("PREFETCHT0 %s", vecAMem(off, "BX", "R11*1"))
			}
		}
		if w == 1 {
			a.op("VMOVSS (AX), X15")
		} else {
			a.op("VBROADCASTSS (AX), Y15")
		}
		for r := 0; r < n; r++ {
			a.op("%s %s, %s, %s", fma, vecAMem(32*r, "BX", ""), reg(15), reg(r))
		}
		a.op("ADDQ $4, AX")
		a.op("ADDQ R10, BX")
		a.op("DECQ DX")
		a.op("JNZ %si", l(w))
		for r := 0; r < n; r++ {
			a.op("%s %s, %s", mov, reg(r), vecAMem(32*r, "DI", ""))
		}
		a.op("ADDQ $%d, DI", 4*w)
		a.op("ADDQ $%d, SI", 4*w)
		vecACount(a, "CX", w)
		a.op("JMP %s", l(w))
		a.raw("")
	}
	a.label("axpyrowsend")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}
