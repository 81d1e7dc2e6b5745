//go:build amd64 && gc && !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/tensor"
)

// TestQuantActsSpecialValues: the assembly activation quantizers (q8a for
// Q4_0/Q8_0 weights, AVX2 and AVX-512, q8ka for the k-quants) write their Go twins' bytes
// for blocks holding infinities, the largest floats, subnormals only,
// zeros only and signed zeros, and (q8ka) NaN, each beside an ordinary
// block. q8ka's scale, as ggml's reference, skips NaN (a strict >); q8a's
// absolute maximum is ggml's MAX chain, which keeps a NaN only as the
// block's last element, where eight SIMD lanes keep it as a lane's last:
// a NaN block is garbage either way, so q8a is not compared there.
func TestQuantActsSpecialValues(t *testing.T) {
	if !supported[tierAVX2] {
		t.Skip("no AVX2: the assembly quantizers need it")
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	sub := math.Float32frombits(3) // a subnormal
	cases := map[string]func(i int) float32{
		"nan first":     func(i int) float32 { return pick(i == 0, nan, float32(i%7)-3) },
		"nan last":      func(i int) float32 { return pick(i%32 == 31, nan, float32(i%5)-2) },
		"nan only":      func(int) float32 { return nan },
		"+inf":          func(i int) float32 { return pick(i%64 == 9, inf, float32(i%3)) },
		"-inf":          func(i int) float32 { return pick(i%64 == 9, -inf, float32(i%3)) },
		"inf and nan":   func(i int) float32 { return pick(i%2 == 0, inf, nan) },
		"max float":     func(i int) float32 { return pick(i%2 == 0, math.MaxFloat32, -math.MaxFloat32/3) },
		"subnormals":    func(i int) float32 { return sub * float32(1+i%4) },
		"zeros":         func(int) float32 { return 0 },
		"signed zeros":  func(i int) float32 { return pick(i%2 == 0, float32(math.Copysign(0, -1)), 0) },
		"one subnormal": func(i int) float32 { return pick(i == 5, -sub, 0) },
	}
	// One NaN or infinity at each position of a random block.
	base := make([]float32, tensor.QK_K)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range base {
		base[i] = float32(rng.NormFloat64())
	}
	for p := range tensor.QK_K {
		for _, v := range []float32{nan, inf, -inf} {
			cases[fmt.Sprintf("%v at %d", v, p)] = func(i int) float32 { return pick(i == p, v, base[i]) }
		}
	}
	for name, f := range cases {
		// Two super-blocks: the special one, then an ordinary one.
		x := make([]float32, 2*tensor.QK_K)
		for i := range tensor.QK_K {
			x[i], x[tensor.QK_K+i] = f(i), base[tensor.QK_K-1-i]
		}
		type quantizer struct {
			name       string
			fast, twin func([]byte, []float32)
			bytes      int
			nan        bool // compared on blocks with NaN
		}
		qs := []quantizer{
			{"q8a", quantQ8aFast, quantQ8a, len(x) / 32 * 72, false},
			{"q8ka", quantQ8kaFast, quantQ8ka, len(x) / tensor.QK_K * 308, true},
		}
		if supported[tierAVX512] { // the 16 blocks are one group of its kernel
			qs = append(qs, quantizer{"q8a avx512", quantQ8a512, quantQ8a, len(x) / 32 * 72, false},
				quantizer{"q8ka avx512", quantQ8ka512, quantQ8ka, len(x) / tensor.QK_K * 308, true})
		}
		for _, q := range qs {
			if !q.nan && slices.ContainsFunc(x, func(v float32) bool { return v != v }) {
				continue
			}
			got, want := make([]byte, q.bytes), make([]byte, q.bytes)
			q.fast(got, x)
			q.twin(want, x)
			if i := firstByteDiff(got, want); i >= 0 {
				t.Errorf("%s, %s: byte %d of %d: assembly %#x, Go %#x", name, q.name, i, q.bytes, got[i], want[i])
			}
		}
	}
}

func pick(c bool, a, b float32) float32 {
	if c {
		return a
	}
	return b
}

// TestQuant512Widths: the AVX-512 quantizers write their Go twins'
// bytes for rows of many widths (q8a: whole groups of 16 blocks in its
// kernel, the other widths through the AVX2 kernel), with magnitudes
// that vary from block to block.
func TestQuant512Widths(t *testing.T) {
	if !supported[tierAVX512] {
		t.Skip("no AVX-512 on this CPU: quantQ8aAVX512 and quantQ8kaAVX512 not run")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, q := range []struct {
		name       string
		fast, twin func([]byte, []float32)
		block      int
		bytes      func(int) int
	}{
		{"q8a", quantQ8a512, quantQ8a, 32, func(n int) int { return n / 32 * 72 }},
		{"q8ka", quantQ8ka512, quantQ8ka, tensor.QK_K, func(n int) int { return n / tensor.QK_K * 308 }},
	} {
		for _, n := range []int{32, 256, 480, 512, 544, 1024, 2048, 6144, 6176} {
			if n%q.block != 0 {
				continue
			}
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * float32(math.Pow(10, float64(i/32%9-4)))
			}
			got, want := make([]byte, q.bytes(n)), make([]byte, q.bytes(n))
			q.fast(got, x)
			q.twin(want, x)
			if i := firstByteDiff(got, want); i >= 0 {
				t.Errorf("%s, %d floats: byte %d of %d: assembly %#x, Go %#x", q.name, n, i, len(got), got[i], want[i])
			}
		}
	}
}

// BenchmarkQuant quantizes one 2048-float activation row (the
// Qwen3-1.7B width) to q8a and to q8ka with the AVX2 and, where the CPU
// has it, the AVX-512 kernel.
func BenchmarkQuant(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, 2048)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	dst := make([]byte, max(q8aBytes(len(x)), q8kaBytes(len(x))))
	for _, q := range []struct {
		name string
		f    func([]byte, []float32)
		tier tier
	}{
		{"q8a/avx2", quantQ8aFast, tierAVX2}, {"q8a/avx512", quantQ8a512, tierAVX512},
		{"q8ka/avx2", quantQ8kaFast, tierAVX2}, {"q8ka/avx512", quantQ8ka512, tierAVX512},
	} {
		b.Run(q.name, func(b *testing.B) {
			if !supported[q.tier] {
				b.Skip("not on this CPU")
			}
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				q.f(dst, x)
			}
		})
	}
}
