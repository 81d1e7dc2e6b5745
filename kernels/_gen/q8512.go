package main

import "fmt"

// The AVX-512 VNNI one-activation-row Q8_0 packed kernel
// (pack8_avx512_amd64.s). It reads one group (8 rows) at a time as one
// sequential stream: a 64-byte load of a group block holds loads 2j and
// 2j+1 of the AVX2 layout (packlayout.go), quartet 2j of the 8 rows in
// its low half and quartet 2j+1 in its high half. The activations are
// expanded once per call into a scratch buffer xe in the matching shape,
// so the inner loop is one XOR and one VPDPBUSD (both with a memory
// operand) per 64 weight bytes. Per block b, xe holds at 320b:
//
//	[0,256)   four 64-byte vectors j < 4: activation quartet 2j
//	          broadcast to dwords 0-7, quartet 2j+1 to dwords 8-15
//	[256,320) the accumulator's start: -128*sum(q) (16 times q8a's
//	          -8*sum) in dwords 0-7, 0 in dwords 8-15
//
// The signed weights enter VPDPBUSD as w+128 (XOR 0x80), which the start
// value takes off; the two halves are added after the block, so the
// block's integer sum is exact and the float step is the AVX2 kernel's
// (q8 in main.go), giving its bits.

// q8512File is pack8_avx512_amd64.s.
func q8512File() *asm {
	a := &asm{}
	a.b.WriteString(header)
	for j := 0; j < 4; j++ {
		a.dwords64(fmt.Sprintf("q8xidx%d", j), func(i int) uint32 { return uint32(2*j + i/8) })
	}
	a.data64("q8x80", splat(0x80))
	q8Vec1VNNI(a)
	return a
}

// dwords64 emits a 64-byte constant of 16 dwords f(0..15).
func (a *asm) dwords64(name string, f func(i int) uint32) {
	for i := 0; i < 16; i += 2 {
		a.raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 4*i, uint64(f(i+1))<<32|uint64(f(i)))
	}
	a.raw("GLOBL %s<>(SB), RODATA|NOPTR, $64\n", name)
}

// q8Vec1VNNI: func q8_0PackVecVNNI(out []float32, w []byte, groups,
// blocks int, x, xe []byte). Registers: DI out, SI weights, CX groups
// left, DX blocks left, R8 blocks, R9 x (q8a), BX xe, R12 the block's
// xe, R13 the activations' d, Z9 0x80 bytes, Z0-Z3 the weights + 128,
// Z4/Z5 the block's two integer sums, Y12 the float sums, Y6/Y7 scales;
// Z16-Z19 the expansion's indices, R10/R11 and Z0-Z2 its scratch.
func q8Vec1VNNI(a *asm) {
	const gb, xeb, ahead = 272, 320, q8VNNIAhead
	a.raw("// func q8_0PackVecVNNI(out []float32, w []byte, groups, blocks int, x, xe []byte)")
	a.raw("TEXT ·q8_0PackVecVNNI(SB), NOSPLIT, $0-112")
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ w_base+24(FP), SI")
	a.op("MOVQ groups+48(FP), CX")
	a.op("MOVQ blocks+56(FP), R8")
	a.op("MOVQ x_base+64(FP), R9")
	a.op("MOVQ xe_base+88(FP), BX")
	// The first run's four streams, ahead bytes each (a call's first loads
	// would otherwise wait for the hardware prefetcher).
	a.op("IMUL3Q $%d, R8, R10", gb)
	a.op("LEAQ (R10)(R10*2), R11")
	for off := 0; off < max(ahead, 1024); off += 64 {
		for _, ix := range []string{"", "(R10*1)", "(R10*2)", "(R11*1)"} {
			a.op("PREFETCHT0 %d(SI)%s", off, ix)
		}
	}

	// Expansion: xe from the q8a quants and -8*sums.
	for j := 0; j < 4; j++ {
		a.op("VMOVDQU64 q8xidx%d<>(SB), %s", j, z(16+j))
	}
	a.op("MOVQ R8, DX")
	a.op("MOVQ R9, R10")
	a.op("IMUL3Q $68, R8, R11")
	a.op("ADDQ R9, R11")
	a.op("MOVQ BX, R12")
	a.label("q8vx1expand")
	a.op("VMOVDQU (R10), Y0")
	for j := 0; j < 4; j++ {
		a.op("VPERMD Z0, %s, Z1", z(16+j))
		a.op("VMOVDQU64 Z1, %d(R12)", 64*j)
	}
	a.op("VPBROADCASTD (R11), Y2") // VEX: dwords 8-15 of Z2 become 0
	a.op("VPSLLD $4, Y2, Y2")
	a.op("VMOVDQU64 Z2, 256(R12)")
	a.op("ADDQ $32, R10")
	a.op("ADDQ $4, R11")
	a.op("ADDQ $%d, R12", xeb)
	a.op("DECQ DX")
	a.op("JNZ q8vx1expand")

	a.op("VMOVDQU64 q8x80<>(SB), Z9")
	a.op("IMUL3Q $%d, R8, R10", gb)
	a.op("LEAQ (R10)(R10*2), R11")
	a.op("MOVQ CX, R14")
	a.op("SHRQ $2, R14")
	a.op("JZ q8vx1rest")
	q8VNNIGroups(a, 4)
	a.label("q8vx1rest")
	a.op("MOVQ CX, R14")
	a.op("ANDQ $3, R14")
	a.op("JZ q8vx1done")
	q8VNNIGroups(a, 1)
	a.label("q8vx1done")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// q8VNNIGroups emits the loop over R14 runs of S groups (1 or 4) at SI,
// group g+s read as stream s at SI+s*R10 (R10 the group stride, R11
// three times it). Registers: Z24-Z27 the block's activation vectors and
// Z28 its sums' start, shared by the streams; of stream s, Z2s/Z2s+1 the
// weights + 128, Z10+2s/Z11+2s the block's two integer sums, Y18+s the
// float sums; Y22/Y23 the scales.
func q8VNNIGroups(a *asm, S int) {
	const gb, xeb, ahead = 272, 320, q8VNNIAhead
	l := func(s string) string { return fmt.Sprintf("q8vx%d%s", S, s) }
	at := func(off, s int) string {
		return fmt.Sprintf("%d(SI)%s", off, []string{"", "(R10*1)", "(R10*2)", "(R11*1)"}[s])
	}
	a.label(l("group"))
	a.op("MOVQ BX, R12")
	a.op("IMUL3Q $64, R8, R13")
	a.op("ADDQ R9, R13")
	a.op("MOVQ R8, DX")
	for s := 0; s < S; s++ {
		a.op("VXORPS %s, %s, %s", y(18+s), y(18+s), y(18+s))
	}
	a.label(l("block"))
	if ahead > 0 {
		for s := 0; s < S; s++ {
			for p := 0; p < gb+64; p += 64 {
				a.op("PREFETCHT0 %s", at(ahead+p, s))
			}
		}
	}
	for j := 0; j < 4; j++ {
		a.op("VMOVDQU64 %d(R12), %s", 64*j, z(24+j))
	}
	a.op("VMOVDQU64 256(R12), Z28")
	for s := 0; s < S; s++ {
		a0, a1 := z(10+2*s), z(11+2*s)
		a.op("VMOVDQA64 Z28, %s", a0)
		a.op("VPXORD %s, %s, %s", a1, a1, a1)
		for j := 0; j < 4; j++ {
			wr := z(2*s + j%2)
			a.op("VPXORD %s, Z9, %s", at(64*j, s), wr)
			a.op("VPDPBUSD %s, %s, %s", z(24+j), wr, []string{a0, a1}[j%2])
		}
	}
	for s := 0; s < S; s++ {
		acc, t := 10+2*s, 11+2*s
		a.op("VPADDD %s, %s, %s", z(t), z(acc), z(acc))
		a.op("VEXTRACTI64X4 $1, %s, %s", z(acc), y(t))
		a.op("VPADDD %s, %s, %s", y(t), y(acc), y(acc))
		// The AVX2 kernel's float step (floatStep): F += (dw*dx) * float(I).
		a.op("VCVTDQ2PS %s, %s", y(acc), y(acc))
		a.op("VCVTPH2PS %s, Y22", at(gb-16, s))
		a.op("VBROADCASTSS (R13), Y23")
		a.op("VMULPS Y23, Y22, Y23")
		a.op("VFMADD231PS %s, Y23, %s", y(acc), y(18+s))
	}
	a.op("ADDQ $%d, SI", gb)
	a.op("ADDQ $%d, R12", xeb)
	a.op("ADDQ $4, R13")
	a.op("DECQ DX")
	a.op("JNZ %s", l("block"))
	for s := 0; s < S; s++ {
		a.op("VMOVUPS %s, %d(DI)", y(18+s), 32*s)
	}
	a.op("ADDQ $%d, DI", 32*S)
	if S > 1 {
		a.op("ADDQ R11, SI")
	}
	a.op("DECQ R14")
	a.op("JNZ %s", l("group"))
}

// q8VNNIAhead is how far ahead (bytes) the kernel prefetches its weights.
const q8VNNIAhead = 1024
