package kernels_test

import (
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// TestMatMulQ: activations quantized once and applied to several matrices
// (of every type sharing the VecDotType, prepared or not) give exactly
// MatMul's results, in every tier, for several batch sizes and thread
// counts.
func TestMatMulQ(t *testing.T) {
	defer kernels.SetThreads(0)
	rng := newRNG(60)
	families := [][]tensor.Type{
		{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K},
		{tensor.Q4_0, tensor.Q8_0, tensor.W4A8, tensor.W8A8},
		{tensor.Q4_1},
		{tensor.F32, tensor.F16, tensor.BF16, tensor.W4A16},
	}
	const cols = 512
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		for _, fam := range families {
			var ws []*tensor.Matrix
			for _, typ := range fam {
				for _, rows := range []int{13, 40} {
					w := randomMatrix(rng, typ, rows, cols)
					ws = append(ws, w)
					p := randomMatrix(rng, typ, rows, cols)
					kernels.Prepare(p)
					t.Cleanup(func() { kernels.Release(p) })
					ws = append(ws, p)
				}
			}
			var q kernels.QuantizedActs
			for _, n := range []int{1, 4, 7} {
				x := randomVec(rng, n*cols)
				q.Quantize(fam[len(fam)-1], x, n)
				if q.Rows() != n {
					t.Fatalf("Rows() = %d, want %d", q.Rows(), n)
				}
				for _, th := range []int{1, 2} {
					kernels.SetThreads(th)
					for _, w := range ws {
						want := make([]float32, n*w.Rows)
						kernels.MatMul(want, w, x, n)
						got := make([]float32, n*w.Rows)
						kernels.MatMulQ(got, w, &q)
						if j := sameBits(got, want); j >= 0 {
							t.Fatalf("%s %s (prepared %v) n=%d: MatMulQ differs from MatMul at %d: %v vs %v",
								tierName, w.Type, kernels.IsPrepared(w), n, j, got[j], want[j])
						}
					}
				}
			}
		}
		restore()
	}
}

// TestQuantizeAfter: QuantizeAfter with SiLUMul as its pre gives the
// activations, and MatMulQ the results, of SiLUMul over every row first
// and then Quantize, in every tier, for several batch sizes and thread
// counts (the rows are rewritten in place in both).
func TestQuantizeAfter(t *testing.T) {
	defer kernels.SetThreads(0)
	rng := newRNG(62)
	const rows, cols = 24, 768
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0, tensor.W4A8, tensor.F16} {
			w := randomMatrix(rng, typ, rows, cols)
			kernels.Prepare(w)
			for _, n := range []int{1, 5, 40} {
				for _, th := range []int{1, 2} {
					kernels.SetThreads(th)
					x, y := randomVec(rng, n*cols), randomVec(rng, n*cols)
					x2 := append([]float32(nil), x...)
					for i := 0; i < n; i++ {
						kernels.SiLUMul(x[i*cols:(i+1)*cols], y[i*cols:(i+1)*cols])
					}
					var want, got kernels.QuantizedActs
					want.Quantize(typ, x, n)
					got.QuantizeAfter(typ, x2, n, func(row []float32, i int) { kernels.SiLUMul(row, y[i*cols:(i+1)*cols]) })
					if j := sameBits(x2, x); j >= 0 {
						t.Fatalf("%s %s n=%d threads=%d: row element %d rewritten to %v, want %v", tierName, typ, n, th, j, x2[j], x[j])
					}
					o1, o2 := make([]float32, n*rows), make([]float32, n*rows)
					kernels.MatMulQ(o1, w, &want)
					kernels.MatMulQ(o2, w, &got)
					if j := sameBits(o2, o1); j >= 0 {
						t.Fatalf("%s %s n=%d threads=%d: MatMulQ after QuantizeAfter differs at %d: %v vs %v", tierName, typ, n, th, j, o2[j], o1[j])
					}
				}
			}
			kernels.Release(w)
		}
		restore()
	}
}

// TestMatMulQs: several weights on the same activations as one job give
// exactly MatMul's results for each (prepared weights of the sizes a layer
// has and ragged ones, mixed types of one VecDotType, an unprepared one
// among them), in every tier, for several batch sizes and thread counts.
func TestMatMulQs(t *testing.T) {
	defer kernels.SetThreads(0)
	rng := newRNG(62)
	families := [][]tensor.Type{
		{tensor.Q4_K, tensor.Q6_K, tensor.Q4_K},
		{tensor.Q4_0, tensor.Q8_0, tensor.W4A8},
	}
	const cols = 512
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		for _, fam := range families {
			var ws []*tensor.Matrix
			for i, typ := range fam {
				w := randomMatrix(rng, typ, []int{256, 43, 17}[i], cols)
				prepareGuarded(t, w)
				ws = append(ws, w)
			}
			mixed := append([]*tensor.Matrix{randomMatrix(rng, fam[0], 24, cols)}, ws[1:]...)
			var q kernels.QuantizedActs
			for _, n := range []int{1, 4, 9} {
				x := randomVec(rng, n*cols)
				q.Quantize(fam[0], x, n)
				for _, th := range []int{1, 2, 3} {
					kernels.SetThreads(th)
					for _, set := range [][]*tensor.Matrix{ws, mixed} {
						outs := make([][]float32, len(set))
						for i, w := range set {
							outs[i] = make([]float32, n*w.Rows)
						}
						kernels.MatMulQs(outs, set, &q)
						for i, w := range set {
							want := make([]float32, n*w.Rows)
							kernels.MatMul(want, w, x, n)
							if j := sameBits(outs[i], want); j >= 0 {
								t.Fatalf("%s %s %dx%d (prepared %v) n=%d threads=%d: MatMulQs differs from MatMul at %d: %v vs %v",
									tierName, w.Type, w.Rows, w.Cols, kernels.IsPrepared(w), n, th, j, outs[i][j], want[j])
							}
						}
					}
				}
			}
		}
		restore()
	}
}

// TestMatMulQMismatch: MatMulQ refuses activations quantized for another
// VecDotType, width or tier.
func TestMatMulQMismatch(t *testing.T) {
	rng := newRNG(61)
	expectPanic := func(what, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), want) {
				t.Errorf("%s: panic %v, want one mentioning %q", what, r, want)
			}
		}()
		f()
	}
	var q kernels.QuantizedActs
	q.Quantize(tensor.Q4_K, randomVec(rng, 2*512), 2)
	out := make([]float32, 2*8)
	expectPanic("type", "cannot use", func() { kernels.MatMulQ(out, randomMatrix(rng, tensor.Q8_0, 8, 512), &q) })
	expectPanic("float", "cannot use", func() { kernels.MatMulQ(out, randomMatrix(rng, tensor.F16, 8, 512), &q) })
	expectPanic("width", "columns", func() { kernels.MatMulQ(out, randomMatrix(rng, tensor.Q6_K, 8, 256), &q) })
	expectPanic("output", "output", func() { kernels.MatMulQ(out[:5], randomMatrix(rng, tensor.Q6_K, 8, 512), &q) })
	if tiers := kernels.Tiers(); len(tiers) > 1 {
		restore := kernels.UseTier(tiers[1])
		q.Quantize(tensor.Q4_K, randomVec(rng, 2*512), 2)
		restore()
		restore = kernels.UseTier("generic")
		expectPanic("tier", "tier", func() { kernels.MatMulQ(out, randomMatrix(rng, tensor.Q4_K, 8, 512), &q) })
		restore()
	}
}
