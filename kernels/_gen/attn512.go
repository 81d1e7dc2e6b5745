package main

import "fmt"

// The AVX-512 attention kernels over an f32, f16 or q8_0 key/value cache
// (attn_avx512_amd64.s): the scores of m = 1, 2 or 4 query rows against
// n keys, and the weighted sums of n value rows into m output rows, with
// no padding rows (decode reads a KV head's group of query heads, two for
// Qwen3). Keys and values are widened exactly (f16: VCVTPH2PS; q8_0: the
// int8 times its fp16 scale, a product of 8 and 11 significant bits), so
// each kernel is the float32 kernel on the widened rows.
//
// Dot: a ZMM register holds the same 8 elements of two keys (low and high
// half), so each (query, key) keeps the AVX2 kernels' one 8-lane FMA
// chain over its elements in order (lane l sums the elements l mod 8) and
// is reduced as dot4Rows reduces it, ((a0+a4)+(a1+a5)) + ((a2+a6)+(a3+a7)):
// every score is bit-identical to the AVX2 tier's. Axpy: a ZMM register
// holds 16 columns of one output row; each column takes its multiply-adds
// in order of position, as AxpyRows does.

// attnType is how a cache element type's rows are read.
type attnType struct {
	name  string
	block int // elements per step of the dot loop
	bytes int // bytes of a step of one row
	// prefetch is the instruction that asks for the next rows. Decode
	// over a deep f16 cache (Qwen3-1.7B's shape, 2048 positions, two
	// threads: BenchmarkAttendDecodeQwen3_2048) took 0.86-0.90x the time
	// fetching them into L2 instead of L1; over q8_0, whose rows cost
	// more arithmetic a byte, 1.0-1.1x, so it keeps L1.
	prefetch string
	// tag ends the names of the decode (heads) kernels' variant that
	// prefetches with streamInsn ("NTA"), "" for the others.
	tag string
}

var (
	attnF32 = attnType{name: "F32", block: 16, bytes: 64, prefetch: "PREFETCHT1"} // the speech models' caches
	attnF16 = attnType{name: "F16", block: 16, bytes: 32, prefetch: "PREFETCHT1"}
	attnQ8  = attnType{name: "Q8", block: 32, bytes: 34, prefetch: "PREFETCHT0"} // one q8_0 block: fp16 scale, 32 int8
)

// nta is t for the decode kernels that AMD CPUs run (kernels.ntaStream):
// a step reads each cached row once. On the Zen 5 EPYC (Qwen3-1.7B
// shape, Q4_K_M, `siskin bench -p 0 -n 64 -d 0,2048 -r 3`, two
// alternated runs) every attention kernel prefetching with PREFETCHNTA
// took tg64 at depth 2048 from 44.5-45.4 to 47.0-48.8 tok/s over a q8_0
// cache and from 40.9-41.4 to 41.9-42.5 over f16, but pp512 to
// 0.97-0.98x (a tile's rows are read again by the next query rows), so
// only these heads kernels have the variant: BenchmarkAttentionHeadsStream
// (six alternated runs, medians) f16 20.9 -> 22.3 GB/s, q8_0 18.4 -> 19.6.
func (t attnType) nta() attnType {
	t.prefetch, t.tag = streamInsn, "NTA"
	return t
}

func attn512File() *asm {
	a := &asm{}
	a.b.WriteString(header)
	// attnperm gathers lanes 0, 4, 8 and 12 (one score each) into 0-3.
	for i := 0; i < 64; i += 8 {
		lo, hi := uint64(0), uint64(0)
		if i < 16 {
			lo, hi = uint64(i), uint64(i+4)
		}
		a.raw("DATA attnperm<>+%d(SB)/8, $0x%016x", i, hi<<32|lo)
	}
	a.raw("GLOBL attnperm<>(SB), RODATA|NOPTR, $64\n")
	for _, t := range []attnType{attnF16, attnQ8, attnF32} {
		for _, m := range []int{1, 2, 4} {
			attnDot512(a, t, m)
			attnAxpy512(a, t, m)
		}
	}
	for _, t := range []attnType{attnF16, attnQ8, attnF16.nta(), attnQ8.nta()} {
		for _, m := range []int{1, 2, 4} {
			attnDotHeads512(a, t, m)
			attnAxpyHeads512(a, t, m)
		}
	}
	attnDotPair512(a)
	return a
}

// keyAddr is the address of byte off of key i of a group: keys 0-3 at
// BX + i*R10 (R11 = 3*R10), keys 4-7 at CX + (i-4)*R10.
func keyAddr(off, i int) string {
	base := "BX"
	if i >= 4 {
		base, i = "CX", i-4
	}
	idx := [4]string{"", "(R10*1)", "(R10*2)", "(R11*1)"}
	return fmt.Sprintf("%d(%s)%s", off, base, idx[i])
}

// rowAddr is byte off of row j (of four) from base, rows stride apart
// (stride in s1, 3*stride in s3).
func rowAddr(off int, base string, j int, s1, s3 string) string {
	switch j {
	case 0:
		return fmt.Sprintf("%d(%s)", off, base)
	case 1:
		return fmt.Sprintf("%d(%s)(%s*1)", off, base, s1)
	case 2:
		return fmt.Sprintf("%d(%s)(%s*2)", off, base, s1)
	}
	return fmt.Sprintf("%d(%s)(%s*1)", off, base, s3)
}

// attnDot512 emits dot<T>x<m>AVX512(out []float32, ostride int, q
// []float32, qstride int, k []byte, kstride, n, steps int, scale float32,
// next []byte): out[j*ostride+i] = q_j . k_i * scale for j < m, i < n,
// over steps*t.block elements; kstride is in bytes, and the same bytes of
// next are prefetched. Keys go eight (m <= 2) or four (m = 4) at a time,
// then two, then one (paired with itself). Registers: R8 out, R9 ostride,
// SI q, R12/R13 qstride x1/x3, DI keys, R10/R11 kstride x1/x3, DX keys
// left, R15 next-keys, AX/BX/CX the group's query and keys, R14 steps
// left, tmp (R13 when m < 4, else CX) scratch; Z0-Z7 sums, Z8-Z11 keys,
// Z20-Z23 q8_0 scales, Z12-Z13 queries, Z14 scale, Z15 attnperm,
// Z16-Z17 the reduction.
func attnDot512(a *asm, t attnType, m int) {
	name := fmt.Sprintf("dot%sx%dAVX512", t.name, m)
	l := func(s string) string { return fmt.Sprintf("ad%s%d%s", t.name, m, s) }
	tmp, big, qt := attnDotShape(t, m)
	a.raw("// func %s(out []float32, ostride int, q %s, qstride int, k []byte, kstride, n, steps int, scale float32, next []byte)", name, qt)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-144", name)
	attnDotArgs(a, t, m)
	a.op("MOVQ next_base+120(FP), R15")
	a.op("SUBQ DI, R15")
	attnKeyGroups(a, l, big, func(g int) { attnDotGroup(a, t, m, g, tmp, l(fmt.Sprint("s", g))) })
}

// attnDotShape is a dot kernel's scratch register, its largest group of
// keys and the Go type of its queries.
func attnDotShape(t attnType, m int) (tmp string, big int, qt string) {
	tmp, big, qt = "R13", 8, "[]float32"
	if m == 4 {
		tmp, big = "CX", 4
	}
	if t.name == attnQ8.name {
		qt = "[]byte"
	}
	return tmp, big, qt
}

// attnKeyGroups emits the dot kernels' loop over the DX keys at DI, big
// (then two, then one) at a time: group(g) for each, then DI, R8 and DX
// move on; it ends the kernel.
func attnKeyGroups(a *asm, l func(string) string, big int, group func(g int)) {
	groups := []int{big, 2, 1}
	for gi, g := range groups {
		next := l("end")
		if gi+1 < len(groups) {
			next = l(fmt.Sprint("g", groups[gi+1]))
		}
		a.label(l(fmt.Sprint("g", g)))
		a.op("CMPQ DX, $%d", g)
		a.op("JLT %s", next)
		group(g)
		switch g {
		case 1:
			a.op("ADDQ R10, DI")
		default:
			a.op("LEAQ (DI)(R10*%d), DI", g)
		}
		a.op("ADDQ $%d, R8", 4*g)
		a.op("SUBQ $%d, DX", g)
		a.op("JMP %s", l(fmt.Sprint("g", g)))
	}
	a.label(l("end"))
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// attnDotArgs loads the arguments the dot kernels share (out to scale)
// and their constants.
func attnDotArgs(a *asm, t attnType, m int) {
	a.op("MOVQ out_base+0(FP), R8")
	a.op("MOVQ ostride+24(FP), R9")
	a.op("SHLQ $2, R9")
	a.op("MOVQ q_base+32(FP), SI")
	a.op("MOVQ qstride+56(FP), R12")
	if t.name == attnQ8.name {
		// Z18: 0x80 in every byte, the offset that makes a key unsigned.
		a.op("MOVL $0x80808080, R14")
		a.op("VPBROADCASTD R14, Z18")
	} else {
		a.op("SHLQ $2, R12")
	}
	if m == 4 {
		a.op("LEAQ (R12)(R12*2), R13")
	}
	a.op("MOVQ k_base+64(FP), DI")
	a.op("MOVQ kstride+88(FP), R10")
	a.op("LEAQ (R10)(R10*2), R11")
	a.op("MOVQ n+96(FP), DX")
	a.op("VBROADCASTSS scale+112(FP), Z14")
	a.op("VMOVDQU32 attnperm<>(SB), Z15")
}

// attnDotGroup emits the scores of g keys (g = 1: key 0 paired with
// itself) for the m queries.
func attnDotGroup(a *asm, t attnType, m, g int, tmp, loop string) {
	pairs := (g + 1) / 2
	key := func(off, i int) string {
		if g == 1 {
			i = 0
		}
		return keyAddr(off, i)
	}
	acc := func(j, p int) int { return j*pairs + p }
	qrow := func(off, j int) string { return rowAddr(off, "AX", j, "R12", "R13") }
	a.op("MOVQ SI, AX")
	a.op("MOVQ DI, BX")
	if g == 8 {
		a.op("LEAQ (BX)(R10*4), CX")
	}
	a.op("MOVQ steps+104(FP), R14")
	for i := 0; i < m*pairs; i++ {
		a.op("VPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	a.label(loop)
	switch {
	case g >= 4:
		for base := 0; base < g; base += 4 {
			a.op("LEAQ (%s)(R15*1), %s", map[bool]string{true: "CX", false: "BX"}[base == 4], tmp)
			for _, ix := range []string{"", "(R10*1)", "(R10*2)", "(R11*1)"} {
				a.op("%s (%s)%s", t.prefetch, tmp, ix)
			}
		}
	case g == 2:
		a.op("%s (BX)(R15*1)", t.prefetch)
		a.op("LEAQ (BX)(R10*1), %s", tmp)
		a.op("%s (%s)(R15*1)", t.prefetch, tmp)
	default:
		a.op("%s (BX)(R15*1)", t.prefetch)
	}
	if t.name == attnQ8.name {
		attnDotQ8Step(a, m, pairs, key, qrow, acc)
		a.op("ADDQ $%d, AX", q8QueryBytes)
	}
	if t.name != attnQ8.name {
		attnDotFloatStep(a, t, m, pairs, key, qrow, acc)
		a.op("ADDQ $%d, AX", 4*t.block)
	}
	a.op("ADDQ $%d, BX", t.bytes)
	if g == 8 {
		a.op("ADDQ $%d, CX", t.bytes)
	}
	a.op("DECQ R14")
	a.op("JNZ %s", loop)
	attnDotStore(a, m, g, tmp)
}

// q8QueryBytes is the bytes of one block of a quantized query row
// (kernels.quantQueryQ8): its 32 int8 twice (both halves of a ZMM), the
// offset correction -128*sum(q) in int32 lanes 0 and 8 of 16, its scale
// as a float32, 4 bytes of padding.
const q8QueryBytes = 136

// attnDotQ8Step emits one q8_0 block of the g keys' int8 dots: a pair's
// two 32-byte blocks fill a ZMM, made unsigned by +128 (XOR 0x80), and
// VPDPBUSD sums their products with the query's int8 (from memory, both
// halves) into int32 lanes started at the offset correction, so each
// half's 8 lanes sum to the exact integer dot of the block; they are
// converted, times the query's scale, and multiply-added with the keys'
// scales into the pair's 8-lane float sums (lane l: the block's bytes
// 4l..4l+3), in order of block.
func attnDotQ8Step(a *asm, m, pairs int, key func(off, i int) string, qrow func(off, j int) string, acc func(j, p int) int) {
	for p := 0; p < pairs; p++ {
		a.op("VPBROADCASTW %s, X%d", key(0, 2*p), 20+p)
		a.op("VPBROADCASTW %s, X16", key(0, 2*p+1))
		a.op("VINSERTI32X4 $1, X16, Y%d, Y%d", 20+p, 20+p)
		a.op("VCVTPH2PS Y%d, Z%d", 20+p, 20+p)
		a.op("VMOVDQU %s, Y%d", key(2, 2*p), 8+p)
		a.op("VINSERTI64X4 $1, %s, Z%d, Z%d", key(2, 2*p+1), 8+p, 8+p)
		a.op("VPXORD Z18, Z%d, Z%d", 8+p, 8+p)
	}
	// Each query's block and offset correction are loaded once a step
	// into registers the step leaves free (loads, not multiplies, bound
	// the kernel when every pair re-reads them).
	free := q8QueryRegs[m]
	for j := 0; j < m; j++ {
		a.op("VMOVDQU32 %s, Z%d", qrow(0, j), free[2*j])
		a.op("VMOVDQU32 %s, Z%d", qrow(64, j), free[2*j+1])
	}
	for j := 0; j < m; j++ {
		for p := 0; p < pairs; p++ {
			t := 24 + acc(j, p)%8
			a.op("VMOVDQA32 Z%d, Z%d", free[2*j+1], t)
			a.op("VPDPBUSD Z%d, Z%d, Z%d", free[2*j], 8+p, t)
			a.op("VCVTDQ2PS Z%d, Z%d", t, t)
			a.op("VMULPS.BCST %s, Z%d, Z%d", qrow(128, j), t, t)
			a.op("VFMADD231PS Z%d, Z%d, Z%d", 20+p, t, acc(j, p))
		}
	}
}

// q8QueryRegs are the registers free during a step of m query rows (keys
// Z8 on and their scales Z20 on, one of each per pair of keys; Z16 the
// scales' scratch; Z24-Z31 the products): a query's block and its offset
// correction.
var q8QueryRegs = map[int][]int{
	1: {12, 13},
	2: {12, 13, 17, 19},
	4: {10, 11, 12, 13, 17, 19, 22, 23},
}

// attnDotFloatStep emits one 16-element step of the f16 or f32 keys' dots:
// a pair of keys' 8 elements fill a ZMM (f16 widened exactly), the query's
// 8 in both halves.
func attnDotFloatStep(a *asm, t attnType, m, pairs int, key func(off, i int) string, qrow func(off, j int) string, acc func(j, p int) int) {
	for h := 0; h < 2; h++ {
		for p := 0; p < pairs; p++ {
			r := 8 + p
			if t.name == attnF32.name {
				a.op("VMOVUPS %s, Y%d", key(32*h, 2*p), r)
				a.op("VINSERTF64X4 $1, %s, Z%d, Z%d", key(32*h, 2*p+1), r, r)
				continue
			}
			a.op("VMOVDQU %s, X%d", key(16*h, 2*p), r)
			a.op("VINSERTI128 $1, %s, Y%d, Y%d", key(16*h, 2*p+1), r, r)
			a.op("VCVTPH2PS Y%d, Z%d", r, r)
		}
		for j := 0; j < m; j++ {
			qr := 12 + j%2
			a.op("VBROADCASTF64X4 %s, Z%d", qrow(32*h, j), qr)
			for p := 0; p < pairs; p++ {
				a.op("VFMADD231PS Z%d, Z%d, Z%d", 8+p, qr, acc(j, p))
			}
		}
	}
}

// attnDotStore reduces the sums of attnDotGroup and stores the scores of
// its g keys for the m queries.
func attnDotStore(a *asm, m, g int, tmp string) {
	pairs := (g + 1) / 2
	acc := func(j, p int) int { return j*pairs + p }
	if m == 4 {
		a.op("LEAQ (R9)(R9*2), %s", tmp)
	}
	for j := 0; j < m; j++ {
		for p := 0; p < pairs; p += 2 {
			pa, pb := acc(j, p), acc(j, p)
			if p+1 < pairs {
				pb = acc(j, p+1)
			}
			attnReduce4(a, pa, pb, 16, 17)
			dst := rowAddr(8*p, "R8", j, "R9", tmp) // keys 2p..2p+3
			switch {
			case g == 1:
				a.op("VMOVSS X16, %s", dst)
			case p+1 < pairs:
				a.op("VMOVUPS X16, %s", dst)
			default:
				a.op("VMOVLPS X16, %s", dst)
			}
		}
	}
}

// attnReduce4 reduces the 8-lane sums of two key pairs (Z<pa>: keys 0
// and 1, Z<pb>: keys 2 and 3) to their four scores times the scale (Z14)
// in lanes 0-3 of Z<d>, as dot4Rows reduces each, with Z<t> scratch; Z15
// is attnperm.
func attnReduce4(a *asm, pa, pb, d, t int) {
	// Lanes 4k..4k+3 of Z<d>: b_i = a_i + a_(i+4) of key k.
	a.op("VSHUFF32X4 $0x88, Z%d, Z%d, Z%d", pb, pa, d)
	a.op("VSHUFF32X4 $0xdd, Z%d, Z%d, Z%d", pb, pa, t)
	a.op("VADDPS Z%d, Z%d, Z%d", t, d, d)
	a.op("VPERMILPS $0xb1, Z%d, Z%d", d, t)
	a.op("VADDPS Z%d, Z%d, Z%d", t, d, d)
	a.op("VPERMILPS $0x4e, Z%d, Z%d", d, t)
	a.op("VADDPS Z%d, Z%d, Z%d", t, d, d)
	a.op("VPERMPS Z%d, Z15, Z%d", d, d)
	a.op("VMULPS X14, X%d, X%d", d, d)
}

// attnAxpy512 emits axpy<T>x<m>AVX512(y []float32, ystride int, p
// []float32, pstride, n int, v []byte, vstride, chunks int, next []byte):
// adds to chunks*t.block columns of m output rows (ystride apart) the n
// value rows (vstride bytes apart) weighted by p (pstride apart),
// prefetching the same bytes of next. Columns go in blocks of 128 (m <=
// 2) or 64 (m = 4), then one step at a time. Registers: DI y, R9/R13
// ystride x1/x3, R8 p, R12/R14 pstride x1/x3, SI v, R10 vstride, R11
// next-v, CX steps left, AX/BX/DX the block's weights, values and rows
// left; Z0-Z15 sums, Z16-Z23 values, Z24-Z27 weights, Z28-Z31 q8_0 scales.
func attnAxpy512(a *asm, t attnType, m int) {
	name := fmt.Sprintf("axpy%sx%dAVX512", t.name, m)
	l := func(s string) string { return fmt.Sprintf("ax%s%d%s", t.name, m, s) }
	a.raw("// func %s(y []float32, ystride int, p []float32, pstride, n int, v []byte, vstride, chunks int, next []byte)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-136", name)
	attnAxpyArgs(a)
	a.op("MOVQ next_base+112(FP), R11")
	a.op("SUBQ SI, R11")
	a.op("MOVQ chunks+104(FP), CX")
	a.op("CMPQ n+64(FP), $0")
	a.op("JEQ %s", l("end"))
	attnAxpyColumns(a, t, m, l, "n+64(FP)", l("end"))
	a.label(l("end"))
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// attnAxpyArgs loads the arguments the axpy kernels share (y to vstride).
func attnAxpyArgs(a *asm) {
	a.op("MOVQ y_base+0(FP), DI")
	a.op("MOVQ ystride+24(FP), R9")
	a.op("SHLQ $2, R9")
	a.op("LEAQ (R9)(R9*2), R13")
	a.op("MOVQ p_base+32(FP), R8")
	a.op("MOVQ pstride+56(FP), R12")
	a.op("SHLQ $2, R12")
	a.op("LEAQ (R12)(R12*2), R14")
	a.op("MOVQ v_base+72(FP), SI")
	a.op("MOVQ vstride+96(FP), R10")
}

// attnAxpyColumns emits the weighted sums of CX steps of columns (big at a
// time, then one) over the value rows counted by rows, moving DI and SI
// on, then jumps to end.
func attnAxpyColumns(a *asm, t attnType, m int, l func(string) string, rows, end string) {
	big := 128 / t.block
	if m == 4 {
		big = 64 / t.block
	}
	groups := []int{big, 1}
	for gi, g := range groups {
		next := end
		if gi+1 < len(groups) {
			next = l(fmt.Sprint("c", groups[gi+1]))
		}
		a.label(l(fmt.Sprint("c", g)))
		a.op("CMPQ CX, $%d", g)
		a.op("JLT %s", next)
		attnAxpyBlock(a, t, m, g, l(fmt.Sprint("r", g)), rows)
		a.op("ADDQ $%d, DI", 4*t.block*g)
		a.op("ADDQ $%d, SI", t.bytes*g)
		a.op("SUBQ $%d, CX", g)
		a.op("JMP %s", l(fmt.Sprint("c", g)))
	}
}

// attnAxpyBlock emits the weighted sums of g steps of columns over the
// value rows counted by rows (an operand).
func attnAxpyBlock(a *asm, t attnType, m, g int, loop, rows string) {
	vecs := g * t.block / 16 // ZMM registers per output row
	acc := func(j, c int) int { return j*vecs + c }
	yrow := func(c, j int) string { return rowAddr(64*c, "DI", j, "R9", "R13") }
	for j := 0; j < m; j++ {
		for c := 0; c < vecs; c++ {
			a.op("VMOVUPS %s, Z%d", yrow(c, j), acc(j, c))
		}
	}
	a.op("MOVQ R8, AX")
	a.op("MOVQ SI, BX")
	a.op("MOVQ %s, DX", rows)
	a.label(loop)
	for off := 0; off < t.bytes*g; off += 64 {
		a.op("%s %d(BX)(R11*1)", t.prefetch, off)
	}
	for c := 0; c < vecs; c++ {
		r := 16 + c
		if t.name == attnF16.name {
			a.op("VCVTPH2PS %d(BX), Z%d", 32*c, r)
			continue
		}
		if t.name == attnF32.name {
			a.op("VMOVUPS %d(BX), Z%d", 64*c, r)
			continue
		}
		blk, half := c/2, c%2
		s := 28 + blk%4
		if half == 0 {
			a.op("VPBROADCASTW %d(BX), Y%d", 34*blk, s)
			a.op("VCVTPH2PS Y%d, Z%d", s, s)
		}
		a.op("VPMOVSXBD %d(BX), Z%d", 34*blk+2+16*half, r)
		a.op("VCVTDQ2PS Z%d, Z%d", r, r)
		a.op("VMULPS Z%d, Z%d, Z%d", s, r, r)
	}
	for j := 0; j < m; j++ {
		w := 24 + j
		a.op("VBROADCASTSS %s, Z%d", rowAddr(0, "AX", j, "R12", "R14"), w)
		for c := 0; c < vecs; c++ {
			a.op("VFMADD231PS Z%d, Z%d, Z%d", 16+c, w, acc(j, c))
		}
	}
	a.op("ADDQ $4, AX")
	a.op("ADDQ R10, BX")
	a.op("DECQ DX")
	a.op("JNZ %s", loop)
	for j := 0; j < m; j++ {
		for c := 0; c < vecs; c++ {
			a.op("VMOVUPS Z%d, %s", acc(j, c), yrow(c, j))
		}
	}
}

// attnAVX2File is the AVX2 tier's q8_0 row dequantization
// (attn_avx2_amd64.s), which its attention over a q8_0 cache runs before
// the float32 kernels.
func attnAVX2File() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw("// func dequantQ8AVX2(dst []float32, src []byte, blocks int)")
	a.raw("// dst[32b+j] = int8(src[34b+2+j]) * fp16(src[34b:]), exact.")
	a.raw("TEXT ·dequantQ8AVX2(SB), NOSPLIT, $0-56")
	a.op("MOVQ dst_base+0(FP), DI")
	a.op("MOVQ src_base+24(FP), SI")
	a.op("MOVQ blocks+48(FP), CX")
	a.op("TESTQ CX, CX")
	a.op("JEQ dqdone")
	a.label("dqloop")
	a.op("VPBROADCASTW (SI), X4")
	a.op("VCVTPH2PS X4, Y4")
	for i := 0; i < 4; i++ {
		a.op("VPMOVSXBD %d(SI), Y%d", 2+8*i, i)
		a.op("VCVTDQ2PS Y%d, Y%d", i, i)
		a.op("VMULPS Y4, Y%d, Y%d", i, i)
		a.op("VMOVUPS Y%d, %d(DI)", i, 32*i)
	}
	a.op("ADDQ $34, SI")
	a.op("ADDQ $128, DI")
	a.op("DECQ CX")
	a.op("JNZ dqloop")
	a.label("dqdone")
	a.op("VZEROUPPER")
	a.op("RET")
	return a
}
