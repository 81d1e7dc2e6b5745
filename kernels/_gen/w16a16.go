package main

import "fmt"

// The W16A16 kernels (w16a16_avx512_amd64.s): BF16 weights times BF16
// activations through VDPBF16PS (AVX-512 BF16), llama.cpp's numerics for
// BF16 weights. A ZMM register of weights and one of activations hold 32
// columns; lane l of the running sums adds the products of columns 2l+1
// then 2l of each 32 (the instruction's order, each an FMA of an exact
// product, inputs and outputs flushed to zero), and the 16 lanes are
// reduced as l + l+8, then the AVX2 kernels' HSUM. kernels/w16a16.go has
// the Go twin of every step and the activation layout: a row rounded to
// BF16 (flushed to zero below the normal range) and padded with zeros to
// a multiple of 32, so only the weights' last chunk needs a mask.
//
// Go's assembler does not know the AVX-512 BF16 instructions; they are
// emitted as bytes, registers only.

func init() { files["w16a16_avx512_amd64.s"] = w16a16File }

// evex512 emits EVEX.512.<pp>.0F38.W0 op /r with registers only, Intel
// operand order dst, v, rm (Z0-Z31).
func evex512(a *asm, name string, pp, op byte, dst, v, rm int) {
	p0 := byte(0x02) // map 0F38; R, X, B, R' are stored inverted
	if dst&8 == 0 {
		p0 |= 0x80
	}
	if rm&16 == 0 {
		p0 |= 0x40
	}
	if rm&8 == 0 {
		p0 |= 0x20
	}
	if dst&16 == 0 {
		p0 |= 0x10
	}
	p1 := byte(^v&15)<<3 | 0x04 | pp // W0, vvvv inverted
	p2 := byte(0x40)                 // L'L = 512 bits, no mask
	if v&16 == 0 {
		p2 |= 0x08 // V' inverted
	}
	modrm := 0xc0 | byte(dst&7)<<3 | byte(rm&7)
	a.op("BYTE $0x62; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x // %s Z%d, Z%d, Z%d",
		p0, p1, p2, op, modrm, name, rm, v, dst)
}

// vdpbf16ps: acc += the products of the BF16 pairs of x and w, per lane.
func vdpbf16ps(a *asm, w, x, acc int) { evex512(a, "VDPBF16PS", 0x02, 0x52, acc, x, w) }

// vcvtne2ps2bf16: dst = BF16 of lo's 16 floats, then hi's.
func vcvtne2ps2bf16(a *asm, lo, hi, dst int) { evex512(a, "VCVTNE2PS2BF16", 0x03, 0x72, dst, hi, lo) }

// reduce16 leaves in X t1 the sum of Z src's 16 lanes in the twin's
// order: l + l+8, then ((s0+s4)+(s2+s6)) + ((s1+s5)+(s3+s7)). Every
// instruction has an EVEX form, so any registers serve.
func reduce16(a *asm, src, t1, t2 int) {
	a.op("VEXTRACTF64X4 $1, Z%d, Y%d", src, t1)
	a.op("VADDPS Y%d, Y%d, Y%d", t1, src, t1)
	a.op("VEXTRACTF32X4 $1, Y%d, X%d", t1, t2)
	a.op("VADDPS X%d, X%d, X%d", t2, t1, t1)
	a.op("VMOVHLPS X%d, X%d, X%d", t1, t1, t2)
	a.op("VADDPS X%d, X%d, X%d", t2, t1, t1)
	a.op("VMOVSHDUP X%d, X%d", t1, t2)
	a.op("VADDSS X%d, X%d, X%d", t2, t1, t1)
}

func w16a16File() *asm {
	k := &asm{}
	k.b.WriteString(header)
	w16a16Quant(k)
	w16a16Vec(k, 8)
	w16a16Vec(k, 1)
	w16a16Vec4(k)
	return k
}

// chunkLoop emits the loop over DX whole chunks (chunk(false), then the
// registers step advanced 64 bytes) and, where the mask in register tail
// is not 0, the last partial chunk (chunk(true)), ending at label sums.
func chunkLoop(a *asm, l func(string) string, tail string, chunk func(tail bool), step ...string) {
	a.op("TESTQ DX, DX")
	a.op("JZ %s", l("tail"))
	a.label(l("chunk"))
	chunk(false)
	for _, r := range step {
		a.op("ADDQ $64, %s", r)
	}
	a.op("DECQ DX")
	a.op("JNZ %s", l("chunk"))
	a.label(l("tail"))
	a.op("TESTQ %s, %s", tail, tail)
	a.op("JZ %s", l("sums"))
	chunk(true)
	a.label(l("sums"))
}

// w16a16Quant emits w16a16QuantAVX512(dst []byte, x []float32, chunks
// int): 32 floats a chunk to BF16 (round to nearest even, inputs below
// the normal range to zero).
func w16a16Quant(a *asm) {
	a.raw("// func w16a16QuantAVX512(dst []byte, x []float32, chunks int)")
	a.raw("TEXT ·w16a16QuantAVX512(SB), NOSPLIT, $0-56")
	a.op("MOVQ dst_base+0(FP), DI")
	a.op("MOVQ x_base+24(FP), SI")
	a.op("MOVQ chunks+48(FP), CX")
	a.op("TESTQ CX, CX")
	a.op("JZ w16qdone")
	a.label("w16qloop")
	a.op("VMOVUPS (SI), Z1")
	a.op("VMOVUPS 64(SI), Z2")
	vcvtne2ps2bf16(a, 1, 2, 0)
	a.op("VMOVDQU64 Z0, (DI)")
	a.op("ADDQ $128, SI")
	a.op("ADDQ $64, DI")
	a.op("DECQ CX")
	a.op("JNZ w16qloop")
	a.label("w16qdone")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// w16a16Prefetch is how far ahead in each row the one-row-of-activations
// kernel prefetches, as the F16/BF16 kernels do (float512.go).
const w16a16Prefetch = 512

// w16a16Vec emits w16a16Vec<g>AVX512(out []float32, w []byte, stride,
// chunks int, tail uint64, x []byte): len(out) rows (a multiple of g = 8
// or 1), g at a time, of chunks whole 32-column chunks and, where tail
// (a mask of columns) is not 0, a last partial chunk. Registers: DI out,
// CX groups left, SI the group's first row, R8/R11 stride x1/x3, BX/R13
// rows 0/4 of the group, R12 x, DX chunks left; Z0-Z7 the sums, Z8 the
// activations, Z16-Z23 the weights, Z9/Z10 scratch; K1 the tail mask.
func w16a16Vec(a *asm, g int) {
	name := fmt.Sprintf("w16a16Vec%dAVX512", g)
	l := func(s string) string { return fmt.Sprintf("w16v%d%s", g, s) }
	a.raw("// func %s(out []float32, w []byte, stride, chunks int, tail uint64, x []byte)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-96", name)
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ out_len+8(FP), CX")
	a.op("MOVQ w_base+24(FP), SI")
	a.op("MOVQ stride+48(FP), R8")
	a.op("MOVQ chunks+56(FP), R9")
	a.op("MOVQ tail+64(FP), AX")
	a.op("KMOVD AX, K1")
	a.op("MOVQ x_base+72(FP), R10")
	a.op("LEAQ (R8)(R8*2), R11")
	if g == 8 {
		a.op("SHRQ $3, CX")
	}
	a.op("TESTQ CX, CX")
	a.op("JZ %s", l("done"))
	a.label(l("group"))
	a.op("MOVQ SI, BX")
	a.op("LEAQ (SI)(R8*4), R13")
	a.op("MOVQ R10, R12")
	a.op("MOVQ R9, DX")
	for r := 0; r < g; r++ {
		a.op("VPXORD Z%d, Z%d, Z%d", r, r, r)
	}
	rowAddr := func(r, off int) string {
		b := []string{"BX", "R13"}[r/4]
		idx := []string{"", "(R8*1)", "(R8*2)", "(R11*1)"}[r%4]
		return fmt.Sprintf("%s(%s)%s", offs(off), b, idx)
	}
	chunk := func(tail bool) {
		a.op("VMOVDQU64 (R12), Z8")
		for r := 0; r < g; r++ {
			if tail {
				a.op("VMOVDQU16.Z %s, K1, Z%d", rowAddr(r, 0), 16+r)
			} else {
				a.op("VMOVDQU64 %s, Z%d", rowAddr(r, 0), 16+r)
				a.op("PREFETCHT0 %s", rowAddr(r, w16a16Prefetch))
			}
			vdpbf16ps(a, 16+r, 8, r)
		}
	}
	chunkLoop(a, l, "AX", chunk, "BX", "R13", "R12")
	for r := 0; r < g; r++ {
		reduce16(a, r, 9, 10)
		a.op("VMOVSS X9, %d(DI)", 4*r)
	}
	a.op("ADDQ $%d, DI", 4*g)
	if g == 8 {
		a.op("LEAQ (SI)(R8*8), SI")
	} else {
		a.op("ADDQ R8, SI")
	}
	a.op("DECQ CX")
	a.op("JNZ %s", l("group"))
	a.label(l("done"))
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// w16a16Vec4 emits w16a16Vec4AVX512(out []float32, ostride int, w
// []byte, stride, rows, chunks int, tail uint64, x []byte, xstride int):
// rows (a multiple of 6) times four activation rows, 6 rows at a time.
// Registers: DI out, AX/R13 ostride x1/x3 in bytes, SI the group's first
// row, R8 stride, BX/R12 rows 0/3 of the group, CX rows left, R9 chunks,
// R10 x, R11/R14 xstride x1/x3, DX chunks left, R15 the tail mask;
// Z(4r+i) the sums of row r with activation row i, Z24-Z27 the four
// activation rows' chunk, Z28 a row's weights, Z29/Z30 scratch.
func w16a16Vec4(a *asm) {
	l := func(s string) string { return "w16v4" + s }
	a.raw("// func w16a16Vec4AVX512(out []float32, ostride int, w []byte, stride, rows, chunks int, tail uint64, x []byte, xstride int)")
	sixRowKernel(a, "w16a16Vec4AVX512", l, true, func() {
		for r := 0; r < 24; r++ {
			a.op("VPXORD Z%d, Z%d, Z%d", r, r, r)
		}
		xAddr := []string{"(R10)", "(R10)(R11*1)", "(R10)(R11*2)", "(R10)(R14*1)"}
		chunk := func(tail bool) {
			for i := 0; i < 4; i++ {
				a.op("VMOVDQU64 %s, Z%d", xAddr[i], 24+i)
			}
			for r := 0; r < 6; r++ {
				if tail {
					a.op("VMOVDQU16.Z %s, K1, Z28", sixRowAddr[r])
				} else {
					a.op("VMOVDQU64 %s, Z28", sixRowAddr[r])
				}
				for i := 0; i < 4; i++ {
					vdpbf16ps(a, 28, 24+i, 4*r+i)
				}
			}
		}
		chunkLoop(a, l, "R15", chunk, "BX", "R12", "R10")
		outAddr := []string{"(DI)", "(DI)(AX*1)", "(DI)(AX*2)", "(DI)(R13*1)"}
		for r := 0; r < 6; r++ {
			for i := 0; i < 4; i++ {
				reduce16(a, 4*r+i, 29, 30)
				a.op("VMOVSS X29, %s%s", offs(4*r), outAddr[i])
			}
		}
	})
}
