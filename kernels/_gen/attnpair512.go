package main

import "fmt"

// The AVX-512 f16 score kernel for prefill over the two query heads of a
// KV head's group that share keys (Qwen3: 16 query heads on 8 KV heads):
// four query rows of each against every key, so a pair of keys is loaded
// and widened once for eight rows, not four. Its queries are in a paired
// layout (kernels.PairQueries: each group of eight floats written twice),
// so each is one plain 64-byte load; the one-head kernel's VBROADCASTF64X4
// costs a shuffle on top of the load. On a loop of the one-head kernel's
// body with its operands in L1 (Zen 5), 64 FMAs took 47.7 cycles, 38.6
// with the queries' plain loads. BenchmarkDotRowsPairedF16 (Zen 5, one
// thread): 83.5-84.4 GMAC/s against 59.8-60.3 for a call per head. The
// FMA chains, their order and the reduction are dotF16x4AVX512's, so
// every score has its bits.

// attnDotPair512 emits dotF16Pair4AVX512(out []float32, ostride int, q
// []float32, qstride int, k []byte, kstride, n, steps int, scale float32,
// next []byte, ohead, qhead int): dotF16x4AVX512 for two heads, head 1's
// paired query rows qhead bytes after head 0's and its scores ohead bytes
// after. Registers as dotF16x4AVX512 but: R14 head 1's queries, Z16-Z31
// the sums (head e, row j, key pair p at 16 + 4*pairs*e + pairs*j + p),
// Z10/Z11 the reduction; the stack holds the steps left.
func attnDotPair512(a *asm) {
	const name = "dotF16Pair4AVX512"
	l := func(s string) string { return "adp" + s }
	a.raw("// func %s(out []float32, ostride int, q []float32, qstride int, k []byte, kstride, n, steps int, scale float32, next []byte, ohead, qhead int)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $8-160", name)
	attnDotArgs(a, attnF16, 4)
	a.op("MOVQ next_base+120(FP), R15")
	a.op("SUBQ DI, R15")
	attnKeyGroups(a, l, 4, func(g int) { attnDotPairGroup(a, g, l(fmt.Sprint("s", g))) })
}

// attnDotPairGroup emits the scores of g keys (g = 1: key 0 paired with
// itself) for both heads' four rows.
func attnDotPairGroup(a *asm, g int, loop string) {
	pairs := (g + 1) / 2
	acc := func(e, j, p int) int { return 16 + 4*pairs*e + pairs*j + p }
	key := func(off, i int) string {
		if g == 1 {
			i = 0
		}
		return keyAddr(off, i)
	}
	a.op("MOVQ SI, AX")
	a.op("MOVQ qhead+152(FP), R14")
	a.op("ADDQ SI, R14")
	a.op("MOVQ DI, BX")
	a.op("MOVQ steps+104(FP), CX")
	a.op("MOVQ CX, 0(SP)")
	for i := 0; i < 8*pairs; i++ {
		a.op("VPXORD Z%d, Z%d, Z%d", 16+i, 16+i, 16+i)
	}
	a.label(loop)
	a.op("LEAQ (BX)(R15*1), CX")
	for i := 0; i < g; i++ {
		a.op("PREFETCHT1 (CX)%s", []string{"", "(R10*1)", "(R10*2)", "(R11*1)"}[i])
	}
	for h := 0; h < 2; h++ {
		for p := 0; p < pairs; p++ {
			r := 8 + p
			a.op("VMOVDQU %s, X%d", key(16*h, 2*p), r)
			a.op("VINSERTI128 $1, %s, Y%d, Y%d", key(16*h, 2*p+1), r, r)
			a.op("VCVTPH2PS Y%d, Z%d", r, r)
		}
		for e, base := range []string{"AX", "R14"} {
			for j := 0; j < 4; j++ {
				qr := 12 + j%2
				a.op("VMOVUPS %s, Z%d", rowAddr(64*h, base, j, "R12", "R13"), qr)
				for p := 0; p < pairs; p++ {
					a.op("VFMADD231PS Z%d, Z%d, Z%d", 8+p, qr, acc(e, j, p))
				}
			}
		}
	}
	a.op("ADDQ $128, AX")
	a.op("ADDQ $128, R14")
	a.op("ADDQ $32, BX")
	a.op("DECQ 0(SP)")
	a.op("JNZ %s", loop)
	a.op("LEAQ (R9)(R9*2), CX")
	a.op("MOVQ ohead+144(FP), AX")
	a.op("ADDQ R8, AX")
	for e, base := range []string{"R8", "AX"} {
		for j := 0; j < 4; j++ {
			pa, pb := acc(e, j, 0), acc(e, j, pairs-1)
			attnReduce4(a, pa, pb, 10, 11)
			dst := rowAddr(0, base, j, "R9", "CX")
			switch g {
			case 1:
				a.op("VMOVSS X%d, %s", 10, dst)
			case 2:
				a.op("VMOVLPS X%d, %s", 10, dst)
			default:
				a.op("VMOVUPS X%d, %s", 10, dst)
			}
		}
	}
}
