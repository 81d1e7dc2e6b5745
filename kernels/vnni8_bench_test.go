package kernels_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// BenchmarkPackedRows: the packed kernels of the tier in use on one
// weight tile (L2) with four, eight and, where the tier has them
// (AMX), 32 (Q4_K) or 16 (Q4_0) activation rows per weight load,
// alternated in each iteration, in multiply-adds per second of thread CPU
// time (median), and the median ratios eight/four and wide/eight.
func BenchmarkPackedRows(b *testing.B) {
	const n, rows, cols = 64, 3072, 2048
	rng := newRNG(57)
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0} {
		w := randomMatrix(rng, typ, rows, cols)
		x := randomVec(rng, n*cols)
		out := make([]float32, n*rows)
		b.Run(typ.String(), func(b *testing.B) {
			if !kernels.PackedVec8(kernels.Tier(), typ) {
				b.Skip("no eight-row kernel in this tier")
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			kernels.Prepare(w)
			defer kernels.Release(w)
			var q kernels.QuantizedActs
			q.Quantize(typ, x, n)
			g := kernels.PackTileGroups(w) &^ 3 // the AVX-512 Q4_K/Q4_0 kernels take four groups at a time
			macs := float64(g * 8 * cols * n)
			widths := []int{4, 8}
			if wide := kernels.PackedWide(kernels.Tier(), typ); wide > 0 {
				widths = append(widths, wide)
			}
			rates := make([][]float64, len(widths))
			var r84, rw8 []float64
			for b.Loop() {
				for j, k := range widths {
					c0 := threadCPU()
					for i := 0; i+k <= n; i += k {
						kernels.PackedTile(w, out[i*rows:], rows, g, &q, i, k)
					}
					rates[j] = append(rates[j], macs/(threadCPU()-c0).Seconds()/1e9)
				}
				r84 = append(r84, rates[1][len(rates[1])-1]/rates[0][len(rates[0])-1])
				if len(widths) > 2 {
					rw8 = append(rw8, rates[2][len(rates[2])-1]/rates[1][len(rates[1])-1])
				}
			}
			for j, k := range widths {
				b.ReportMetric(median(rates[j]), fmt.Sprintf("vec%d-GMAC/s", k))
			}
			b.ReportMetric(median(r84), "vec8/vec4")
			if len(rw8) > 0 {
				b.ReportMetric(median(rw8), "wide/vec8")
			}
		})
	}
}

// BenchmarkPaddedBatch: MatMul of a prepared Spark-1.7B-sized projection
// (3072 x 2048, weights from memory as in decode) with batches of 5-7
// activation rows on one thread, the last rows run padded to eight
// through the eight-row kernel or four and one at a time, alternated in
// each iteration; median ratio of the times (unpadded/padded: above 1,
// padding pays).
func BenchmarkPaddedBatch(b *testing.B) {
	defer kernels.SetThreads(0)
	const rows, cols = 3072, 2048
	rng := newRNG(59)
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0} {
		w := randomMatrix(rng, typ, rows, cols)
		for _, n := range []int{5, 6, 7} {
			x := randomVec(rng, n*cols)
			out := make([]float32, n*rows)
			b.Run(fmt.Sprintf("%s/n=%d", typ, n), func(b *testing.B) {
				if !kernels.PackedVec8(kernels.Tier(), typ) {
					b.Skip("no eight-row kernel in this tier")
				}
				kernels.SetThreads(1)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				kernels.Prepare(w)
				defer kernels.Release(w)
				defer kernels.SetPadRows(kernels.SetPadRows(5))
				var ratio []float64
				for b.Loop() {
					var d [2]float64
					for j, pad := range []int{5, 8} {
						kernels.SetPadRows(pad)
						c0 := threadCPU()
						kernels.MatMul(out, w, x, n)
						d[j] = (threadCPU() - c0).Seconds()
					}
					ratio = append(ratio, d[1]/d[0])
				}
				b.ReportMetric(median(ratio), "unpadded/padded")
			})
		}
	}
}
