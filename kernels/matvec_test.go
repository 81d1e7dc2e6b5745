package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// TestMatVecIsRowDots: in the generic tier MatVec equals DotQ of each row
// with the quantized activations (Dot for float weights), and MatVecFloat
// equals Dot. (The SIMD tiers are held to the tolerances of tier_test.go.)
func TestMatVecIsRowDots(t *testing.T) {
	defer kernels.UseTier("generic")()
	rng := newRNG(10)
	for _, typ := range allTypes {
		w := randomMatrix(rng, typ, 37, 512)
		x := randomVec(rng, w.Cols)
		out := make([]float32, w.Rows)
		outF := make([]float32, w.Rows)
		kernels.MatVec(out, w, x)
		kernels.MatVecFloat(outF, w, x)
		xq := kernels.QuantizeActivations(typ, x)
		for r := 0; r < w.Rows; r++ {
			want := kernels.DotQ(typ, w.Row(r), xq)
			if floatActs(typ) {
				want = kernels.Dot(typ, w.Row(r), x)
			}
			if out[r] != want {
				t.Errorf("%s row %d: MatVec %v, want %v", typ, r, out[r], want)
			}
			if f := kernels.Dot(typ, w.Row(r), x); outF[r] != f {
				t.Errorf("%s row %d: MatVecFloat %v, want %v", typ, r, outF[r], f)
			}
		}
	}
}

// TestMatMulMatchesMatVec: every output row of a batch is bit-identical to
// MatVec on that activation row.
func TestMatMulMatchesMatVec(t *testing.T) {
	rng := newRNG(11)
	for _, typ := range allTypes {
		for _, n := range []int{1, 3, 8} {
			w := randomMatrix(rng, typ, 96, 768)
			x := randomVec(rng, n*w.Cols)
			out := make([]float32, n*w.Rows)
			kernels.MatMul(out, w, x, n)
			one := make([]float32, w.Rows)
			for i := 0; i < n; i++ {
				kernels.MatVec(one, w, x[i*w.Cols:(i+1)*w.Cols])
				if j := sameBits(out[i*w.Rows:(i+1)*w.Rows], one); j >= 0 {
					t.Errorf("%s n=%d row %d: MatMul[%d] = %v, MatVec %v", typ, n, i, j, out[i*w.Rows+j], one[j])
				}
			}
		}
	}
}

// TestThreadInvariance: results do not depend on the thread count, on
// matrices large enough to be split.
func TestThreadInvariance(t *testing.T) {
	defer kernels.SetThreads(0)
	rng := newRNG(12)
	for _, typ := range allTypes {
		w := randomMatrix(rng, typ, 512, 1024)
		const n = 3
		x := randomVec(rng, n*w.Cols)
		var ref []float32
		for _, th := range []int{1, 2, 7, 16} {
			kernels.SetThreads(th)
			if kernels.Threads() != th {
				t.Fatalf("Threads() = %d after SetThreads(%d)", kernels.Threads(), th)
			}
			out := make([]float32, n*w.Rows)
			kernels.MatMul(out, w, x, n)
			vec := make([]float32, w.Rows)
			kernels.MatVecFloat(vec, w, x[:w.Cols])
			out = append(out, vec...)
			if ref == nil {
				ref = out
				continue
			}
			if j := sameBits(out, ref); j >= 0 {
				t.Errorf("%s: %d threads differ at %d: %v vs %v", typ, th, j, out[j], ref[j])
			}
		}
	}
}

func TestMatVecPanics(t *testing.T) {
	w := &tensor.Matrix{Name: "w", Type: tensor.Q8_0, Rows: 2, Cols: 32, Data: make([]byte, 68)}
	for name, f := range map[string]func(){
		"short x":   func() { kernels.MatVec(make([]float32, 2), w, make([]float32, 31)) },
		"short out": func() { kernels.MatVec(make([]float32, 1), w, make([]float32, 32)) },
		"short data": func() {
			kernels.MatVec(make([]float32, 2), &tensor.Matrix{Type: tensor.Q8_0, Rows: 2, Cols: 32, Data: make([]byte, 67)}, make([]float32, 32))
		},
		"batch x": func() { kernels.MatMul(make([]float32, 4), w, make([]float32, 32), 2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// BenchmarkMatVec: one activation row (decode) through every tier, on a
// square 2048x2048 matrix and the 6656x2048 / 2048x6656 shapes of a
// 1.7B model's MLP. MB/s counts weight bytes read.
func BenchmarkMatVec(b *testing.B) {
	shapes := [][2]int{{2048, 2048}, {6656, 2048}, {2048, 6656}}
	rng := newRNG(13)
	for _, typ := range allTypes {
		for _, sh := range shapes {
			rows, cols := sh[0], sh[1]
			w := randomMatrix(rng, typ, rows, cols)
			x := randomVec(rng, cols)
			out := make([]float32, rows)
			for _, tierName := range kernels.Tiers() {
				b.Run(fmt.Sprintf("%s/%s/%dx%d", typ, tierName, rows, cols), func(b *testing.B) {
					defer kernels.UseTier(tierName)()
					b.SetBytes(int64(len(w.Data)))
					for b.Loop() {
						kernels.MatVec(out, w, x)
					}
					b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}

// BenchmarkMatMul: a prefill-sized batch of activation rows.
func BenchmarkMatMul(b *testing.B) {
	const rows, cols, n = 2048, 2048, 64
	rng := newRNG(15)
	x := randomVec(rng, n*cols)
	out := make([]float32, n*rows)
	for _, typ := range allTypes {
		w := randomMatrix(rng, typ, rows, cols)
		for _, tierName := range kernels.Tiers() {
			b.Run(fmt.Sprintf("%s/%s/%dx%dx%d", typ, tierName, rows, cols, n), func(b *testing.B) {
				defer kernels.UseTier(tierName)()
				for b.Loop() {
					kernels.MatMul(out, w, x, n)
				}
				b.ReportMetric(float64(n*rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}

func BenchmarkMatVecFloat(b *testing.B) {
	const rows, cols = 2048, 2048
	rng := newRNG(14)
	x := randomVec(rng, cols)
	out := make([]float32, rows)
	for _, typ := range []tensor.Type{tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		w := randomMatrix(rng, typ, rows, cols)
		b.Run(typ.String(), func(b *testing.B) {
			for b.Loop() {
				kernels.MatVecFloat(out, w, x)
			}
		})
	}
}

// TestMatVecSmallF32: MatVec is the plain product for a tiny F32 matrix.
func TestMatVecSmallF32(t *testing.T) {
	var data []byte
	for _, v := range []float32{1, 2, 3, -4, 5, -6} {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	w := &tensor.Matrix{Type: tensor.F32, Rows: 2, Cols: 3, Data: data}
	out := make([]float32, 2)
	kernels.MatVec(out, w, []float32{1, 1, 2})
	if out[0] != 9 || out[1] != -11 {
		t.Errorf("got %v, want [9 -11]", out)
	}
}
