package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotAxpyRowsMulti: DotRowsMulti and AxpyRowsMulti equal a DotRows
// and an AxpyRows per row bit for bit, in every tier (query counts
// around the four the SIMD kernels take at once, odd and even key counts,
// widths that are and are not multiples of 32, 16 and 8, odd ones,
// padded strides);
// and the SIMD tier is within 1e-6 of the sum of |terms| of the generic
// twins (float32 rounding of reordered sums, FMA against separate
// multiply and add).
func TestDotAxpyRowsMulti(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tierName := range allTiers() {
		if !supported[tierName] {
			continue
		}
		prev := setTier(tierName)
		for _, width := range []int{0, 1, 7, 8, 13, 16, 24, 32, 33, 40, 64, 96, 100, 128, 256} {
			for m := 0; m <= 8; m++ {
				for _, n := range []int{0, 1, 2, 3, 8, 33} {
					qs, ks, os := width+r.IntN(2)*8, width+r.IntN(3)*8+r.IntN(2), n+r.IntN(3)
					q := normals(r, max(0, (m-1)*qs+width))
					k := normals(r, max(0, (n-1)*ks+width))
					out := normals(r, max(0, (m-1)*os+n))
					orig := append([]float32(nil), out...)
					DotRowsMulti(out, os, q, qs, m, width, k, ks, n, 0.0625)
					want := append([]float32(nil), orig...)
					for j := 0; j < m; j++ {
						DotRows(want[j*os:j*os+n], q[j*qs:j*qs+width], k, ks, 0.0625)
					}
					for i := range out {
						if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s width %d m %d n %d: DotRowsMulti[%d] = %v, DotRows %v", tierName, width, m, n, i, out[i], want[i])
						}
					}
					// Prefetching other rows (a short slice: only its
					// address counts) changes nothing.
					next := append([]float32(nil), orig...)
					DotRowsMultiNext(next, os, q, qs, m, width, k, ks, n, 0.0625, normals(r, 3))
					for i := range next {
						if math.Float32bits(next[i]) != math.Float32bits(out[i]) {
							t.Fatalf("%s width %d m %d n %d: DotRowsMultiNext[%d] = %v, DotRowsMulti %v", tierName, width, m, n, i, next[i], out[i])
						}
					}
					twin := append([]float32(nil), orig...)
					dotRowsMultiGo(twin, os, q, qs, m, width, k, ks, n, 0.0625)
					for j := 0; j < m; j++ {
						for i := 0; i < n; i++ {
							mag := 0.0
							for e := 0; e < width; e++ {
								mag += math.Abs(float64(q[j*qs+e]) * float64(k[i*ks+e]))
							}
							if d := math.Abs(float64(out[j*os+i] - twin[j*os+i])); d > 1e-6*0.0625*mag {
								t.Fatalf("%s width %d m %d n %d: DotRowsMulti[%d][%d] = %v, generic twin %v", tierName, width, m, n, j, i, out[j*os+i], twin[j*os+i])
							}
						}
					}

					// The weighted sums: y (m rows of width) += p (m rows
					// of n) times the rows of k.
					ys, ps := width+r.IntN(2)*8, n+r.IntN(2)
					y := normals(r, max(0, (m-1)*ys+width))
					p := normals(r, max(0, (m-1)*ps+n))
					y0 := append([]float32(nil), y...)
					AxpyRowsMulti(y, ys, m, width, p, ps, n, k, ks)
					wantY := append([]float32(nil), y0...)
					for j := 0; j < m; j++ {
						AxpyRows(wantY[j*ys:j*ys+width], p[j*ps:j*ps+n], k, ks)
					}
					for i := range y {
						if math.Float32bits(y[i]) != math.Float32bits(wantY[i]) {
							t.Fatalf("%s width %d m %d n %d: AxpyRowsMulti[%d] = %v, AxpyRows %v", tierName, width, m, n, i, y[i], wantY[i])
						}
					}
					yn := append([]float32(nil), y0...)
					AxpyRowsMultiNext(yn, ys, m, width, p, ps, n, k, ks, normals(r, 5))
					for i := range yn {
						if math.Float32bits(yn[i]) != math.Float32bits(y[i]) {
							t.Fatalf("%s width %d m %d n %d: AxpyRowsMultiNext[%d] = %v, AxpyRowsMulti %v", tierName, width, m, n, i, yn[i], y[i])
						}
					}
					twinY := append([]float32(nil), y0...)
					axpyRowsMultiGo(twinY, ys, m, width, p, ps, n, k, ks)
					for j := 0; j < m; j++ {
						for e := 0; e < width; e++ {
							mag := math.Abs(float64(y0[j*ys+e]))
							for i := 0; i < n; i++ {
								mag += math.Abs(float64(p[j*ps+i]) * float64(k[i*ks+e]))
							}
							if d := math.Abs(float64(y[j*ys+e] - twinY[j*ys+e])); d > 1e-6*mag {
								t.Fatalf("%s width %d m %d n %d: AxpyRowsMulti[%d][%d] = %v, generic twin %v", tierName, width, m, n, j, e, y[j*ys+e], twinY[j*ys+e])
							}
						}
					}
				}
			}
		}
		setTier(prev)
	}
	defer func() {
		if recover() == nil {
			t.Error("DotRowsMulti past the end of q did not panic")
		}
	}()
	DotRowsMulti(make([]float32, 8), 2, make([]float32, 100), 32, 4, 32, make([]float32, 64), 32, 2, 1)
}

// BenchmarkAttentionRowsMulti: four query heads against 512 keys of a
// 256-float head, one row at a time and four at once.
func BenchmarkAttentionRowsMulti(b *testing.B) {
	const hd, kvd, n = 256, 512, 512
	r := rand.New(rand.NewPCG(5, 6))
	k := make([]float32, n*kvd)
	for i := range k {
		k[i] = float32(r.NormFloat64())
	}
	q := k[:4*hd]
	sc := make([]float32, 4*n)
	o := make([]float32, 4*hd)
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			for j := 0; j < 4; j++ {
				DotRows(sc[j*n:(j+1)*n], q[j*hd:(j+1)*hd], k, kvd, 0.0625)
			}
			clear(o)
			for j := 0; j < 4; j++ {
				AxpyRows(o[j*hd:(j+1)*hd], sc[j*n:(j+1)*n], k, kvd)
			}
		}
	})
	b.Run("multi", func(b *testing.B) {
		for b.Loop() {
			DotRowsMulti(sc, n, q, hd, 4, hd, k, kvd, n, 0.0625)
			clear(o)
			AxpyRowsMulti(o, hd, 4, hd, sc, n, n, k, kvd)
		}
	})
}
