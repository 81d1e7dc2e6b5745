package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/siskin-ml/siskin/tensor"
)

// allTiers lists every tier; the tests skip the unsupported ones.
func allTiers() []tier {
	var ts []tier
	for t := tier(0); t < numTiers; t++ {
		ts = append(ts, t)
	}
	return ts
}

// TestAttentionRandomShapes: in each SIMD tier, on random shapes (widths
// 0-300 including odd ones, m = 0..8 queries, up to 40 keys, padded
// strides), the multi kernels equal the one-row kernels bit for bit, the
// f16 kernels equal the f32 ones on the widened rows bit for bit, and
// the results are within 1e-6 of the sum of |terms| of the generic twins
// (reordered float32 sums, FMA against separate multiply and add).
func TestAttentionRandomShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	iters := 300
	if testing.Short() {
		iters = 80
	}
	for _, tr := range allTiers() {
		if tr == tierGeneric || !supported[tr] {
			continue
		}
		prev := setTier(tr)
		for it := 0; it < iters; it++ {
			width := r.IntN(301)
			if r.IntN(2) == 0 {
				width = 8 * r.IntN(33)
			}
			m, n := r.IntN(9), r.IntN(41)
			qs, ks, os := width+r.IntN(5), width+r.IntN(9), n+r.IntN(3)
			q := normals(r, max(0, (m-1)*qs+width))
			k16 := make([]uint16, max(0, (n-1)*ks+width))
			k := make([]float32, len(k16))
			for i := range k16 {
				k16[i] = tensor.Float32ToFP16(float32(r.NormFloat64()))
				k[i] = tensor.FP16ToFloat32(k16[i])
			}
			out0 := normals(r, max(0, (m-1)*os+n))
			got := append([]float32(nil), out0...)
			DotRowsMultiNext(got, os, q, qs, m, width, k, ks, n, 0.125, k)
			rows := append([]float32(nil), out0...)
			twin := append([]float32(nil), out0...)
			for j := 0; j < m; j++ {
				DotRows(rows[j*os:j*os+n], q[j*qs:j*qs+width], k, ks, 0.125)
				for i := 0; i < n; i++ {
					rows2 := VecDot(q[j*qs:j*qs+width], k[i*ks:i*ks+width]) * 0.125
					if math.Float32bits(rows2) != math.Float32bits(rows[j*os+i]) {
						t.Fatalf("%s width %d: DotRows[%d] = %v, VecDot %v", tr, width, i, rows[j*os+i], rows2)
					}
				}
			}
			dotRowsMultiGo(twin, os, q, qs, m, width, k, ks, n, 0.125)
			f16 := append([]float32(nil), out0...)
			DotRowsMultiNextF16(f16, os, q, qs, m, width, k16, ks, n, 0.125, k16)
			for j := 0; j < m; j++ {
				for i := 0; i < n; i++ {
					x := j*os + i
					if math.Float32bits(got[x]) != math.Float32bits(rows[x]) || math.Float32bits(f16[x]) != math.Float32bits(rows[x]) {
						t.Fatalf("%s width %d m %d n %d [%d][%d]: multi %v, f16 %v, rows %v", tr, width, m, n, j, i, got[x], f16[x], rows[x])
					}
					mag := 0.0
					for e := 0; e < width; e++ {
						mag += math.Abs(float64(q[j*qs+e]) * float64(k[i*ks+e]))
					}
					if d := math.Abs(float64(got[x] - twin[x])); d > 1e-6*0.125*mag {
						t.Fatalf("%s width %d m %d n %d [%d][%d]: %v, generic twin %v", tr, width, m, n, j, i, got[x], twin[x])
					}
				}
			}

			ys, ps := width+r.IntN(5), n+r.IntN(3)
			y0 := normals(r, max(0, (m-1)*ys+width))
			p := normals(r, max(0, (m-1)*ps+n))
			y := append([]float32(nil), y0...)
			AxpyRowsMultiNext(y, ys, m, width, p, ps, n, k, ks, k)
			yr := append([]float32(nil), y0...)
			yt := append([]float32(nil), y0...)
			yh := append([]float32(nil), y0...)
			for j := 0; j < m; j++ {
				AxpyRows(yr[j*ys:j*ys+width], p[j*ps:j*ps+n], k, ks)
			}
			axpyRowsMultiGo(yt, ys, m, width, p, ps, n, k, ks)
			AxpyRowsMultiNextF16(yh, ys, m, width, p, ps, n, k16, ks, k16)
			for j := 0; j < m; j++ {
				for e := 0; e < width; e++ {
					x := j*ys + e
					if math.Float32bits(y[x]) != math.Float32bits(yr[x]) || math.Float32bits(yh[x]) != math.Float32bits(yr[x]) {
						t.Fatalf("%s width %d m %d n %d [%d][%d]: multi %v, f16 %v, rows %v", tr, width, m, n, j, e, y[x], yh[x], yr[x])
					}
					mag := math.Abs(float64(y0[x]))
					for i := 0; i < n; i++ {
						mag += math.Abs(float64(p[j*ps+i]) * float64(k[i*ks+e]))
					}
					if d := math.Abs(float64(y[x] - yt[x])); d > 1e-6*mag {
						t.Fatalf("%s width %d m %d n %d [%d][%d]: %v, generic twin %v", tr, width, m, n, j, e, y[x], yt[x])
					}
				}
			}
		}
		setTier(prev)
	}
}
