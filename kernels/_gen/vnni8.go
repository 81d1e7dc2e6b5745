package main

import "fmt"

// The AVX-512 VNNI eight-activation-row packed kernels
// (packk_vnni8_amd64.s), for prefill and batched decode. Like the
// four-row kernels of avx512.go they read the AVX2 packed layout two
// groups (16 weight rows) at a time, a ZMM register holding the same 32
// bytes of group g (low half) and g+1 (high half, R10 = the group stride
// further on); each weight load now feeds eight activation rows, so the
// loads, nibble unpacking and scale handling per VPDPBUSD are about half
// the four-row kernels'. The integer sums of a block are exact and the
// float steps per row are those of the AVX2 kernels (same operations,
// same order), so every result has the bits of vec1 and vec4.
//
// Common registers: SI weights (group g's block), R10 the group stride,
// DI out, CX pairs of groups left, DX blocks left, R12 activation quants,
// R13 their d, AX their per-block sums, R11/R14 the activation row
// stride (x1, x3), R8/R9 the output row stride in bytes (x1, x3), BX
// activation row 4 of whichever of R12/R13/AX is in use (act8).

// v8Consts are the constants of packk_vnni8_amd64.s (its own copies:
// file-local symbols of packk_avx512_amd64.s are not visible here).
func v8Consts(a *asm) {
	a.data64("v8k0f", splat(0x0f))
	a.data64("v8k3f", splat(0x3f))
	a.data64("v8kc0", splat(0xc0))
	a.data64("v8k80", splat(0x80))
	a.data64("v8k30", splat(0x30))
	a.data64("v8k10", splat(0x10))
	// v8kdJ: the scale of sub-block J (of 4) of each row as an int32
	// (zkdJ); v8kmpQ: the min pairs (m[2Q], m[2Q+1]) as int16 (zkmpQ).
	for j := 0; j < 4; j++ {
		a.data64(fmt.Sprintf("v8kd%d", j), lanes(func(i int) byte {
			if i%4 != 0 {
				return 0x80
			}
			return byte(i + j)
		}))
	}
	for q := 0; q < 2; q++ {
		a.data64(fmt.Sprintf("v8kmp%d", q), lanes(func(i int) byte {
			if i%2 == 1 {
				return 0x80
			}
			m := i / 2
			return byte(4*(m/2) + 2*q + m%2)
		}))
	}
}

func vnni8File() *asm {
	k := &asm{}
	k.b.WriteString(header)
	v8Consts(k)
	q4k8z(k)
	q4k8quad(k)
	q5k8z(k)
	q6k8z(k)
	q8z8(k, true)
	q40quad(k)
	q8z8(k, false)
	amxConsts(k)
	q4kAMX(k)
	amx40Consts(k)
	q40AMX(k)
	q80AMX(k)
	amx6Consts(k)
	q6kAMX(k)
	amxMaxRowsFunc(k)
	return k
}

// v8Prologue starts an eight-row kernel: arguments, R10 = the group
// stride (gb bytes per block), and the pair loop (label <l>pair) that
// sets R12, R13 (x + dOff*blocks) and AX (x + auxOff*blocks). frame is
// the stack frame: kernels with more than NOSPLIT allows get a stack
// check.
func v8Prologue(a *asm, name, l string, gb, frame, dOff, auxOff int) {
	flags := "NOSPLIT"
	if frame > 512 {
		flags = "0"
	}
	a.raw("// func %s%s", name, sig(8))
	a.raw("TEXT ·%s(SB), %s, $%d-104", name, flags, frame)
	loadArgs(a, 8)
	a.op("SHRQ $1, CX")
	a.op("MOVQ blocks+64(FP), R10")
	a.op("IMUL3Q $%d, R10, R10", gb)
	a.label(l + "pair")
	a.op("MOVQ x_base+72(FP), R12")
	a.op("MOVQ blocks+64(FP), DX")
	a.op("IMUL3Q $%d, DX, R13", dOff)
	a.op("ADDQ R12, R13")
	a.op("IMUL3Q $%d, DX, AX", auxOff)
	a.op("ADDQ R12, AX")
}

// v8Outs are the addresses of the eight output rows (rows 4-7 from BX =
// DI + 4*ostride).
var v8Outs = []string{"(DI)", "(DI)(R8*1)", "(DI)(R8*2)", "(DI)(R9*1)", "(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(BX)(R9*1)"}

// v8Epilogue stores the eight rows' float sums (registers Z(f+r), or the
// stack at fOff if f < 0) and closes the pair loop.
func v8Epilogue(a *asm, l string, f, fOff int) {
	v8EpilogueAt(a, l, f, fOff, "SP")
}

// v8EpilogueAt is v8Epilogue with the float sums at fOff from register
// base.
func v8EpilogueAt(a *asm, l string, f, fOff int, base string) {
	a.op("LEAQ (DI)(R8*4), BX")
	for r := 0; r < 8; r++ {
		src := z(f + r)
		if f < 0 {
			src = "Z0"
			a.op("VMOVUPS %d(%s), Z0", fOff+64*r, base)
		}
		a.op("VMOVUPS %s, %s", src, v8Outs[r])
	}
	pairNext(a, l+"pair")
}

// v8ZeroStack zeroes the eight float sums on the stack at fOff.
func v8ZeroStack(a *asm, fOff int) {
	v8ZeroAt(a, fOff, "SP")
}

// v8ZeroAt zeroes the eight float sums at fOff from register base.
func v8ZeroAt(a *asm, fOff int, base string) {
	a.op("VPXORD Z0, Z0, Z0")
	for r := 0; r < 8; r++ {
		a.op("VMOVUPS Z0, %d(%s)", fOff+64*r, base)
	}
}

// alignedStack sets DX, and the stack slot at ab, to the first 64-byte
// aligned address past the slot (Go aligns SP to 8 bytes only, and a
// 64-byte access that spans two cache lines measured costly); the frame
// needs ab+8+64 bytes more than the aligned area.
func alignedStack(a *asm, ab int) {
	a.op("LEAQ %d(SP), DX", ab+8+63)
	a.op("ANDQ $~63, DX")
	a.op("MOVQ DX, %d(SP)", ab)
}

// Q4_0 and Q8_0 on 16 rows, eight activation rows (q8a activations:
// quants at x, d at x+64nb, -8*sum at x+68nb). Each row's block sum
// starts from its offset term (-8*sum for Q4_0, -128*sum for Q8_0, whose
// weights enter VPDPBUSD as w+128) and takes all the block's VPDPBUSD;
// F += (dw*dx)*float(I) as q8z (dx by embedded broadcast). Registers: Z0+r the integer sums of row
// r, Z8+r its float sums, Z24/Z25 weights, Z26 0x0f or 0x80 bytes, Z27
// the weights' d, Z28 scratch.
func q8z8(a *asm, four bool) {
	typ, gb := "q8_0", 272
	if four {
		typ, gb = "q4_0", 144
	}
	name := typ + "PackVec8AVX512"
	l := typ + "z8"
	v8Prologue(a, name, l, gb, 0, 64, 68)
	if four {
		a.op("VMOVDQU64 v8k0f<>(SB), Z26")
	} else {
		a.op("VMOVDQU64 v8k80<>(SB), Z26")
	}
	for r := 0; r < 8; r++ {
		a.op("VPXORD %s, %s, %s", z(8+r), z(8+r), z(8+r))
	}
	a.label(l + "block")
	a.op("LEAQ (AX)(R11*4), BX")
	for r := 0; r < 8; r++ {
		a.op("VPBROADCASTD %s, %s", act8(0, "AX", "BX", r), z(r))
		if !four {
			a.op("VPSLLD $4, %s, %s", z(r), z(r))
		}
	}
	a.op("LEAQ (R12)(R11*4), BX")
	if four {
		for k := 0; k < 4; k++ {
			pairLoad(a, 32*k, 24)
			a.op("VPSRLW $4, Z24, Z25")
			a.op("VPANDD Z26, Z24, Z24")
			a.op("VPANDD Z26, Z25, Z25")
			for r := 0; r < 8; r++ {
				a.op("VPDPBUSD.BCST %s, Z24, %s", act8(4*k, "R12", "BX", r), z(r))
			}
			for r := 0; r < 8; r++ {
				a.op("VPDPBUSD.BCST %s, Z25, %s", act8(16+4*k, "R12", "BX", r), z(r))
			}
		}
	} else {
		// Steps 0-4 prefetch the block eight on (272 bytes: five
		// lines) of both groups. Against no prefetch, alternated in
		// one run (one thread, 256 MiB, thread CPU time, Zen 5, 2
		// vCPUs under load 1.5-3): from memory 1.54-1.71x (one, two,
		// four, twelve, sixteen and 24 on: 1.17x, 1.30x, 1.51-1.53x,
		// 1.67-1.70x, 1.59-1.60x, 1.46x), on an L2 tile 0.98-1.02x.
		for k := 0; k < 8; k++ {
			if k < 5 {
				if k == 0 {
					a.op("LEAQ (SI)(R10*2), R15")
				}
				prefetch2(a, 8*gb+64*k, "(SI)", 64*k)
			}
			w := 24 + k%2
			pairLoad(a, 32*k, w)
			a.op("VPXORD Z26, %s, %s", z(w), z(w))
			for r := 0; r < 8; r++ {
				a.op("VPDPBUSD.BCST %s, %s, %s", act8(4*k, "R12", "BX", r), z(w), z(r))
			}
		}
	}
	pairLoad16x(a, gb-16, 27)
	a.op("VCVTPH2PS Y27, Z27")
	a.op("LEAQ (R13)(R11*4), BX")
	for r := 0; r < 8; r++ {
		t := z(28 + r%2)
		a.op("VCVTDQ2PS %s, %s", z(r), z(r))
		a.op("VMULPS.BCST %s, Z27, %s", act8(0, "R13", "BX", r), t)
		a.op("VFMADD231PS %s, %s, %s", z(r), t, z(8+r))
	}
	a.op("ADDQ $%d, SI", gb)
	a.op("ADDQ $32, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $4, AX")
	a.op("DECQ DX")
	a.op("JNZ %sblock", l)
	v8Epilogue(a, l, 8, 0)
}

// Q4_K on 16 rows, eight activation rows. Registers: Z0+r and Z8+r the
// sums of the low and high nibbles (sub-blocks 2c and 2c+1) of chunk c
// for row r, Z16+r the block's integer sums, Z24 0x0f bytes, Z25/Z26 the
// unpacked weights, Z27-Z31 scratch. Stack: 0-511 the int32 scales of
// the 8 sub-blocks, 512-767 the four min pair vectors, 768-1279 the
// float sums of the 8 rows.
func q4k8z(a *asm) { q45k8z(a, false) }

// q5k8z is Q5_K on 16 rows, eight activation rows, in q4k8z's manner.
// The pair's fifth bits (packlayout.go) are copied to the stack at the
// block's start (at qh: load k of both groups at qh+64k) and shifted
// down two bits after each chunk, so chunk c's step k finds its bits at
// bits 0 (low nibbles' sub-block) and 1 (high) of the copy; they are
// moved to bit 4 and ORed into the unpacked quants (Z29: 0x10 bytes, Z30
// scratch; Z31 the copy's load). It prefetches the next block, a line a
// step (its last 384 bytes at the block's start): from memory
// (BenchmarkPackedStream8/rows=8, one thread, Zen 5, under load) 74-82
// -> 122-135 G multiply-adds a second, 0.37 -> 0.58-0.61 of its L2 rate,
// which stayed level. A far PREFETCHT1 of the next pair as well read
// 131-138 from memory but 183-202 on L2: not kept.
func q5k8z(a *asm) { q45k8z(a, true) }

func q45k8z(a *asm, five bool) {
	// bc: blocks left; cc: chunks left.
	const sc, mp, fs, bc, cc, qh = 0, 512, 768, 1280, 1288, 1296
	typ, gb, frame := "q4k", 1152, 1296
	if five {
		typ, gb, frame = "q5k", 1408, qh+512
	}
	l := typ + "z8"
	v8Prologue(a, typ+"PackVec8AVX512", l, gb, frame, 256, 292)
	a.op("VMOVDQU64 v8k0f<>(SB), Z24")
	v8ZeroStack(a, fs)
	a.op("MOVQ DX, %d(SP)", bc)
	a.label(l + "block")
	q4kScales8(a, sc, mp)
	if five {
		for k := 0; k < 8; k++ {
			pairLoad(a, 1152+32*k, 31)
			a.op("VMOVDQU64 Z31, %d(SP)", qh+64*k)
		}
		// The next block's last 384 bytes (its first 1024: the chunks').
		for off := gb + 1024; off < 2*gb; off += 64 {
			a.op("PREFETCHT0 %d(SI)", off)
			a.op("PREFETCHT0 %d(SI)(R10*1)", off)
		}
	}
	a.op("LEAQ (R12)(R11*4), BX")
	a.op("LEAQ %d(SP), DX", sc)
	a.op("MOVQ $4, %d(SP)", cc)
	for r := 16; r < 24; r++ {
		a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
	}
	// The four chunks (64 elements, sub-blocks 2c and 2c+1) in a loop:
	// SI, R12 and BX move on by a chunk, DX by two scale vectors.
	a.label(l + "chunk")
	for r := 0; r < 16; r++ {
		a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
	}
	if five {
		a.op("VMOVDQU64 v8k10<>(SB), Z29")
	}
	for k := 0; k < 8; k++ {
		pairLoad(a, 128+32*k, 25)
		a.op("VPSRLW $4, Z25, Z26")
		a.op("VPANDD Z24, Z25, Z25")
		a.op("VPANDD Z24, Z26, Z26")
		if five {
			// Line k/2 of the chunk's quarter of the next block, the
			// groups in turn.
			if k%2 == 0 {
				a.op("PREFETCHT0 %d(SI)", gb+64*(k/2))
			} else {
				a.op("PREFETCHT0 %d(SI)(R10*1)", gb+64*(k/2))
			}
			a.op("VMOVDQU64 %d(SP), Z31", qh+64*k)
			// 0xF8: dst | (src2 & src3).
			a.op("VPTERNLOGD $0xF8, Z29, %s, Z25", bitTo4(a, 0, "Z31", "Z30"))
			a.op("VPTERNLOGD $0xF8, Z29, %s, Z26", bitTo4(a, 1, "Z31", "Z30"))
		}
		for r := 0; r < 8; r++ {
			a.op("VPDPBUSD.BCST %s, Z25, %s", act8(4*k, "R12", "BX", r), z(r))
		}
		for r := 0; r < 8; r++ {
			a.op("VPDPBUSD.BCST %s, Z26, %s", act8(32+4*k, "R12", "BX", r), z(8+r))
		}
	}
	// The two scale vectors loaded once for the eight rows (a 64-byte
	// memory operand per VPMULLD measured slower).
	a.op("VMOVDQU64 (DX), Z27")
	a.op("VMOVDQU64 64(DX), Z28")
	for r := 0; r < 8; r++ {
		a.op("VPMULLD Z27, %s, %s", z(r), z(r))
		a.op("VPADDD %s, %s, %s", z(r), z(16+r), z(16+r))
		a.op("VPMULLD Z28, %s, %s", z(8+r), z(8+r))
		a.op("VPADDD %s, %s, %s", z(8+r), z(16+r), z(16+r))
	}
	if five {
		for k := 0; k < 8; k++ {
			a.op("VMOVDQU64 %d(SP), Z31", qh+64*k)
			a.op("VPSRLW $2, Z31, Z31")
			a.op("VMOVDQU64 Z31, %d(SP)", qh+64*k)
		}
	}
	a.op("ADDQ $256, SI")
	a.op("ADDQ $64, R12")
	a.op("ADDQ $64, BX")
	a.op("ADDQ $128, DX")
	a.op("DECQ %d(SP)", cc)
	a.op("JNZ %schunk", l)
	// The mins: M(r) = sum over pairs p of (min pair p) . (sums of 32).
	for p := 0; p < 4; p++ {
		a.op("VMOVDQU64 %d(SP), %s", mp+64*p, z(25+p))
	}
	a.op("LEAQ (AX)(R11*4), BX")
	for r := 0; r < 8; r++ {
		a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
		for p := 0; p < 4; p++ {
			a.op("VPDPWSSD.BCST %s, %s, %s", act8(4*p, "AX", "BX", r), z(25+p), z(r))
		}
	}
	// F(r) += (d*yd)*float(I(r)) - (dmin*yd)*float(M(r)), as q4kFloat512.
	pairLoad16x(a, -1024, 29) // SI is 1024 bytes on, past the chunks
	a.op("VCVTPH2PS Y29, Z29")
	pairLoad16x(a, -1008, 30)
	a.op("VCVTPH2PS Y30, Z30")
	a.op("LEAQ (R13)(R11*4), BX")
	for r := 0; r < 8; r++ {
		t := z(27 + r%2)
		a.op("VBROADCASTSS %s, Z31", act8(0, "R13", "BX", r))
		a.op("VMOVUPS %d(SP), %s", fs+64*r, z(8+r))
		a.op("VMULPS Z31, Z29, %s", t)
		a.op("VCVTDQ2PS %s, %s", z(16+r), z(16+r))
		a.op("VFMADD231PS %s, %s, %s", z(16+r), t, z(8+r))
		a.op("VMULPS Z31, Z30, %s", t)
		a.op("VCVTDQ2PS %s, %s", z(r), z(r))
		a.op("VFNMADD231PS %s, %s, %s", z(r), t, z(8+r))
		a.op("VMOVUPS %s, %d(SP)", z(8+r), fs+64*r)
	}
	a.op("ADDQ $%d, SI", gb-1024)
	a.op("ADDQ $4, R13")
	a.op("ADDQ $16, AX")
	a.op("DECQ %d(SP)", bc)
	a.op("JNZ %sblock", l)
	v8Epilogue(a, l, -1, fs)
}

// q4kScales8 decodes the block's scales (int32, stack at sc) and min
// pairs (int16 pairs, stack at mp) of 16 rows, as q4kScales512.
func q4kScales8(a *asm, sc, mp int) {
	q4kScales8At(a, "SI", "SP", sc, mp, 64)
}

// q4kScales8At is q4kScales8 for the pair of groups at base, scale j
// stored at sc+step*j and min pair p at mp+step*p from register dst.
func q4kScales8At(a *asm, base, dst string, sc, mp, step int) {
	pairLoadAt(a, base, 32, 27)
	pairLoadAt(a, base, 64, 28)
	pairLoadAt(a, base, 96, 29)
	a.op("VPANDD v8k3f<>(SB), Z27, Z30")
	a.op("VPANDD v8kc0<>(SB), Z27, Z27")
	a.op("VPSRLW $2, Z27, Z27")
	a.op("VPANDD Z24, Z29, Z31")
	a.op("VPORD Z27, Z31, Z31")
	for j := 0; j < 8; j++ {
		src := "Z30"
		if j >= 4 {
			src = "Z31"
		}
		a.op("VPSHUFB v8kd%d<>(SB), %s, %s", j%4, src, z(j))
		a.op("VMOVDQU64 %s, %d(%s)", z(j), sc+step*j, dst)
	}
	a.op("VPANDD v8k3f<>(SB), Z28, Z30")
	a.op("VPSRLW $4, Z29, Z29")
	a.op("VPANDD Z24, Z29, Z29")
	a.op("VPANDD v8kc0<>(SB), Z28, Z28")
	a.op("VPSRLW $2, Z28, Z28")
	a.op("VPORD Z28, Z29, Z29")
	for p := 0; p < 4; p++ {
		src := "Z30"
		if p >= 2 {
			src = "Z29"
		}
		a.op("VPSHUFB v8kmp%d<>(SB), %s, %s", p%2, src, z(8+p))
		a.op("VMOVDQU64 %s, %d(%s)", z(8+p), mp+step*p, dst)
	}
}

// Q6_K on 16 rows, eight activation rows, in q6kHalf4's passes (types 0
// and 2 from the first 32 bytes of ql, then 1 and 3 from the second).
// The loop over the two sub-block halves h (elements 16h..16h+15 of each
// 32) is rolled (a copy per h measured slower: the unrolled loop outgrew
// the decoded-op cache); both 128-element halves n of the block run
// inside it. Registers: Z0+r and Z8+r the sums of the two types of a
// pass for row r, Z16+r the block's integer sums, Z24/Z25 the ql/qh
// loads, Z26/Z27 unpacked quants, Z28 0x0f, Z29 0x30, Z30/Z31 scratch.
// Stack: 0-1023 the int32 scales (sub-block (n, t, h) at
// 512h+256n+64t), 1024-1535 the float sums of the 8 rows, then the
// counts of blocks and of halves h left.
//
// A four-group version in the manner of q4k8quad (two passes of four
// activation rows, each broadcast feeding both pairs, the next block
// prefetched in pass 0) gave the same bits but no speed
// (BenchmarkPackedStream8/rows=8, one thread, Zen 5, seven alternated
// runs, medians: L2 tile 189 against this kernel's 184 GMAC/s, from
// memory 114 against 126), so it was not kept. Q6_K loads low and high
// bits separately, so the broadcasts it shares leave it 16 loads per 16
// VPDPBUSD against 20 here (Q4_K's quad: 12 against 18), and a 16-value
// sub-block costs a VPMULLD per row and type every four steps, which
// runs on the VPDPBUSD ports (Zen 5: both 2 a cycle alone; 8 VPDPBUSD
// and 2 VPMULLD took 5.1 cycles, with 2 VPADDD instead 4.4).
func q6k8z(a *asm) {
	const bc, hc, ab = 0, 8, 16
	const sc, fs, size = 0, 1024, 1536
	l := "q6kz8"
	v8Prologue(a, "q6kPackVec8AVX512", l, 1680, ab+8+64+size, 256, 260)
	a.op("VMOVDQU64 v8k0f<>(SB), Z28")
	a.op("VMOVDQU64 v8k30<>(SB), Z29")
	a.op("MOVQ DX, %d(SP)", bc)
	alignedStack(a, ab)
	v8ZeroAt(a, fs, "DX")
	a.label(l + "block")
	a.op("MOVQ %d(SP), DX", ab)
	for p := 0; p < 8; p++ {
		n, t := p/4, p%4
		pairLoad16x(a, 1536+16*p, 30)
		a.op("VPMOVSXBW Y30, Z30")
		a.op("VPSLLD $16, Z30, Z31")
		a.op("VPSRAD $16, Z31, Z31")
		a.op("VMOVDQU64 Z31, %d(DX)", sc+256*n+64*t)
		a.op("VPSRAD $16, Z30, Z30")
		a.op("VMOVDQU64 Z30, %d(DX)", sc+512+256*n+64*t)
	}
	a.op("LEAQ (R12)(R11*4), BX")
	a.op("MOVQ $2, %d(SP)", hc)
	for r := 16; r < 24; r++ {
		a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
	}
	a.label(l + "half")
	a.op("LEAQ (SI)(R10*2), R15") // the next pair, for q6kPrefetch
	for n := 0; n < 2; n++ {
		for pass := 0; pass < 2; pass++ {
			q6kPass8(a, n, pass)
		}
	}
	a.op("ADDQ $128, SI")
	a.op("ADDQ $16, R12")
	a.op("ADDQ $16, BX")
	a.op("ADDQ $512, DX")
	a.op("DECQ %d(SP)", hc)
	a.op("JNZ %shalf", l)
	// SI and R12 are now 256 and 32 bytes on.
	// I -= 32 * sum over pairs p of (scale pair) . (activation sums of 16).
	for p := 0; p < 8; p++ {
		pairLoad16x(a, 1536-256+16*p, 8+p)
		a.op("VPMOVSXBW %s, %s", y(8+p), z(8+p))
	}
	a.op("LEAQ (AX)(R11*4), BX")
	for r := 0; r < 8; r++ {
		a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
		for p := 0; p < 8; p++ {
			a.op("VPDPWSSD.BCST %s, %s, %s", act8(4*p, "AX", "BX", r), z(8+p), z(r))
		}
		a.op("VPSLLD $5, %s, %s", z(r), z(r))
		a.op("VPSUBD %s, %s, %s", z(r), z(16+r), z(16+r))
	}
	pairLoad16x(a, 1664-256, 24)
	a.op("VCVTPH2PS Y24, Z24")
	a.op("LEAQ (R13)(R11*4), BX")
	a.op("MOVQ %d(SP), DX", ab)
	for r := 0; r < 8; r++ {
		t := z(25 + r%2)
		a.op("VCVTDQ2PS %s, %s", z(16+r), z(16+r))
		a.op("VMULPS.BCST %s, Z24, %s", act8(0, "R13", "BX", r), t)
		a.op("VMOVUPS %d(DX), %s", fs+64*r, z(8+r))
		a.op("VFMADD231PS %s, %s, %s", z(16+r), t, z(8+r))
		a.op("VMOVUPS %s, %d(DX)", z(8+r), fs+64*r)
	}
	a.op("ADDQ $%d, SI", 1680-256)
	a.op("ADDQ $%d, R12", 256-32)
	a.op("ADDQ $4, R13")
	a.op("ADDQ $32, AX")
	a.op("DECQ %d(SP)", bc)
	a.op("JNZ %sblock", l)
	a.op("MOVQ %d(SP), DX", ab)
	v8EpilogueAt(a, l, -1, fs, "DX")
}

// q6kPrefetch: the prefetches of step k (0-3) of pass pass of half n of
// the Q6_K block in half h (SI 128h on): every cache line of the next
// block (1680 bytes on) of both groups, two or so per step, half 0 the
// lines at 256i and 256i+64 of it, half 1 (SI 128 on) the others. With
// weights streamed from memory (a batch of decode rows reads each weight
// once per step) the kernel ran at about a third of its L2 rate without
// a prefetch, 1.5-1.65x faster with all the next block's lines in a
// burst at the block's start (the hardware prefetchers apparently miss
// its order: a block's scales, at its end, are read first; every other
// line gained nothing), and these interleaved ones gained 1.12-1.14x more
// from memory and 1.007-1.028x on an L2 tile (prefill), alternated with
// the burst in one run (one thread, 256 MiB, thread CPU time, Zen 5, 2
// vCPUs, load 1-2.6); the burst two, three and four blocks on measured
// 0.91x, 0.82x and 0.80x of it. The last block's prefetch reaches into
// the next pair's first group, read next.
func q6kPrefetch(a *asm, n, pass, k int) {
	const lines = 28 // two sets of 14, at 1680 + 256(j/2) + 64(j%2)
	st := (2*n+pass)*4 + k
	for j := st * lines / 16; j < (st+1)*lines/16; j++ {
		off := 1680 + 256*(j/4) + 64*(j/2%2)
		if j%2 == 0 {
			a.op("PREFETCHT0 %d(SI)", off)
			a.op("PREFETCHT1 %d(R15)", off-1680)
		} else {
			a.op("PREFETCHT0 %d(SI)(R10*1)", off)
			a.op("PREFETCHT1 %d(R15)(R10*1)", off-1680)
		}
	}
}

// q6kPass8: pass pass of half n of a Q6_K block for eight activation
// rows, on the sub-blocks of the half h in progress (SI, R12 and BX =
// R12 + 4*xstride moved on by h; DX the scales of h), as q6kHalf4.
func q6kPass8(a *asm, n, pass int) {
	for r := 0; r < 16; r++ {
		a.op("VPXORD %s, %s, %s", z(r), z(r), z(r))
	}
	lo, hi := pass, pass+2 // the types from the low and high nibbles
	for k := 0; k < 4; k++ {
		q6kPrefetch(a, n, pass, k)
		pairLoad(a, 512*n+256*pass+32*k, 24)
		pairLoad(a, 1024+256*n+32*k, 25)
		// 0xF8: dst | (src2 & src3).
		a.op("VPANDD Z28, Z24, Z26")
		a.op("VPSLLW $%d, Z25, Z30", 4-2*pass)
		a.op("VPTERNLOGD $0xF8, Z29, Z30, Z26")
		for r := 0; r < 8; r++ {
			a.op("VPDPBUSD.BCST %s, Z26, %s", act8(128*n+32*lo+4*k, "R12", "BX", r), z(r))
		}
		a.op("VPSRLW $4, Z24, Z27")
		a.op("VPANDD Z28, Z27, Z27")
		qh := "Z25"
		if pass == 1 {
			a.op("VPSRLW $2, Z25, Z31")
			qh = "Z31"
		}
		a.op("VPTERNLOGD $0xF8, Z29, %s, Z27", qh)
		for r := 0; r < 8; r++ {
			a.op("VPDPBUSD.BCST %s, Z27, %s", act8(128*n+32*hi+4*k, "R12", "BX", r), z(8+r))
		}
	}
	// The two scale vectors loaded once for the eight rows (a 64-byte
	// memory operand per VPMULLD measured 1.4x slower).
	a.op("VMOVDQU64 %d(DX), Z30", 256*n+64*lo)
	a.op("VMOVDQU64 %d(DX), Z31", 256*n+64*hi)
	for r := 0; r < 8; r++ {
		a.op("VPMULLD Z30, %s, %s", z(r), z(r))
		a.op("VPADDD %s, %s, %s", z(r), z(16+r), z(16+r))
		a.op("VPMULLD Z31, %s, %s", z(8+r), z(8+r))
		a.op("VPADDD %s, %s, %s", z(8+r), z(16+r), z(16+r))
	}
}

// pairLoad16x is pairLoad16 in EVEX forms (any of the 32 registers).
func pairLoad16x(a *asm, off int, r int) {
	pairLoad16At(a, "SI", off, r)
}

// pairLoad16At is pairLoad16x for the pair of groups at base.
func pairLoad16At(a *asm, base string, off int, r int) {
	a.op("VMOVDQU64 %d(%s), X%d", off, base, r)
	a.op("VINSERTI32X4 $1, %d(%s)(R10*1), Y%d, Y%d", off, base, r, r)
}

// prefetch2 prefetches the line at off bytes past base (SI for the
// pair's first group) and the pair's second group (R10 on) into L1 (T0),
// and the line farOff bytes past R15 (set by the caller to SI + 2*R10,
// where the next pair's groups start) and its second group into L2 (T1):
// the same place in the weights the kernel reads one pair later. The near
// prefetch alone, a block or so ahead, left the batched kernels reading
// weights from memory at a half to two thirds of their rate on an L2
// tile: the L1 misses it keeps in flight do not cover the memory's
// latency at the rate eight activation rows consume a group.
// BenchmarkPackedStream8/rows=8 (one thread, 256 MiB, 2048 columns; Zen
// 5, 2 vCPUs; alternated, two or three runs), from memory, multiply-adds
// a second before and with a far prefetch a fixed 18 KiB on: Q6_K 118-122
// and 162-184 (8 and 16 blocks on measured alike, 4 on 141-146, 24 on
// 151-153; T2 below T1; the far prefetch without the near one 142-199),
// Q4_0 227-231 and 253-257, Q8_0 183-201 and 193-237; Q4_K's quad kernel
// (four groups) 197-204 and 208-247 with 36 KiB (a quad of 2048 columns;
// 18 KiB: 186-197), the L2 tile unchanged in all. A fixed distance lands
// inside the current pair or quad for wider matrices (6144 columns), so
// the far prefetch follows the layout instead: against the fixed one
// (same benchmark, two alternated runs) Q4_K 233-238 and 213-225, Q6_K
// 176-179 and 145-157, Q8_0 228-234 and 183-194 (Q4_0 keeps the fixed
// distance: see q40quad); on two threads (BenchmarkLayerStream, the
// Qwen3-1.7B shapes, eight rows) and in siskin serve with eight streams,
// level with it.
func prefetch2(a *asm, off int, base string, farOff int) {
	a.op("PREFETCHT0 %d%s", off, base)
	a.op("PREFETCHT0 %d%s(R10*1)", off, base)
	a.op("PREFETCHT1 %d(R15)", farOff)
	a.op("PREFETCHT1 %d(R15)(R10*1)", farOff)
}

// pairLoadAt is pairLoad for the pair of groups at base.
func pairLoadAt(a *asm, base string, off int, r int) {
	a.op("VMOVDQU64 %d(%s), Y%d", off, base, r)
	a.op("VINSERTI64X4 $1, %d(%s)(R10*1), Z%d, Z%d", off, base, r, r)
}
