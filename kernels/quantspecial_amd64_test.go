//go:build amd64 && gc && !purego

package kernels

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/tensor"
)

// TestQuantActsSpecialValues: the assembly activation quantizers (q8a for
// Q4_0/Q8_0 weights, q8ka for the k-quants) write their Go twins' bytes
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
		for _, q := range []struct {
			name       string
			fast, twin func([]byte, []float32)
			bytes      int
			nan        bool // compared on blocks with NaN
		}{
			{"q8a", quantQ8aFast, quantQ8a, len(x) / 32 * 72, false},
			{"q8ka", quantQ8kaFast, quantQ8ka, len(x) / tensor.QK_K * 308, true},
		} {
			if !q.nan && slices.ContainsFunc(x, func(v float32) bool { return v != v }) {
				continue
			}
			got, want := make([]byte, q.bytes), make([]byte, q.bytes)
			q.fast(got, x)
			q.twin(want, x)
			if !bytes.Equal(got, want) {
				i := 0
				for got[i] == want[i] {
					i++
				}
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
