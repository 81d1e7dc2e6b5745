package kernels_test

import (
	"math"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// The weight-path types (W4A8, W4A16, W8A8: one fp16 scale per 128
// elements) against the GGML types they are built from.

// w4AsQ4_0 rewrites a W4 row (W4A8/W4A16) as the Q4_0 row of the same
// values: each 16-byte sub-block becomes a Q4_0 block carrying the
// group's d.
func w4AsQ4_0(row []byte) []byte {
	var out []byte
	for g := 0; g < len(row); g += 66 {
		for s := 0; s < 4; s++ {
			out = append(out, row[g], row[g+1])
			out = append(out, row[g+2+16*s:g+18+16*s]...)
		}
	}
	return out
}

// w8AsQ8_0 is w4AsQ4_0 for W8A8 and Q8_0.
func w8AsQ8_0(row []byte) []byte {
	var out []byte
	for g := 0; g < len(row); g += 130 {
		for s := 0; s < 4; s++ {
			out = append(out, row[g], row[g+1])
			out = append(out, row[g+2+32*s:g+34+32*s]...)
		}
	}
	return out
}

// TestWeightPathMatchesGGML: a W4A8 (W8A8) row gives DotQ bit-identical
// to the Q4_0 (Q8_0) row holding the same values, with the same
// activation bytes; W4A16's DotQ is Dot, and the dequantized values
// agree. In the generic tier MatMul gives the same bits too.
func TestWeightPathMatchesGGML(t *testing.T) {
	rng := newRNG(50)
	for _, c := range []struct {
		typ, ggml tensor.Type
		conv      func([]byte) []byte
	}{{tensor.W4A8, tensor.Q4_0, w4AsQ4_0}, {tensor.W8A8, tensor.Q8_0, w8AsQ8_0}, {tensor.W4A16, tensor.Q4_0, w4AsQ4_0}} {
		for _, n := range []int{128, 384, 2048} {
			for trial := 0; trial < 5; trial++ {
				row := randomRow(rng, c.typ, n)
				grow := c.conv(row)
				if j := sameBits(dequant(c.typ, row, n), dequant(c.ggml, grow, n)); j >= 0 {
					t.Fatalf("%s n=%d: dequantized values differ from %s at %d", c.typ, n, c.ggml, j)
				}
				x := randomVec(rng, n)
				xq := kernels.QuantizeActivations(c.typ, x)
				if c.typ == tensor.W4A16 {
					if got, want := kernels.DotQ(c.typ, row, xq), kernels.Dot(c.typ, row, x); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("W4A16 n=%d: DotQ %v, Dot %v", n, got, want)
					}
					continue
				}
				if gq := kernels.QuantizeActivations(c.ggml, x); string(gq) != string(xq) {
					t.Fatalf("%s n=%d: activations differ from %s's", c.typ, n, c.ggml)
				}
				got, want := kernels.DotQ(c.typ, row, xq), kernels.DotQ(c.ggml, grow, xq)
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s n=%d trial %d: DotQ %v, %s %v", c.typ, n, trial, got, c.ggml, want)
				}
				if got, want := kernels.Dot(c.typ, row, x), kernels.Dot(c.ggml, grow, x); math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s n=%d: Dot %v, %s %v", c.typ, n, got, c.ggml, want)
				}
			}
		}
	}
	defer kernels.UseTier("generic")()
	const rows, cols, n = 13, 512, 3
	for _, c := range []struct {
		typ, ggml tensor.Type
		conv      func([]byte) []byte
	}{{tensor.W4A8, tensor.Q4_0, w4AsQ4_0}, {tensor.W8A8, tensor.Q8_0, w8AsQ8_0}} {
		w := randomMatrix(rng, c.typ, rows, cols)
		g := &tensor.Matrix{Name: "g", Type: c.ggml, Rows: rows, Cols: cols, Data: c.conv(w.Data)}
		x := randomVec(rng, n*cols)
		got, want := make([]float32, n*rows), make([]float32, n*rows)
		kernels.MatMul(got, w, x, n)
		kernels.MatMul(want, g, x, n)
		if j := sameBits(got, want); j >= 0 {
			t.Fatalf("%s: MatMul differs from %s at %d: %v vs %v", c.typ, c.ggml, j, got[j], want[j])
		}
	}
}

// TestWeightPathErrors: malformed rows and unsupported combinations panic
// with the type named.
func TestWeightPathErrors(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("W4A8 partial group", func() { kernels.Dot(tensor.W4A8, make([]byte, 66), make([]float32, 64)) })
	mustPanic("W8A8 short row", func() { kernels.DotQ(tensor.W8A8, make([]byte, 129), make([]byte, 4*34)) })
	mustPanic("W4A16 short acts", func() { kernels.DotQ(tensor.W4A16, make([]byte, 66), make([]byte, 4*127)) })
	mustPanic("W4A8 cols", func() {
		kernels.MatVec(make([]float32, 1), &tensor.Matrix{Name: "w", Type: tensor.W4A8, Rows: 1, Cols: 96, Data: make([]byte, 66)}, make([]float32, 96))
	})
	// W4A8 activations cannot serve a W4A16 matrix (float activations).
	var q kernels.QuantizedActs
	q.Quantize(tensor.W4A8, make([]float32, 128), 1)
	mustPanic("W4A16 with W4A8 acts", func() {
		kernels.MatMulQ(make([]float32, 1), &tensor.Matrix{Name: "w", Type: tensor.W4A16, Rows: 1, Cols: 128, Data: make([]byte, 66)}, &q)
	})
	mustPanic("Q4_K with W8A8 acts", func() {
		kernels.MatMulQ(make([]float32, 1), &tensor.Matrix{Name: "w", Type: tensor.Q4_K, Rows: 1, Cols: 256, Data: make([]byte, 144)}, &q)
	})
}
