package main

import (
	"fmt"
	"math"
)

// The AVX-512 W4A16 kernels (w4a16_avx512_amd64.s): the AVX2 kernels'
// numerics (w4a16.go) with a ZMM register holding both of an output's
// 8-lane accumulators, A in the low half and B in the high: a
// sub-block's 16 low nibbles are elements 0-15, chunks 0 (A) and 1 (B),
// its high nibbles elements 16-31, chunks 2 (A) and 3 (B), so two FMAs
// a sub-block give every lane the AVX2 kernel's sequence. At a group's
// end the halves are added and T = FMA(d, A+B, T) on 8 lanes, reduced by
// the same HSUM: every result is bit-identical to the AVX2 tier's.
//
// Nibbles to floats: VPMOVZXBD widens the 16 bytes to dwords, VPERMPS
// looks each up in a table of the 16 floats q-8 (it reads only an
// index's low four bits, so the high nibble needs one VPSRLD and no
// mask). A widening, two lookups and a shift per 32 weights, where the
// AVX2 kernel spends fourteen instructions on broadcasts, shuffles,
// shifts and conversions.

func init() { files["w4a16_avx512_amd64.s"] = w4z512File }

func w4z512File() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`
// W4A16 weights (tensor.W4A16: per 128-group an fp16 d and 64 bytes of
// nibbles in Q4_0 order) times float32 activations, the AVX2 kernels'
// numerics (w4a16_avx2_amd64.s): an output's A (chunks 0, 2 of each
// sub-block) and B (chunks 1, 3) are the low and high halves of one ZMM
// register; at a group's end T = FMA(d, A+B, T) on 8 lanes; the result is
// the AVX2 HSUM of T. Nibbles become floats through VPERMPS on w4zq, the
// 16 floats q-8.
`)
	a.dwords64("w4zq", func(i int) uint32 { return math.Float32bits(float32(i - 8)) })
	w4zVec(a, "T0")
	a.raw("")
	w4zVec(a, "NTA")
	a.raw("")
	w4zVec4(a, 1)
	a.raw("")
	w4zVec4(a, 2)
	return a
}

// w4zNibbles widens the 16 bytes at m into Z idx and leaves the floats
// q-8 of their low nibbles in Z lo and of their high nibbles in Z hi
// (idx is reused for the shifted bytes). Z31 holds w4zq.
func w4zNibbles(a *asm, m string, idx, lo, hi int) {
	a.op("VPMOVZXBD %s, Z%d", m, idx)
	a.op("VPERMPS Z31, Z%d, Z%d", idx, lo)
	a.op("VPSRLD $4, Z%d, Z%d", idx, idx)
	a.op("VPERMPS Z31, Z%d, Z%d", idx, hi)
}

// w4zFMA emits acc += x*w, the first product of a group (sub-block s =
// 0) as acc = x*w: the same bits as adding it to zero, except that a
// product of -0 stays -0, which A+B, d*(A+B) and T (+0 from the start,
// so never -0) turn back into the same result.
func w4zFMA(a *asm, s int, x string, w, acc int) {
	if s == 0 {
		a.op("VMULPS %s, Z%d, Z%d", x, w, acc)
		return
	}
	a.op("VFMADD231PS %s, Z%d, Z%d", x, w, acc)
}

// w4zGroupEnd emits T = FMA(d, A+B, T) for the output whose A and B are Z
// acc, T Y t, d the fp16 at m; Y16 and Y17 are scratch.
func w4zGroupEnd(a *asm, acc, t int, m string) {
	a.op("VEXTRACTF32X8 $1, Z%d, Y16", acc)
	a.op("VADDPS Y16, Y%d, Y%d", acc, acc)
	a.op("VPBROADCASTW %s, X17", m)
	a.op("VCVTPH2PS X17, Y17")
	a.op("VFMADD231PS Y17, Y%d, Y%d", acc, t)
}

// w4zVec emits w4a16VecAVX512 (prefetching with PREFETCHT0) or
// w4a16VecAVX512NTA (PREFETCHNTA)(out []float32, w []byte, stride, groups
// int, x []float32): one activation row times len(out) weight rows, a
// multiple of 8, eight at a time (eight independent FMA chains). The
// eight rows are one run of bytes, 8*66 a group; each group prefetches
// that many bytes of the next eight rows. Rows are short (16 groups, 1 KiB,
// for 2048 columns), too short for the hardware prefetchers to learn:
// BenchmarkDecodeStream/W4A16/avx512 (Zen 5, two threads, two runs) read
// 0.33-0.40 of the read probe without it, 0.69-0.80 with T0, 0.75-0.95
// with NTA.
// Registers: DI out, CX 8-row sets left, SI the set's first row, R8/R11
// stride x1/x3, BX/R13 rows 0/4, AX the prefetch, R12 x, DX groups left,
// R9 groups, R10 x base; Z0-Z7 A|B of the rows, Y8-Y15 their T, Z16/Z17
// a sub-block's activations, Z18-Z29 nibbles, Z31 w4zq.
func w4zVec(a *asm, pf string) {
	name := "w4a16VecAVX512"
	if pf == "NTA" {
		name += "NTA"
	}
	l := func(s string) string { return "w4z" + pf + s }
	a.raw("// func %s(out []float32, w []byte, stride, groups int, x []float32)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-88", name)
	a.op("VMOVUPS w4zq<>(SB), Z31")
	rows8Args(a, "groups", l("done")) // float512.go
	a.label(l("set"))
	a.op("MOVQ SI, BX")
	a.op("LEAQ (SI)(R8*4), R13")
	a.op("MOVQ R10, R12")
	a.op("MOVQ R9, DX")
	a.op("LEAQ (R13)(R8*4), AX")
	for r := 0; r < 8; r++ {
		a.op("VPXORD Z%d, Z%d, Z%d", 8+r, 8+r, 8+r)
	}
	a.label(l("group"))
	for off := 0; off < 8*66; off += 64 {
		a.op("PREFETCH%s %s", pf, w4xMem(off, "AX", ""))
	}
	a.op("ADDQ $%d, AX", 8*66)
	row := func(r, off int) string {
		base := []string{"BX", "R13"}[r/4]
		return w4xMem(off, base, []string{"", "(R8*1)", "(R8*2)", "(R11*1)"}[r%4])
	}
	for s := 0; s < 4; s++ {
		a.op("VMOVUPS %s, Z16", w4xMem(128*s, "R12", ""))
		a.op("VMOVUPS %d(R12), Z17", 128*s+64)
		for r := 0; r < 8; r++ {
			n := 18 + 3*(r%4)
			w4zNibbles(a, row(r, 2+16*s), n, n+1, n+2)
			w4zFMA(a, s, "Z16", n+1, r)
			a.op("VFMADD231PS Z17, Z%d, Z%d", n+2, r)
		}
	}
	for r := 0; r < 8; r++ {
		w4zGroupEnd(a, r, 8+r, row(r, 0))
	}
	a.op("ADDQ $66, BX")
	a.op("ADDQ $66, R13")
	a.op("ADDQ $512, R12")
	a.op("DECQ DX")
	a.op("JNZ %s", l("group"))
	for r := 0; r < 8; r++ {
		hsum(a, 8+r, 0) // the A|B registers are free here (HSUM is VEX: X0-X15)
		a.op("VMOVSS X%d, %d(DI)", 8+r, 4*r)
	}
	a.op("ADDQ $32, DI")
	a.op("LEAQ (SI)(R8*8), SI")
	a.op("DECQ CX")
	a.op("JNZ %s", l("set"))
	a.label(l("done"))
	a.op("VZEROUPPER")
	a.op("RET")
}

// w4zVec4 emits w4a16Vec4AVX512 (wrows 1) or w4a16Vec4x2AVX512 (wrows 2)
// (out []float32, ostride int, w []byte, stride, rows, groups int, x
// []float32, xstride int): rows weight rows (a multiple of wrows), wrows
// at a time, each times four activation rows, whose values are loaded
// once for the wrows. Two weight rows halve the activation loads an FMA
// needs, which is what keeps a batch off the L2's bandwidth:
// BenchmarkW4A16 n=16 (Zen 5, one thread, two runs each) 30-42 G
// multiply-adds a second with one weight row times eight activation rows,
// 46-50 with two times four. Registers: DI out (the current column),
// AX/R13 ostride x1/x3 in bytes, SI the weight rows, R8 stride, CX rows
// left (in wrows), BX the group in the first row, DX groups left, R12 the
// activations' group, R11/R14 xstride x1/x3 in bytes; output (w, i)
// (weight row w, activation row i) has A|B in Z(4w+i) and T in Y(8+4w+i);
// Z16-Z23 a sub-block's activations (row i's halves in Z(16+2i),
// Z(17+2i)), Z24-Z29 nibbles, Z30 d, Z31 w4zq.
func w4zVec4(a *asm, wrows int) {
	name := map[int]string{1: "w4a16Vec4AVX512", 2: "w4a16Vec4x2AVX512"}[wrows]
	l := func(s string) string { return fmt.Sprintf("w4z4%d%s", wrows, s) }
	a.raw("// func %s(out []float32, ostride int, w []byte, stride, rows, groups int, x []float32, xstride int)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-112", name)
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ ostride+24(FP), AX")
	a.op("SHLQ $2, AX")
	a.op("LEAQ (AX)(AX*2), R13")
	a.op("MOVQ w_base+32(FP), SI")
	a.op("MOVQ stride+56(FP), R8")
	a.op("MOVQ rows+64(FP), CX")
	if wrows == 2 {
		a.op("SHRQ $1, CX")
	} else {
		a.op("TESTQ CX, CX")
	}
	a.op("JZ %s", l("done"))
	a.op("MOVQ xstride+104(FP), R11")
	a.op("SHLQ $2, R11")
	a.op("LEAQ (R11)(R11*2), R14")
	a.op("VMOVUPS w4zq<>(SB), Z31")
	a.label(l("rows"))
	a.op("MOVQ SI, BX")
	a.op("MOVQ x_base+80(FP), R12")
	a.op("MOVQ groups+72(FP), DX")
	for w := 0; w < wrows; w++ {
		for i := 0; i < 4; i++ {
			a.op("VPXORD Z%d, Z%d, Z%d", 8+4*w+i, 8+4*w+i, 8+4*w+i)
		}
	}
	a.label(l("group"))
	xrow := []string{"", "(R11*1)", "(R11*2)", "(R14*1)"}
	wrow := []string{"", "(R8*1)"}
	for s := 0; s < 4; s++ {
		for i := 0; i < 4; i++ {
			for h := 0; h < 2; h++ {
				a.op("VMOVUPS %s, Z%d", w4xMem(128*s+64*h, "R12", xrow[i]), 16+2*i+h)
			}
		}
		for w := 0; w < wrows; w++ {
			n := 24 + 3*w
			w4zNibbles(a, w4xMem(2+16*s, "BX", wrow[w]), n, n+1, n+2)
			for i := 0; i < 4; i++ {
				w4zFMA(a, s, fmt.Sprintf("Z%d", 16+2*i), n+1, 4*w+i)
			}
			for i := 0; i < 4; i++ {
				a.op("VFMADD231PS Z%d, Z%d, Z%d", 17+2*i, n+2, 4*w+i)
			}
		}
	}
	for w := 0; w < wrows; w++ {
		a.op("VPBROADCASTW %s, X30", w4xMem(0, "BX", wrow[w]))
		a.op("VCVTPH2PS X30, Y30")
		for i := 0; i < 4; i++ {
			p := 4*w + i
			a.op("VEXTRACTF32X8 $1, Z%d, Y16", p)
			a.op("VADDPS Y16, Y%d, Y%d", p, p)
			a.op("VFMADD231PS Y30, Y%d, Y%d", p, 8+p)
		}
	}
	a.op("ADDQ $66, BX")
	a.op("ADDQ $512, R12")
	a.op("DECQ DX")
	a.op("JNZ %s", l("group"))
	orow := []string{"", "(AX*1)", "(AX*2)", "(R13*1)"}
	for w := 0; w < wrows; w++ {
		for i := 0; i < 4; i++ {
			p := 4*w + i
			hsum(a, 8+p, 0)
			a.op("VMOVSS X%d, %s", 8+p, w4xMem(4*w, "DI", orow[i]))
		}
	}
	a.op("ADDQ $%d, DI", 4*wrows)
	a.op("LEAQ (SI)(R8*%d), SI", wrows)
	a.op("DECQ CX")
	a.op("JNZ %s", l("rows"))
	a.label(l("done"))
	a.op("VZEROUPPER")
	a.op("RET")
}
