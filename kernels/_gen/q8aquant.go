package main

import "fmt"

func init() { files["quant_avx2_amd64.s"] = q8aAQuantFile }

// q8aAQuantFile writes quant_avx2_amd64.s, the activation quantizers of
// the AVX2 tier: the same numbers as the Go reference (quantQ8_0,
// quantQ8_K), written in the q8a and q8ka layouts of actlayout.go.
// TestQuantLayouts checks them bit for bit.
//
// The element-wise steps (HMAXPS, ROUNDAWAY, NOTINT, PACK32, Q8K_32,
// Q8K_SUMS) stay #define macros of the output; the generator builds their
// bodies and the kernels, unrolled over the four vectors of 8 floats that
// make a block of 32.
func q8aAQuantFile() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`
// Activation quantizers of the AVX2 tier: the same numbers as the Go
// reference (quantQ8_0, quantQ8_K), written in the q8a and q8ka layouts
// (actlayout.go). TestQuantLayouts checks them bit for bit.
`)
	q8aAData(a, "qabs", splatU(0x7fffffff))
	q8aAData(a, "qsign", splatU(0x80000000))
	q8aAData(a, "qone", splatF(1))
	q8aAData(a, "qhalf", splatF(0.5))
	q8aAData(a, "q127", splatF(127))
	q8aAData(a, "qm127", splatF(-127))
	q8aAData(a, "q127i", splatU(127))
	q8aAData(a, "qpackperm", q8aADwords(q8aAPackPerm))
	q8aAData(a, "qbytes8", splat(8))
	q8aAData(a, "qpairperm", q8aADwords(q8aAPairPerm))
	q8aAData(a, "qones16", splatU(0x00010001))
	q8aAQuantMacros(a)
	q8aAQuantQ8a(a)
	q8aAQ8KMacros(a)
	q8aAQuantQ8ka(a)
	return a
}

// q8aAPackPerm is qpackperm, PACK32's final VPERMD. VPACKSSDW and
// VPACKSSWB work within 128-bit lanes, so after packing Y0-Y3 (elements
// 0-7, 8-15, 16-23, 24-31) the dwords hold the 4-element groups
// Y0lo Y1lo Y2lo Y3lo | Y0hi Y1hi Y2hi Y3hi: output dword i is source
// dword i/2 + 4*(i%2).
func q8aAPackPerm(i int) uint32 { return uint32(i/2 + 4*(i%2)) }

// q8aAPairPerm is qpairperm: VPHADDD Y4, Y6 leaves the pair sums of Y6
// (the 8 sums of 16 of the first half) and Y4 (the second) interleaved
// by lane, Y6 0-1, Y4 0-1 | Y6 2-3, Y4 2-3; the permutation puts them in
// order (dwords 0, 1, 4, 5, 2, 3, 6, 7).
func q8aAPairPerm(i int) uint32 { return uint32(i%2 + 4*(i/2%2) + 2*(i/4)) }

// q8aAOff is off(base), or (base) for offset 0.
func q8aAOff(off int, base string) string {
	if off == 0 {
		return "(" + base + ")"
	}
	return fmt.Sprintf("%d(%s)", off, base)
}

// q8aAMacroOff is the macro parameter p plus k bytes.
func q8aAMacroOff(p string, k int) string {
	if k == 0 {
		return p
	}
	return fmt.Sprintf("%s+%d", p, k)
}

// q8aAQuantMacros emits the macros of both quantizers.
//
// HMAXPS is HSUM with VMAXPS (the maximum is exact, so the order does not
// matter) and the result broadcast to all lanes.
//
// ROUNDAWAY rounds half away from zero like C's roundf, which no SSE/AVX
// rounding mode does: t = trunc(y) (VROUNDPS $0x0b: toward zero, no
// precision exception), y - t is exact, and the result is t + (|y - t| >=
// 0.5 ? copysign(1, y) : 0) (VCMPPS $0x1d = GE_OQ).
//
// NOTINT: VCVT(T)PS2DQ gives 0x80000000 (the "integer indefinite") for
// infinities, NaN and out-of-range values; those lanes become 0.
// Legitimate values here are within ±127, so no real result collides.
//
// PACK32 narrows the int32 lanes of Y0-Y3 with saturating packs (values
// are within int8 already) and restores element order with qpackperm (see
// q8aAPackPerm).
func q8aAQuantMacros(a *asm) {
	a.raw(`// HMAXPS leaves in every lane of Y the maximum of its 8 floats. T is
// scratch; X is the low half of Y.`)
	q8aADefine(a, "HMAXPS(Y, X, T)", func(m *asm) {
		m.op("VEXTRACTF128 $1, Y, T")
		m.op("VMAXPS T, X, X")
		m.op("VMOVHLPS X, X, T")
		m.op("VMAXPS T, X, X")
		m.op("VMOVSHDUP X, T")
		m.op("VMAXSS T, X, X")
		m.op("VBROADCASTSS X, Y")
	})
	a.raw(`// ROUNDAWAY rounds the floats of Y half away from zero, like C's roundf
// (exactly: t = trunc(y), then y - t is exact and t moves one away from
// zero when |y - t| >= 0.5). T1, T2 are scratch.`)
	q8aADefine(a, "ROUNDAWAY(Y, T1, T2)", func(m *asm) {
		m.op("VROUNDPS $0x0b, Y, T1")
		m.op("VSUBPS T1, Y, T2")
		m.op("VANDPS qabs<>(SB), T2, T2")
		m.op("VCMPPS $0x1d, qhalf<>(SB), T2, T2")
		m.op("VANDPS qsign<>(SB), Y, Y")
		m.op("VORPS qone<>(SB), Y, Y")
		m.op("VANDPS T2, Y, Y")
		m.op("VADDPS T1, Y, Y")
	})
	a.raw(`// NOTINT zeroes the lanes of Y where a conversion to int32 failed (the
// value was infinite or NaN: a block of subnormal activations makes 1/d
// overflow), as the Go reference does. T is scratch.`)
	q8aADefine(a, "NOTINT(Y, T)", func(m *asm) {
		m.op("VPCMPEQD qsign<>(SB), Y, T")
		m.op("VPANDN Y, T, Y")
	})
	a.raw(`// PACK32 packs the int32 lanes of Y0-Y3 (elements 0-7, ..., 24-31) to 32
// int8 in order in Y0 (values are within int8). Y7 = qpackperm.`)
	q8aADefine(a, "PACK32", func(m *asm) {
		for i := 0; i < 4; i += 2 {
			m.op("VPACKSSDW Y%d, Y%d, Y%d", i+1, i, i)
		}
		m.op("VPACKSSWB Y2, Y0, Y0")
		m.op("VPERMD Y0, Y7, Y0")
	})
}

// q8aAQuantQ8a emits quantQ8aAVX2(dst []byte, x []float32): quantQ8a for
// len(x)/32 blocks, in the q8a layout (nb blocks: the 32 quants of each
// at dst, the 16 int16 -8*pair sums at dst+32nb, d at dst+64nb, -8*sum
// at dst+68nb).
//
// Per block: amax = max |x|; d = amax/127, stored rounded to fp16 and
// widened back to float (VCVTPS2PH $0: round to nearest even); the quants
// are roundf(x * (1/d)) with the unrounded d (1/d taken as 0 when d = 0,
// the VCMPPS $4 (NEQ) mask), as the reference does. The pair sums come
// from VPMADDUBSW with the bytes 8 as the unsigned operand (8*(q[2j] +
// q[2j+1])), negated; the block's sum is their VPMADDWD with ones reduced
// across the register.
//
// Registers: DI quants, R9 pair sums, R8 d, R10 sums, SI x, CX blocks
// left; Y0-Y3 the 32 floats, then their quants; Y7 qpackperm, Y8 qbytes8.
func q8aAQuantQ8a(a *asm) {
	a.raw(`// func quantQ8aAVX2(dst []byte, x []float32)
//
// quantQ8a for len(x)/32 blocks: per block d = amax/127 (rounded to fp16,
// stored widened), q = roundf(x * (1/d)) with the unrounded d (0 when
// d = 0), -8 times the sums of pairs of q and -8 times the sum of q.`)
	a.raw("TEXT ·quantQ8aAVX2(SB), NOSPLIT, $0-48")
	q8aAQuantArgs(a, 5, "q8adone")
	q8aAScaled(a, "CX", 5, "DI", "R9", "-8*pair sums")
	q8aAScaled(a, "CX", 5, "R9", "R8", "d")
	a.op("LEAQ (R8)(CX*4), R10 // -8*sum")
	a.op("VMOVDQU qpackperm<>(SB), Y7")
	a.op("VMOVDQU qbytes8<>(SB), Y8")
	a.raw("")
	a.label("q8ablk")
	for i := 0; i < 4; i++ {
		a.op("VMOVUPS %s, Y%d", q8aAOff(32*i, "SI"), i)
	}
	// amax: |Y0| in Y4, then max with |Y1|, |Y2|, |Y3| through Y5.
	for i := 0; i < 4; i++ {
		if i == 0 {
			a.op("VANDPS qabs<>(SB), Y0, Y4")
			continue
		}
		a.op("VANDPS qabs<>(SB), Y%d, Y5", i)
		a.op("VMAXPS Y5, Y4, Y4")
	}
	a.op("HMAXPS(Y4, X4, X5)")
	a.op("VDIVPS q127<>(SB), Y4, Y4 // d")
	a.op("VMOVUPS qone<>(SB), Y5")
	a.op("VDIVPS Y4, Y5, Y5 // 1/d")
	a.op("VXORPS Y6, Y6, Y6")
	a.op("VCMPPS $4, Y6, Y4, Y6 // d != 0")
	a.op("VANDPS Y6, Y5, Y5 // id")
	a.op("VCVTPS2PH $0, X4, X6")
	a.op("VCVTPH2PS X6, X6")
	a.op("VMOVSS X6, (R8)")
	for i := 0; i < 4; i++ {
		a.op("VMULPS Y5, Y%d, Y%d", i, i)
	}
	for i := 0; i < 4; i++ {
		a.op("ROUNDAWAY(Y%d, Y4, Y6)", i)
	}
	for i := 0; i < 4; i++ {
		a.op("VCVTTPS2DQ Y%d, Y%d", i, i)
	}
	for i := 0; i < 4; i++ {
		a.op("NOTINT(Y%d, Y4)", i)
	}
	a.op("PACK32")
	a.op("VMOVDQU Y0, (DI)")
	a.op("VPMADDUBSW Y0, Y8, Y1 // 8*(q[2j]+q[2j+1])")
	a.op("VPXOR Y2, Y2, Y2")
	a.op("VPSUBW Y1, Y2, Y1")
	a.op("VMOVDQU Y1, (R9)")
	// The block's sum: the 8 dwords of VPMADDWD reduced by halves.
	a.op("VPMADDWD qones16<>(SB), Y1, Y2")
	a.op("VEXTRACTI128 $1, Y2, X3")
	a.op("VPADDD X3, X2, X2")
	for _, sh := range []int{0x4e, 0xb1} {
		a.op("VPSHUFD $0x%02x, X2, X3", sh)
		a.op("VPADDD X3, X2, X2")
	}
	a.op("VMOVD X2, (R10)")
	q8aAAdvance(a, []q8aAStep{{"R10", 4}, {"SI", 128}, {"DI", 32}, {"R8", 4}, {"R9", 32}})
	a.op("DECQ CX")
	a.op("JNZ q8ablk")
	a.raw("")
	a.label("q8adone")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// q8aAQuantArgs loads dst (DI), x (SI) and CX = the count of blocks of
// 1<<shift floats, returning to done when there are none.
func q8aAQuantArgs(a *asm, shift int, done string) {
	a.op("MOVQ dst_base+0(FP), DI")
	a.op("MOVQ x_base+24(FP), SI")
	a.op("MOVQ x_len+32(FP), CX")
	a.op("SHRQ $%d, CX", shift)
	a.op("JZ %s", done)
}

// q8aAAdvance emits the pointer increments of steps.
func q8aAAdvance(a *asm, steps []q8aAStep) {
	for _, s := range steps {
		a.op("ADDQ $%d, %s", s.n, s.reg)
	}
}

// q8aAQ8KMacros emits the two macros of quantQ8kaAVX2.
//
// Q8K_32 quantizes one block of 32 (four vectors) with VCVTPS2DQ, whose
// default rounding (nearest even) is nearest_int's; NOTINT catches the
// lanes that overflowed, and VPMINSD clamps at 127 like the reference's
// MIN(127, ...) (only x of the sign opposite to max reach +127). The sums
// of 16 stay as 8 int32 lanes in G0 (elements 0-15) and G1 (16-31) until
// Q8K_SUMS.
//
// Q8K_SUMS reduces eight such groups (Y8-Y15, in order) in two VPHADDD
// rounds: after them Y8 holds, per 128-bit lane, the four half sums of
// groups 0-3 (low lane: elements 0-3 of each group's lanes, high lane:
// 4-7) and Y12 those of groups 4-7; VPERM2I128 gathers the low lanes and
// the high lanes, and their sum is the 8 totals in group order.
func q8aAQ8KMacros(a *asm) {
	a.raw(`// Q8K_32 quantizes the 32 floats at off(SI) with Y5 = iscale, stores them
// at off/4(DI) and leaves the sums of each 16 in the int32 lanes of G0, G1.`)
	q8aADefine(a, "Q8K_32(off, qoff, G0, G1)", func(m *asm) {
		for i := 0; i < 4; i++ {
			m.op("VMULPS %s(SI), Y5, Y%d", q8aAMacroOff("off", 32*i), i)
		}
		for i := 0; i < 4; i++ {
			m.op("VCVTPS2DQ Y%d, Y%d", i, i)
		}
		for i := 0; i < 4; i++ {
			m.op("NOTINT(Y%d, Y4)", i)
		}
		for i := 0; i < 4; i++ {
			m.op("VPMINSD q127i<>(SB), Y%d, Y%d", i, i)
		}
		for g := 0; g < 2; g++ {
			m.op("VPADDD Y%d, Y%d, G%d", 2*g+1, 2*g, g)
		}
		m.op("PACK32")
		m.op("VMOVDQU Y0, qoff(DI)")
	})
	a.raw(`// Q8K_SUMS reduces the lane sums of the groups of 16 in Y8-Y15 (eight
// groups) to S = their 8 totals in order. Clobbers Y0, Y1, Y8-Y15.`)
	q8aADefine(a, "Q8K_SUMS(S)", func(m *asm) {
		for step := 1; step <= 2; step *= 2 {
			for g := 8; g < 16; g += 2 * step {
				m.op("VPHADDD %s, %s, %s", y(g+step), y(g), y(g))
			}
		}
		m.op("VPERM2I128 $0x20, Y12, Y8, Y0")
		m.op("VPERM2I128 $0x31, Y12, Y8, Y1")
		m.op("VPADDD Y1, Y0, S")
	})
}

// q8aAQuantQ8ka emits quantQ8kaAVX2(dst []byte, x []float32): quantQ8ka
// for len(x)/256 super-blocks in the q8ka layout (nb super-blocks: the
// 256 quants of each at dst, d (float32) at dst+256nb, the 16 int16 sums
// of 16 at dst+260nb, the 8 int16 sums of 32 after them at dst+292nb).
//
// Like the reference: the element of largest magnitude (the first on
// ties, found by a second pass comparing |x| with amax) gives iscale =
// -127/max, q = min(127, nearest_int(iscale*x)), d = 1/iscale; an
// all-zero super-block (amax = 0) writes zeros (q8kzero). The
// super-block is quantized in two halves of four blocks of 32 (Q8K_32),
// each half's eight sums of 16 reduced by Q8K_SUMS (Y6, then Y4); the
// sums of 32 are the pair sums of those.
//
// Registers: SI x, DI quants, R8 d, R9 sums of 16, R10 sums of 32, CX
// super-blocks left; Y6 qabs while searching, Y7 qpackperm.
func q8aAQuantQ8ka(a *asm) {
	a.raw(`// func quantQ8kaAVX2(dst []byte, x []float32)
//
// quantQ8ka for len(x)/256 super-blocks: the element of largest magnitude
// (the first on ties) gives iscale = -127/max, q = min(127,
// nearest_int(iscale*x)) (VCVTPS2DQ rounds to nearest even, like
// nearest_int), d = 1/iscale, and the sums of each 16 and 32 quants.`)
	a.raw("TEXT ·quantQ8kaAVX2(SB), NOSPLIT, $0-48")
	q8aAQuantArgs(a, 8, "q8kdone")
	q8aAScaled(a, "CX", 8, "DI", "R8", "d")
	a.op("LEAQ (R8)(CX*4), R9 // sums of 16")
	q8aAScaled(a, "CX", 5, "R9", "R10", "sums of 32")
	a.op("VMOVDQU qpackperm<>(SB), Y7")
	a.op("VMOVDQU qabs<>(SB), Y6")
	a.raw("")
	a.label("q8kblk")
	a.op("// amax = max |x|, NaN skipped as the Go twin's comparisons skip it")
	a.op("VXORPS Y4, Y4, Y4")
	a.op("XORQ BX, BX")
	a.label("q8kmax")
	for i := 0; i < 2; i++ {
		a.op("VANDPS %s(BX*1), Y6, Y%d", q8aAOff(32*i, "SI"), i)
	}
	// MAXPS returns its second source when either is NaN: with the running
	// maximum second, a NaN element never enters it.
	for i := 0; i < 2; i++ {
		a.op("VMAXPS Y4, Y%d, Y4", i)
	}
	a.op("ADDQ $64, BX")
	a.op("CMPQ BX, $1024")
	a.op("JNE q8kmax")
	a.op("HMAXPS(Y4, X4, X5)")
	a.op("VXORPS X0, X0, X0")
	a.op("VUCOMISS X0, X4")
	a.op("JEQ q8kzero")
	a.raw("")
	a.op("// maxv = the first x with |x| = amax (amax itself if none: NaN input)")
	a.op("XORQ BX, BX")
	a.label("q8kfind")
	a.op("VANDPS (SI)(BX*1), Y6, Y0")
	a.op("VCMPPS $0, Y4, Y0, Y0")
	a.op("VMOVMSKPS Y0, AX")
	a.op("TESTL AX, AX")
	a.op("JNZ q8kfound")
	a.op("ADDQ $32, BX")
	a.op("CMPQ BX, $1024")
	a.op("JNE q8kfind")
	a.op("VMOVAPS X4, X0")
	a.op("JMP q8kscale")
	a.label("q8kfound")
	a.op("BSFL AX, AX")
	a.op("LEAQ (BX)(AX*4), BX")
	a.op("VMOVSS (SI)(BX*1), X0")
	a.raw("")
	a.label("q8kscale")
	a.op("VMOVSS qm127<>(SB), X5")
	a.op("VDIVSS X0, X5, X5 // iscale = -127/maxv")
	a.op("VMOVSS qone<>(SB), X1")
	a.op("VDIVSS X5, X1, X1 // d = 1/iscale")
	a.op("VMOVSS X1, (R8)")
	a.op("VBROADCASTSS X5, Y5")
	for h, s := range []string{"Y6", "Y4"} {
		for j := 0; j < 4; j++ {
			b := 4*h + j
			a.op("Q8K_32(%d, %d, %s, %s)", 128*b, 32*b, y(8+2*j), y(9+2*j))
		}
		a.op("Q8K_SUMS(%s)", s)
	}
	// Sums of 16: the two halves' totals packed to int16, VPERMQ $0xd8
	// undoing the lane interleave of VPACKSSDW.
	a.op("VPACKSSDW Y4, Y6, Y0")
	a.op("VPERMQ $0xd8, Y0, Y0")
	a.op("VMOVDQU Y0, (R9)")
	// Sums of 32: pair sums of the sums of 16, put in order by
	// qpairperm, packed to int16.
	a.op("VPHADDD Y4, Y6, Y0")
	a.op("VMOVDQU qpairperm<>(SB), Y1")
	a.op("VPERMD Y0, Y1, Y0")
	a.op("VEXTRACTI128 $1, Y0, X1")
	a.op("VPACKSSDW X1, X0, X0")
	a.op("VMOVDQU X0, (R10)")
	a.op("VMOVDQU qabs<>(SB), Y6") // Q8K_SUMS(Y6) took it
	a.raw("")
	a.label("q8knext")
	q8aAAdvance(a, []q8aAStep{{"SI", 1024}, {"DI", 256}, {"R8", 4}, {"R9", 32}, {"R10", 16}})
	a.op("DECQ CX")
	a.op("JNZ q8kblk")
	a.raw("")
	a.label("q8kdone")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
	// An all-zero super-block: zero quants, d and sums.
	a.label("q8kzero")
	a.op("VPXOR Y0, Y0, Y0")
	for i := 0; i < 8; i++ {
		a.op("VMOVDQU Y0, %s", q8aAOff(32*i, "DI"))
	}
	a.op("MOVL $0, (R8)")
	a.op("VMOVDQU Y0, (R9)")
	a.op("VMOVDQU X0, (R10)")
	a.op("JMP q8knext")
}
