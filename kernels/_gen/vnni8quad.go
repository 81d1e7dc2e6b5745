package main

import "fmt"

// Q4_K on 32 rows (four groups: the pairs at SI and at BX = SI + 2*R10),
// eight activation rows taken four at a time. The eight-row kernel of
// vnni8.go spends a load on every VPDPBUSD (its activation broadcast), and
// loads, not VPDPBUSD, bound it; here each broadcast activation feeds both
// pairs' weights, so a step of four activation rows has 12 loads for 16
// VPDPBUSD instead of 18 for 16. The two passes over the activation rows
// (0-3, then 4-7) read the block's weights twice, the second time from L1.
// Integer sums and float steps per row are q4k8z's (exact block sums, the
// same float operations in the same order), so the bits are vec1's.
//
// Registers: Z0+i and Z8+i the sums of the low and high nibbles
// (sub-blocks 2c and 2c+1) of chunk c for i = 2a+w (activation row a of
// the pass, pair w), Z16+i the block's integer sums, Z24 0x0f bytes,
// Z25/Z26 and Z27/Z28 the unpacked weights of pairs 0 and 1, Z29/Z30 the
// broadcast activations. Stack: the counts of blocks, chunks and passes
// left, the float sums' pointer of the pass, 4 and 8 activation rows'
// bytes and ab, a 64-byte aligned address on the stack (Go aligns SP to
// 8: a 64-byte access there spans two cache lines, and such accesses
// measured costly), from which the int32 scales of sub-block j of pair w
// at 128j+64w, the min pairs p at 1024+128p+64w and the float sums of row
// r at 1536+128r+64w.
//
// Weights streamed from memory (a batch of decode rows reads each weight
// once per step) ran at about half the L2 rate; the kernel prefetches the
// next block of all four groups while in pass 0 of a block, about two
// lines per step k of a chunk (chunk c: bytes 256c to 256c+255 of the
// next block; the last two lines of it, past the chunks, at the block's
// start), in a copy of the chunk loop that pass 0 runs (pass 1 reads the
// block from L1). Against the kernel without it, alternated in one run
// (one thread, 256 MiB, thread CPU time, Zen 5, 2 vCPUs under load 3-6):
// from memory 1.29-1.30x, on an L2 tile (prefill) 0.994-1.003x. The last
// block's prefetch reaches past the quad: harmless. Measured in earlier
// runs against variants (BenchmarkPackedStream8's setup): all of the block's lines in a
// burst at its start (1.11-1.14x, L2 -2.5%), the same with PREFETCHNTA
// (1.11-1.13x), two blocks on (1.05-1.07x), every other line (1.0x),
// the chunk's lines in a burst at the chunk's start (1.28-1.35x, L2
// -1-3.5%), interleaved PREFETCHNTA (1.31x, L2 -1.3-1.9%).
func q4k8quad(a *asm) {
	const bc, cc, hc, fp, x4, x8, ab = 0, 8, 16, 24, 32, 40, 48
	const sc, mp, fs, size = 0, 1024, 1536, 2560
	l := "q4kq8"
	name := "q4kQuadVec8AVX512"
	a.raw("// func %s%s", name, sig(8))
	a.raw("TEXT ·%s(SB), 0, $%d-104", name, ab+8+64+size)
	loadArgs(a, 8)
	alignedStack(a, ab)
	a.op("SHRQ $2, CX")
	a.op("MOVQ blocks+64(FP), R10")
	a.op("IMUL3Q $1152, R10, R10")
	a.op("MOVQ R11, DX")
	a.op("SHLQ $2, DX")
	a.op("MOVQ DX, %d(SP)", x4)
	a.op("SHLQ $1, DX")
	a.op("MOVQ DX, %d(SP)", x8)
	a.op("VMOVDQU64 v8k0f<>(SB), Z24")
	a.label(l + "quad")
	a.op("MOVQ x_base+72(FP), R12")
	a.op("MOVQ blocks+64(FP), DX")
	a.op("MOVQ DX, %d(SP)", bc)
	a.op("IMUL3Q $256, DX, R13")
	a.op("ADDQ R12, R13")
	a.op("IMUL3Q $292, DX, AX")
	a.op("ADDQ R12, AX")
	a.op("LEAQ (SI)(R10*2), BX")
	a.op("MOVQ %d(SP), DX", ab)
	a.op("VPXORD Z0, Z0, Z0")
	for i := 0; i < 16; i++ {
		a.op("VMOVUPS Z0, %d(DX)", fs+64*i)
	}
	a.label(l + "block")
	for off := 1152 + 1024; off < 2*1152; off += 64 {
		quadPrefetchLine(a, off, off-1152)
	}
	a.op("MOVQ %d(SP), DX", ab)
	q4kScales8At(a, "SI", "DX", sc, mp, 128)
	q4kScales8At(a, "BX", "DX", sc+64, mp+64, 128)
	a.op("ADDQ $%d, DX", fs)
	a.op("MOVQ DX, %d(SP)", fp)
	a.op("MOVQ $2, %d(SP)", hc)
	a.label(l + "half")
	for i := 16; i < 24; i++ {
		a.op("VPXORD %s, %s, %s", z(i), z(i), z(i))
	}
	a.op("MOVQ %d(SP), DX", ab)
	if sc != 0 {
		a.op("ADDQ $%d, DX", sc)
	}
	a.op("MOVQ $4, %d(SP)", cc)
	a.op("CMPQ %d(SP), $2", hc)
	a.op("JNE %schunk", l)
	a.label(l + "chunkpf")
	q4kQuadChunk(a, true)
	q4kQuadChunkNext(a, l+"chunkpf", cc)
	a.op("JMP %schunkend", l)
	a.label(l + "chunk")
	q4kQuadChunk(a, false)
	q4kQuadChunkNext(a, l+"chunk", cc)
	a.label(l + "chunkend")
	q4kQuadFloat(a, mp, fp, ab)
	// The next pass: the block's weights again, activation rows 4 on.
	a.op("SUBQ $1024, SI")
	a.op("SUBQ $1024, BX")
	a.op("SUBQ $256, R12")
	a.op("MOVQ %d(SP), DX", x4)
	a.op("ADDQ DX, R12")
	a.op("ADDQ DX, R13")
	a.op("ADDQ DX, AX")
	a.op("ADDQ $512, %d(SP)", fp)
	a.op("DECQ %d(SP)", hc)
	a.op("JNZ %shalf", l)
	a.op("MOVQ %d(SP), DX", x8)
	a.op("SUBQ DX, R12")
	a.op("SUBQ DX, R13")
	a.op("SUBQ DX, AX")
	a.op("ADDQ $1152, SI")
	a.op("ADDQ $1152, BX")
	a.op("ADDQ $256, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $16, AX")
	a.op("DECQ %d(SP)", bc)
	a.op("JNZ %sblock", l)
	a.op("LEAQ (DI)(R8*4), BX")
	a.op("MOVQ %d(SP), DX", ab)
	for r := 0; r < 8; r++ {
		for w := 0; w < 2; w++ {
			a.op("VMOVUPS %d(DX), Z0", fs+128*r+64*w)
			a.op("VMOVUPS Z0, %d%s", 64*w, v8Outs[r])
		}
	}
	// SI is one group on from the quad's first: on to the next quad.
	a.op("ADDQ $128, DI")
	a.op("LEAQ (SI)(R10*2), SI")
	a.op("ADDQ R10, SI")
	a.op("DECQ CX")
	a.op("JNZ %squad", l)
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// q4kQuadChunk: chunk c (64 elements, sub-blocks 2c and 2c+1) of the
// block for the pass's four activation rows, its sums times the scales
// (DX: sub-block 2c's) added to the block's; if prefetch, with
// q4k8quad's prefetch of the next block.
func q4kQuadChunk(a *asm, prefetch bool) {
	for i := 0; i < 16; i++ {
		a.op("VPXORD %s, %s, %s", z(i), z(i), z(i))
	}
	for k := 0; k < 8; k++ {
		if prefetch {
			// Line k/2 of the chunk's part of the next block, two of
			// the four groups per step.
			off := 1152 + 64*(k/2)
			quadPrefetchPair(a, []string{"SI", "BX"}[k%2], off, off-1152)
		}
		for w, base := range []string{"SI", "BX"} {
			lo, hi := 25+2*w, 26+2*w
			pairLoadAt(a, base, 128+32*k, lo)
			a.op("VPSRLW $4, %s, %s", z(lo), z(hi))
			a.op("VPANDD Z24, %s, %s", z(lo), z(lo))
			a.op("VPANDD Z24, %s, %s", z(hi), z(hi))
		}
		for r := 0; r < 4; r++ {
			a.op("VPBROADCASTD %s, Z29", act(4*k, "R12", r))
			a.op("VPDPBUSD Z29, Z25, %s", z(2*r))
			a.op("VPDPBUSD Z29, Z27, %s", z(2*r+1))
			a.op("VPBROADCASTD %s, Z30", act(32+4*k, "R12", r))
			a.op("VPDPBUSD Z30, Z26, %s", z(8+2*r))
			a.op("VPDPBUSD Z30, Z28, %s", z(8+2*r+1))
		}
	}
	// Each scale vector is loaded once for its four rows (a 64-byte
	// memory operand per VPMULLD measured slower).
	for h := 0; h < 2; h++ {
		for w := 0; w < 2; w++ {
			a.op("VMOVDQU64 %d(DX), Z31", 128*h+64*w)
			for r := 0; r < 4; r++ {
				i := 2*r + w
				a.op("VPMULLD Z31, %s, %s", z(8*h+i), z(8*h+i))
				a.op("VPADDD %s, %s, %s", z(8*h+i), z(16+i), z(16+i))
			}
		}
	}
}

// q4kQuadChunkNext moves on to the next chunk, looping to label while
// chunks are left (their count at cc(SP)).
func q4kQuadChunkNext(a *asm, label string, cc int) {
	a.op("ADDQ $256, SI")
	a.op("ADDQ $256, BX")
	a.op("ADDQ $64, R12")
	a.op("ADDQ $256, DX")
	a.op("DECQ %d(SP)", cc)
	a.op("JNZ %s", label)
}

// quadPrefetchLine prefetches the line off bytes on of all four groups
// (the pairs at SI and BX) into L1 and the line farOff bytes on of the
// next quad's four groups (4*R10 on) into L2, as prefetch2.
func quadPrefetchLine(a *asm, off, farOff int) {
	quadPrefetchPair(a, "SI", off, farOff)
	quadPrefetchPair(a, "BX", off, farOff)
}

// quadPrefetchPair is quadPrefetchLine for the pair at base.
func quadPrefetchPair(a *asm, base string, off, farOff int) {
	a.op("LEAQ (%s)(R10*4), R15", base)
	prefetch2(a, off, "("+base+")", farOff)
}

// q4kQuadFloat ends the pass over a block: the mins' sums M (min pairs
// at mp from the address in ab(SP)) and F(r) += (d*yd)*float(I(r)) -
// (dmin*yd)*float(M(r)) for the pass's four activation rows and both
// pairs, as q4k8z (float sums at the pointer in fp(SP); SI and BX are
// 1024 bytes on, past the chunks).
func q4kQuadFloat(a *asm, mp, fp, ab int) {
	a.op("MOVQ %d(SP), DX", ab)
	for p := 0; p < 4; p++ {
		for w := 0; w < 2; w++ {
			a.op("VMOVDQU64 %d(DX), %s", mp+128*p+64*w, z(8+2*p+w))
		}
	}
	for r := 0; r < 4; r++ {
		for w := 0; w < 2; w++ {
			i := 2*r + w
			a.op("VPXORD %s, %s, %s", z(i), z(i), z(i))
			for p := 0; p < 4; p++ {
				a.op("VPDPWSSD.BCST %s, %s, %s", act(4*p, "AX", r), z(8+2*p+w), z(i))
			}
		}
	}
	for w, base := range []string{"SI", "BX"} {
		pairLoad16At(a, base, -1024, 25+2*w)
		a.op("VCVTPH2PS %s, %s", y(25+2*w), z(25+2*w))
		pairLoad16At(a, base, -1008, 26+2*w)
		a.op("VCVTPH2PS %s, %s", y(26+2*w), z(26+2*w))
	}
	a.op("MOVQ %d(SP), DX", fp)
	for r := 0; r < 4; r++ {
		a.op("VBROADCASTSS %s, Z31", act(0, "R13", r))
		for w := 0; w < 2; w++ {
			i, t := 2*r+w, z(29+w)
			a.op("VMOVUPS %d(DX), %s", 128*r+64*w, z(8+i))
			a.op("VMULPS Z31, %s, %s", z(25+2*w), t)
			a.op("VCVTDQ2PS %s, %s", z(16+i), z(16+i))
			a.op("VFMADD231PS %s, %s, %s", z(16+i), t, z(8+i))
			a.op("VMULPS Z31, %s, %s", z(26+2*w), t)
			a.op("VCVTDQ2PS %s, %s", z(i), z(i))
			a.op("VFNMADD231PS %s, %s, %s", z(i), t, z(8+i))
			a.op("VMOVUPS %s, %d(DX)", z(8+i), 128*r+64*w)
		}
	}
}

// Q4_0 on 32 rows (four groups: the pairs at SI and at BX = SI + 2*R10),
// eight activation rows in two passes of four over all the blocks (q8a
// activations: quants at x, d at x+64nb, -8*sum at x+68nb), for the same
// reason as q4k8quad: a broadcast activation feeds both pairs (12 loads per
// 16 VPDPBUSD instead of 18). Integer sums and float steps per row are
// q8z8's, so the bits are vec1's. Registers: Z0+i the block's integer sum
// and Z8+i the float sum of activation row a of the pass and pair w (i =
// 2a+w), Z16+i (Z30 for i = 7: q40Hi) the high nibbles' integer sums
// until the float step, Z23 0x0f bytes, Z24/Z25 and Z26/Z27 the unpacked
// weights of pairs 0 and 1, Z28/Z29 the broadcast activations, Z30/Z31
// the weights' d.
//
// Pass 0 prefetches the block eight on (1152 bytes) of all four groups
// (pass 1 reads them again from L2). Against the kernel without it,
// alternated in one run (one thread, 256 MiB, thread CPU time, Zen 5, 2
// vCPUs under load 3-6): from memory 1.37-1.38x, on an L2 tile
// 0.984-1.011x. Variants measured in earlier runs: two and four blocks on
// (1.17-1.26x, 1.17-1.31x), sixteen (1.25-1.33x, L2 to -3%),
// PREFETCHNTA four and eight on (1.21-1.25x, 1.31x).
func q40quad(a *asm) {
	l := "q40q8"
	name := "q4_0QuadVec8AVX512"
	a.raw("// func %s%s", name, sig(8))
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-104", name)
	loadArgs(a, 8)
	a.op("SHRQ $2, CX")
	a.op("MOVQ blocks+64(FP), R10")
	a.op("IMUL3Q $144, R10, R10")
	a.op("VMOVDQU64 v8k0f<>(SB), Z23")
	a.label(l + "quad")
	a.op("LEAQ (SI)(R10*2), BX")
	a.op("MOVQ x_base+72(FP), R12")
	for h := 0; h < 2; h++ {
		if h == 1 {
			// Rows 4-7: the same weights again (SI and BX are a group on).
			a.op("SUBQ R10, SI")
			a.op("SUBQ R10, BX")
			a.op("MOVQ x_base+72(FP), R12")
			a.op("LEAQ (R12)(R11*4), R12")
		}
		a.op("MOVQ blocks+64(FP), DX")
		a.op("IMUL3Q $64, DX, R13")
		a.op("ADDQ R12, R13")
		a.op("IMUL3Q $68, DX, AX")
		a.op("ADDQ R12, AX")
		for i := 8; i < 16; i++ {
			a.op("VPXORD %s, %s, %s", z(i), z(i), z(i))
		}
		a.label(fmt.Sprintf("%sblock%d", l, h))
		if h == 0 {
			// The next quad's prefetch (quadPrefetchLine) measured
			// 0.83-0.88x of this fixed distance from memory, and 0.95x
			// on an L2 tile (2048 columns: the next quad is 36 KiB
			// on); a block of Q4_0 is short, so the LEAs count.
			far := (18<<10 + 143) / 144 * 144
			for off := 8 * 144; off < 9*144; off += 64 {
				for _, base := range []string{"(SI)", "(BX)"} {
					for _, g := range []string{"", "(R10*1)"} {
						a.op("PREFETCHT0 %d%s%s", off, base, g)
						a.op("PREFETCHT1 %d%s%s", off+far, base, g)
					}
				}
			}
		}
		q40QuadBlock(a)
		a.op("DECQ DX")
		a.op("JNZ %sblock%d", l, h)
		// Store rows 4h..4h+3.
		if h == 0 {
			a.op("MOVQ DI, DX")
		} else {
			a.op("LEAQ (DI)(R8*4), DX")
		}
		outs := []string{"(DX)", "(DX)(R8*1)", "(DX)(R8*2)", "(DX)(R9*1)"}
		for r := 0; r < 4; r++ {
			for w := 0; w < 2; w++ {
				a.op("VMOVUPS %s, %d%s", z(8+2*r+w), 64*w, outs[r])
			}
		}
	}
	// SI is one group on from the quad's first: on to the next quad.
	a.op("ADDQ $128, DI")
	a.op("LEAQ (SI)(R10*2), SI")
	a.op("ADDQ R10, SI")
	a.op("DECQ CX")
	a.op("JNZ %squad", l)
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// q40QuadBlock: one block of the pass's four activation rows and both
// pairs, F += (dw*dx)*float(I) as q8z8; SI, BX, R12, R13 and AX move on.
// The high nibbles' products go to sums of their own (q40Hi), added to
// the low ones' before the float step (exact: integers), so sixteen
// VPDPBUSD chains are in flight, not eight: BenchmarkPackedRows/Q4_0
// vec8 327-328 against 278-322 GMAC/s (three alternated runs, Zen 5) and
// Q4_0 pp512 336-338 against 330-335 tok/s. VPDPBUSD shares its two
// pipes with the float step's multiply and FMA (two per sum, sixteen per
// 64 VPDPBUSD), which bounds this kernel near 40 cycles a block; it
// takes about 45.
func q40QuadBlock(a *asm) {
	for r := 0; r < 4; r++ {
		a.op("VPBROADCASTD %s, %s", act(0, "AX", r), z(2*r))
		a.op("VMOVDQA64 %s, %s", z(2*r), z(2*r+1))
	}
	for i := 0; i < 8; i++ {
		a.op("VPXORD %s, %s, %s", z(q40Hi(i)), z(q40Hi(i)), z(q40Hi(i)))
	}
	for k := 0; k < 4; k++ {
		for w, base := range []string{"SI", "BX"} {
			lo, hi := 24+2*w, 25+2*w
			pairLoadAt(a, base, 32*k, lo)
			a.op("VPSRLW $4, %s, %s", z(lo), z(hi))
			a.op("VPANDD Z23, %s, %s", z(lo), z(lo))
			a.op("VPANDD Z23, %s, %s", z(hi), z(hi))
		}
		for r := 0; r < 4; r++ {
			a.op("VPBROADCASTD %s, Z28", act(4*k, "R12", r))
			a.op("VPDPBUSD Z28, Z24, %s", z(2*r))
			a.op("VPDPBUSD Z28, Z26, %s", z(2*r+1))
			a.op("VPBROADCASTD %s, Z29", act(16+4*k, "R12", r))
			a.op("VPDPBUSD Z29, Z25, %s", z(q40Hi(2*r)))
			a.op("VPDPBUSD Z29, Z27, %s", z(q40Hi(2*r+1)))
		}
	}
	for i := 0; i < 8; i++ {
		a.op("VPADDD %s, %s, %s", z(q40Hi(i)), z(i), z(i))
	}
	pairLoad16At(a, "SI", 128, 30)
	a.op("VCVTPH2PS Y30, Z30")
	pairLoad16At(a, "BX", 128, 31)
	a.op("VCVTPH2PS Y31, Z31")
	for r := 0; r < 4; r++ {
		for w := 0; w < 2; w++ {
			i, t := 2*r+w, z(28+w)
			a.op("VCVTDQ2PS %s, %s", z(i), z(i))
			a.op("VMULPS.BCST %s, %s, %s", act(0, "R13", r), z(30+w), t)
			a.op("VFMADD231PS %s, %s, %s", z(i), t, z(8+i))
		}
	}
	a.op("ADDQ $144, SI")
	a.op("ADDQ $144, BX")
	a.op("ADDQ $32, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $4, AX")
}

// q40Hi is the register of the high nibbles' integer sums for sum i.
func q40Hi(i int) int {
	if i < 7 {
		return 16 + i
	}
	return 30
}
