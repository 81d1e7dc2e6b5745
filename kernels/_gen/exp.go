package main

import "fmt"

// The -exp flag writes variants of the one-row AVX-512 kernels (tuning
// below) into packk_exp_amd64.s, for timing against the committed ones
// with BenchmarkPackedStream, and prints their Go declarations and their
// registration in streamKernels (a test file's content). Neither file is
// committed:
//
//	(printf '//go:build linux && amd64 && gc && !purego\n\npackage kernels\n\nimport "github.com/siskin-ml/siskin/tensor"\n\n'; \
//	 go run ./_gen -exp -out .) > exp_decl_amd64_test.go

// expVariants: the variants -exp writes.
var expVariants = []tuning{
	{suffix: "A3k", aheadBytes: 3072},
	{suffix: "A5k", aheadBytes: 5120},
	{suffix: "A6k", aheadBytes: 6144},
}

func expFile() *asm {
	k := &asm{}
	k.b.WriteString(header)
	zConstants(k)
	var decl, reg string
	for _, v := range expVariants {
		tune = v
		q4k512(k, 1)
		q6k512(k, 1)
		q40z1(k)
		for _, n := range []string{"q4kPackVecAVX512", "q6kPackVecAVX512", "q4_0PackVecAVX512"} {
			decl += fmt.Sprintf("//go:noescape\nfunc %s%s(out []float32, w []byte, groups, blocks int, x []byte)\n\n", n, v.suffix)
		}
		for i, t := range []string{"Q4_K", "Q6_K", "Q4_0"} {
			n := []string{"q4kPackVecAVX512", "q6kPackVecAVX512", "q4_0PackVecAVX512"}[i]
			reg += fmt.Sprintf("\tstreamKernels[tensor.%s] = append(streamKernels[tensor.%s], streamKernel{%q, %s%s})\n", t, t, v.suffix, n, v.suffix)
		}
	}
	tune = tuning{}
	fmt.Print(decl)
	fmt.Printf("func init() {\n%s}\n", reg)
	return k
}
