package main

import "fmt"

// The f32 convolution tiles (kernels/conv.go): rows output rows times one
// or two 16-wide blocks of output channels, accumulated over taps x input
// channels with one FMA chain per output lane (the order of the generic
// twin convTileGo), then the bias added. The weights of a block are
// [taps][in][16] floats; block 1 starts bstride bytes after block 0.
//
// Go signature of every tile:
//
//	func(dst *float32, ostride int, w *float32, bstride int, x *float32,
//	     xstride, in, taps, tapstep int, bias *float32)
//
// ostride, bstride, xstride and tapstep are in bytes; tapstep is the
// distance between two taps' first input rows (dilation x xstride).
//
// Registers: SI weights, DX bstride, BX / R12 / R13 the activation rows
// 0-3 / 4-7 / 8-11 (row r at base + (r%4)*R11, R14 = 3*R11), CX input
// channels left, R8 taps left, R9 the step from a tap's end to the next
// tap's start, R10 bias, DI dst.
const convArgs = "$0-80"

func convSig() string {
	return "(dst *float32, ostride int, w *float32, bstride int, x *float32, xstride, in, taps, tapstep int, bias *float32)"
}

// convRow returns the address of activation row r (of up to 12).
func convRow(r int) string {
	base := [3]string{"BX", "R12", "R13"}[r/4]
	idx := [4]string{"", "(R11*1)", "(R11*2)", "(R14*1)"}[r%4]
	return fmt.Sprintf("(%s)%s", base, idx)
}

// convOut returns the address of output row r at byte offset off: rows
// 0-3 / 4-7 / 8-11 from DI / AX / R9, stride CX (R8 = 3*CX).
func convOut(off, r int) string {
	base := [3]string{"DI", "AX", "R9"}[r/4]
	idx := [4]string{"", "(CX*1)", "(CX*2)", "(R8*1)"}[r%4]
	return fmt.Sprintf("%d(%s)%s", off, base, idx)
}

// convTile emits one tile: rows rows, blocks 16-wide blocks, with vector
// width vw floats (8: AVX2 YMM, 16: AVX-512 ZMM).
func convTile(a *asm, name string, rows, blocks, vw int) {
	reg := func(i int) string {
		if vw == 16 {
			return fmt.Sprintf("Z%d", i)
		}
		return fmt.Sprintf("Y%d", i)
	}
	per := blocks * 16 / vw // vectors per row
	wreg := rows * per      // first weight register
	breg := wreg + per      // broadcast registers (two, alternating)
	l := func(s string) string { return name + s }
	a.raw("// func %s%s", name, convSig())
	a.raw("TEXT ·%s(SB), NOSPLIT, %s", name, convArgs)
	a.op("MOVQ w+16(FP), SI")
	a.op("MOVQ bstride+24(FP), DX")
	a.op("MOVQ x+32(FP), BX")
	a.op("MOVQ xstride+40(FP), R11")
	a.op("LEAQ (R11)(R11*2), R14")
	a.op("LEAQ (BX)(R11*4), R12")
	a.op("LEAQ (R12)(R11*4), R13")
	a.op("MOVQ taps+56(FP), R8")
	a.op("MOVQ in+48(FP), AX")
	a.op("MOVQ tapstep+64(FP), R9")
	a.op("SHLQ $2, AX")
	a.op("SUBQ AX, R9")
	for i := 0; i < wreg; i++ {
		a.op("%s %s, %s, %s", avx512F("VXORPS", vw), reg(i), reg(i), reg(i))
	}
	a.label(l("tap"))
	a.op("MOVQ in+48(FP), CX")
	a.label(l("chan"))
	for v := 0; v < per; v++ {
		blk, half := v*vw/16, v*vw%16
		if blk == 0 {
			a.op("VMOVUPS %d(SI), %s", 4*half, reg(wreg+v))
		} else {
			a.op("VMOVUPS %d(SI)(DX*1), %s", 4*half, reg(wreg+v))
		}
	}
	for r := 0; r < rows; r++ {
		b := reg(breg + r%2)
		a.op("VBROADCASTSS %s, %s", convRow(r), b)
		for v := 0; v < per; v++ {
			a.op("VFMADD231PS %s, %s, %s", reg(wreg+v), b, reg(r*per+v))
		}
	}
	a.op("ADDQ $64, SI")
	for r := 0; r < rows; r += 4 {
		a.op("ADDQ $4, %s", [3]string{"BX", "R12", "R13"}[r/4])
	}
	a.op("DECQ CX")
	a.op("JNZ %s", l("chan"))
	for r := 0; r < rows; r += 4 {
		a.op("ADDQ R9, %s", [3]string{"BX", "R12", "R13"}[r/4])
	}
	a.op("DECQ R8")
	a.op("JNZ %s", l("tap"))
	// Store acc + bias.
	a.op("MOVQ dst+0(FP), DI")
	a.op("MOVQ ostride+8(FP), CX")
	a.op("MOVQ bias+72(FP), R10")
	a.op("LEAQ (CX)(CX*2), R8")
	a.op("LEAQ (DI)(CX*4), AX")
	a.op("LEAQ (AX)(CX*4), R9")
	for v := 0; v < per; v++ {
		blk, half := v*vw/16, v*vw%16
		a.op("VMOVUPS %d(R10), %s", 4*(blk*16+half), reg(wreg+v))
	}
	for r := 0; r < rows; r++ {
		for v := 0; v < per; v++ {
			blk, half := v*vw/16, v*vw%16
			a.op("VADDPS %s, %s, %s", reg(wreg+v), reg(r*per+v), reg(r*per+v))
			a.op("VMOVUPS %s, %s", reg(r*per+v), convOut(4*(blk*16+half), r))
		}
	}
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// convFile writes the AVX2 tiles (one block, 1-6 rows) and the AVX-512
// tiles (one or two blocks, 1-12 rows).
func convFile() *asm {
	a := &asm{}
	a.b.WriteString(header)
	for r := 1; r <= 6; r++ {
		convTile(a, fmt.Sprintf("convAVX2B1R%d", r), r, 1, 8)
	}
	for _, b := range []int{1, 2} {
		for r := 1; r <= 12; r++ {
			convTile(a, fmt.Sprintf("convAVX512B%dR%d", b, r), r, b, 16)
		}
	}
	snakeData(a)
	snake(a, "snakeBetaAVX2", 8)
	snake(a, "snakeBetaAVX512", 16)
	fmaPeak(a, "fmaPeakAVX2", 12, func(i int) string { return fmt.Sprintf("Y%d", i) })
	fmaPeak(a, "fmaPeakAVX512", 24, func(i int) string { return fmt.Sprintf("Z%d", i) })
	return a
}

// fmaPeak emits a loop of n iterations of chains independent FMA chains
// on registers only (no loads): the FMA throughput ceiling that the
// convolution tiles are measured against.
func fmaPeak(a *asm, name string, chains int, reg func(int) string) {
	vw := 8
	if reg(0)[0] == 'Z' {
		vw = 16
	}
	a.raw("// func %s(n int)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	a.op("MOVQ n+0(FP), CX")
	for i := 0; i < chains+2; i++ {
		a.op("%s %s, %s, %s", avx512F("VXORPS", vw), reg(i), reg(i), reg(i))
	}
	a.label(name + "loop")
	for i := 0; i < chains; i++ {
		a.op("VFMADD231PS %s, %s, %s", reg(chains), reg(chains+1), reg(i))
	}
	a.op("DECQ CX")
	a.op("JNZ %sloop", name)
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// avx512F returns op (VXORPS, VANDPS) for vector width vw, or for ZMM
// (vw 16) its integer form (VPXORD, VPANDD): the same bits, but AVX-512F,
// where the float forms on ZMM need AVX512DQ, which the avx512 tier does
// not check for.
func avx512F(op string, vw int) string {
	if vw != 16 {
		return op
	}
	return map[string]string{"VXORPS": "VPXORD", "VANDPS": "VPANDD"}[op]
}
