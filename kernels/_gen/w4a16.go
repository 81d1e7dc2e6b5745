package main

import (
	"fmt"
	"strings"
)

func init() { files["w4a16_avx2_amd64.s"] = w4xAVX2File }

// w4xDefine emits a preprocessor macro: head (the name and its
// parameters) and its body, one output line per element of lines, each
// line a list of instructions joined by "; ". A body of one line stays on
// the #define line; longer bodies are continued with backslashes, labels
// (lines ending in ':') unindented and without the separating ';'.
func w4xDefine(a *asm, head string, lines ...string) {
	if len(lines) == 1 {
		a.raw("#define %s %s", head, lines[0])
		return
	}
	a.raw("#define %s \\", head)
	for i, l := range lines {
		last := i == len(lines)-1
		if !strings.HasSuffix(l, ":") {
			l = "\t" + l
			if !last {
				l += ";"
			}
		}
		if !last {
			l += " \\"
		}
		a.raw("%s", l)
	}
}

// w4xMem is the address off(base)index, the offset left out when zero.
func w4xMem(off int, base, index string) string {
	if off == 0 {
		return "(" + base + ")" + index
	}
	return fmt.Sprintf("%d(%s)%s", off, base, index)
}

// w4xCtl is the VPSHUFB control w4ctl<h>: it moves byte 8h+i of the
// 16 broadcast bytes (lane 0 holds bytes 0-3 of the eight, lane 1 bytes
// 4-7, VPSHUFB staying within its lane) into the top byte of dword i,
// zeroing the other three (0x80).
func w4xCtl(h int) (v [32]byte) {
	for i := range v {
		v[i] = 0x80
		if i%4 == 3 {
			v[i] = byte(8*h + i/4)
		}
	}
	return
}

// w4xAVX2File writes kernels/w4a16_avx2_amd64.s: W4A16 weights
// (tensor.W4A16: per 128-group an fp16 d and 64 bytes of nibbles in Q4_0
// order, 66 bytes a group) times float32 activations.
//
// Every output has three 8-lane accumulators: for each group, A and B
// start at zero and each 32-element sub-block s adds its four 8-element
// chunks c (values q-8 widened exactly to float32) as A = FMA(w_c, x_c,
// A) for c = 0, 2 and B = FMA(w_c, x_c, B) for c = 1, 3 (two chains, so
// the FMA latency overlaps); at the group's end T = FMA(d, A+B, T). The
// result is HSUM(T). Scaling once per group instead of per weight saves
// a multiply per 8 elements; q-8 and its product with x are exact, so the
// only roundings are the lane sums. Several outputs are computed at once
// (4 weight rows for one activation row, 1 weight row for four
// activation rows, unpacking its nibbles once), each by that same
// sequence, so every kernel gives bit-identical results.
//
// Nibbles to floats without cross-lane shuffles: a sub-block's 16 bytes,
// XORed with 0x88 (so each nibble read as a signed 4-bit number is q-8),
// are broadcast to both 128-bit lanes; one VPSHUFB puts bytes 0-7 (8-15)
// into the top byte of the eight dwords, VPSRAD $28 then gives the high
// nibbles (elements 16-23, 24-31) and VPSLLD $4 before it the low ones
// (elements 0-7, 8-15), each sign-extended, ready for VCVTDQ2PS. So half
// h (0, 1) of the bytes gives chunk h (low nibbles) and chunk 2+h (high
// nibbles): half 0 feeds A, half 1 feeds B.
func w4xAVX2File() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`#include "avx2_amd64.h"

// W4A16 weights (tensor.W4A16: per 128-group an fp16 d and 64 bytes of
// nibbles in Q4_0 order) times float32 activations. Per output and group,
// A (chunks 0, 2 of each sub-block) and B (chunks 1, 3) accumulate
// FMA(q-8, x) from zero, then T = FMA(d, A+B, T); the result is HSUM(T).
// Every kernel runs this same sequence per output (bit-identical results).
//
// Nibbles to floats: the sub-block's 16 bytes XOR 0x88 (a nibble read as
// signed 4 bits is then q-8), broadcast to both lanes; VPSHUFB puts bytes
// 0-7 (8-15) into the dwords' top bytes, VPSRAD $28 gives the high
// nibbles, VPSLLD $4 before it the low ones, sign-extended.
`)
	a.data("w4x88", splat(0x88))
	a.data("w4ctl0", w4xCtl(0))
	a.data("w4ctl1", w4xCtl(1))
	a.raw("// W4BYTES leaves in Y12 the sub-block at M, XORed with 0x88, in both")
	a.raw("// lanes.")
	w4xDefine(a, "W4BYTES(M)",
		"VBROADCASTI128 M, Y12",
		"VPXOR w4x88<>(SB), Y12, Y12")
	a.raw("")
	a.raw("// W4HALF leaves in Y14 bytes 0-7 (C = w4ctl0) or 8-15 (w4ctl1) of Y12 in")
	a.raw("// the top bytes of its dwords; W4LO and W4HI leave in Y13 their low and")
	a.raw("// high nibbles (q-8) as float32.")
	w4xDefine(a, "W4HALF(C)", "VPSHUFB C, Y12, Y14")
	w4xDefine(a, "W4LO", "VPSLLD $4, Y14, Y13; VPSRAD $28, Y13, Y13; VCVTDQ2PS Y13, Y13")
	w4xDefine(a, "W4HI", "VPSRAD $28, Y14, Y13; VCVTDQ2PS Y13, Y13")
	a.raw("")
	w4xVecAVX2(a)
	a.raw("")
	w4xVec4AVX2(a)
	return a
}

// w4xAVX2Group emits the group loop body shared by the AVX2 kernels, for
// wrows weight rows (at BX + the indexes wi) times xrows activation rows
// (at R12 + the indexes xi), one of the two counts being 1. Output p (the
// weight or activation row) has A in Y(p), B in Y(4+p), T in Y(8+p); Y13
// holds the unpacked chunk, Y12/Y14 the bytes. The activations of a group
// are 512 bytes, its weights 66 (d then the four sub-blocks of 16). With
// prefetch, each group prefetches the next len(wi) rows' bytes of it, at
// AX (w4xVecAVX2).
func w4xAVX2Group(a *asm, l string, wi, xi []string, prefetch bool) {
	a.label(l)
	if prefetch {
		for off := 0; off < len(wi)*66; off += 64 {
			a.op("PREFETCHT0 %d(AX)", off)
		}
		a.op("ADDQ $%d, AX", len(wi)*66)
	}
	for p := 0; p < len(wi)*len(xi); p++ {
		a.op("VXORPS Y%d, Y%d, Y%d", p, p, p)
		a.op("VXORPS Y%d, Y%d, Y%d", 4+p, 4+p, 4+p)
	}
	for s := 0; s < 4; s++ {
		for w, wx := range wi {
			a.op("W4BYTES(%s)", w4xMem(2+16*s, "BX", wx))
			for h := 0; h < 2; h++ {
				a.op("W4HALF(w4ctl%d<>(SB))", h)
				// Low nibbles: chunk h; high: chunk 2+h. Half h
				// accumulates into A (h = 0) or B (h = 1).
				for n, part := range []string{"W4LO", "W4HI"} {
					a.op("%s", part)
					c := h + 2*n
					for x, xx := range xi {
						p := w + x
						a.op("VFMADD231PS %s, Y13, Y%d", w4xMem(128*s+32*c, "R12", xx), 4*h+p)
					}
				}
			}
		}
	}
	// T += d*(A+B). With one activation row each weight row's d is
	// loaded after A+B; with four, the one row's d is loaded once first.
	for w, wx := range wi {
		d := func() {
			a.op("VPBROADCASTW %s, X13", w4xMem(0, "BX", wx))
			a.op("VCVTPH2PS X13, Y13")
		}
		if len(xi) > 1 {
			d()
		}
		for x := range xi {
			p := w + x
			a.op("VADDPS Y%d, Y%d, Y%d", 4+p, p, p)
			if len(xi) == 1 {
				d()
			}
			a.op("VFMADD231PS Y13, Y%d, Y%d", p, 8+p)
		}
	}
	a.op("ADDQ $66, BX")
	a.op("ADDQ $512, R12")
	a.op("DECQ DX")
	a.op("JNZ %s", l)
	a.raw("")
}

// w4xAVX2Start starts one pass over n outputs' rows: BX the weight row
// (from SI), R12 the activations (from xsrc), DX the groups (R9), T zero.
func w4xAVX2Start(a *asm, l, xsrc string, n int) {
	a.label(l)
	a.op("MOVQ SI, BX")
	a.op("MOVQ %s, R12", xsrc)
	a.op("MOVQ R9, DX")
	for p := 0; p < n; p++ {
		a.op("VXORPS Y%d, Y%d, Y%d", 8+p, 8+p, 8+p)
	}
	a.raw("")
}

// w4xAVX2Sums reduces the T accumulators Y8.. and stores their sums at
// the addresses outs.
func w4xAVX2Sums(a *asm, outs []string) {
	for p := range outs {
		a.op("HSUM(Y%d, X%d, X14)", 8+p, 8+p)
	}
	for p, o := range outs {
		a.op("VMOVSS X%d, %s", 8+p, o)
	}
}

// w4xVecAVX2 emits w4a16VecAVX2: one activation row (R10) times the len(out)
// weight rows at SI (stride R8 bytes, R11 = 3*stride), four rows at a
// time (w4four), the rest one at a time (w4onerow). The four rows are one
// run of bytes, 4*66 a group; each group prefetches that many bytes of the
// next four (AX). Rows are short (1 KiB for 2048 columns), too short for
// the hardware prefetchers to learn: BenchmarkDecodeStream/W4A16/avx2
// (Zen 5, three runs) read 0.19-0.22 of the read probe without it,
// 0.39-0.42 with it (PREFETCHNTA 0.37-0.54).
func w4xVecAVX2(a *asm) {
	a.raw("// func w4a16VecAVX2(out []float32, w []byte, stride, groups int, x []float32)")
	a.raw("// Four weight rows at a time, then one at a time.")
	a.raw("TEXT ·w4a16VecAVX2(SB), NOSPLIT, $0-88")
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ out_len+8(FP), CX")
	a.op("MOVQ w_base+24(FP), SI")
	a.op("MOVQ stride+48(FP), R8")
	a.op("MOVQ groups+56(FP), R9")
	a.op("MOVQ x_base+64(FP), R10")
	a.op("LEAQ (R8)(R8*2), R11 // 3*stride")
	a.op("CMPQ CX, $4")
	a.op("JLT w4one")
	a.raw("")
	rows4 := []string{"", "(R8*1)", "(R8*2)", "(R11*1)"}
	w4xAVX2Start(a, "w4four", "R10", 4)
	a.op("LEAQ (SI)(R8*4), AX")
	w4xAVX2Group(a, "w4fourg", rows4, []string{""}, true)
	outs := make([]string, 4)
	for p := range outs {
		outs[p] = w4xMem(4*p, "DI", "")
	}
	w4xAVX2Sums(a, outs)
	a.op("ADDQ $16, DI")
	a.op("LEAQ (SI)(R8*4), SI")
	a.op("SUBQ $4, CX")
	a.op("CMPQ CX, $4")
	a.op("JGE w4four")
	a.raw("")
	a.label("w4one")
	a.op("TESTQ CX, CX")
	a.op("JZ w4done")
	a.raw("")
	w4xAVX2Start(a, "w4onerow", "R10", 1)
	w4xAVX2Group(a, "w4onerowg", []string{""}, []string{""}, false)
	w4xAVX2Sums(a, []string{"(DI)"})
	a.op("ADDQ $4, DI")
	a.op("ADDQ R8, SI")
	a.op("DECQ CX")
	a.op("JNZ w4onerow")
	a.raw("")
	a.label("w4done")
	a.op("VZEROUPPER")
	a.op("RET")
}

// w4xVec4AVX2 emits w4a16Vec4AVX2: rows weight rows (SI, stride R8) each
// times four activation rows (x, xstride R11 bytes, R14 = 3*xstride),
// the nibbles unpacked once for the four; out row r at DI + r*ostride (AX
// bytes, R13 = 3*ostride).
func w4xVec4AVX2(a *asm) {
	a.raw("// func w4a16Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, groups int, x []float32, xstride int)")
	a.raw("// One weight row at a time times four activation rows.")
	a.raw("TEXT ·w4a16Vec4AVX2(SB), NOSPLIT, $0-112")
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ ostride+24(FP), AX")
	a.op("SHLQ $2, AX // ostride in bytes")
	a.op("LEAQ (AX)(AX*2), R13")
	a.op("MOVQ w_base+32(FP), SI")
	a.op("MOVQ stride+56(FP), R8")
	a.op("MOVQ rows+64(FP), CX")
	a.op("MOVQ groups+72(FP), R9")
	a.op("MOVQ xstride+104(FP), R11")
	a.op("SHLQ $2, R11 // xstride in bytes")
	a.op("LEAQ (R11)(R11*2), R14")
	a.raw("")
	w4xAVX2Start(a, "w4x4row", "x_base+80(FP)", 4)
	w4xAVX2Group(a, "w4x4g", []string{""}, []string{"", "(R11*1)", "(R11*2)", "(R14*1)"}, false)
	w4xAVX2Sums(a, []string{"(DI)", "(DI)(AX*1)", "(DI)(AX*2)", "(DI)(R13*1)"})
	a.op("ADDQ $4, DI")
	a.op("ADDQ R8, SI")
	a.op("DECQ CX")
	a.op("JNZ w4x4row")
	a.raw("")
	a.op("VZEROUPPER")
	a.op("RET")
}
