//go:build linux && amd64 && gc && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/siskin-ml/siskin/internal/cputime"
	"github.com/siskin-ml/siskin/tensor"
)

// BenchmarkPackedStream8: the AVX-512 tier's four- and eight-activation-row
// packed kernels (vec4; vec8: Q4_K and Q4_0 four groups at a time) on one
// thread over 256 MiB of packed weights (rows of streamCols columns), far
// past the last-level cache, as a batch of decode streams reads them
// ("dram"), and over one 256-row tile read
// again and again ("l2", as prefill), alternated pass by pass, in
// multiply-adds per second of thread CPU time (median), and the median
// ratio dram/l2.
func BenchmarkPackedStream8(b *testing.B) {
	for _, n := range []int{4, 8} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) { packedStreamRows(b, n) })
	}
}

func packedStreamRows(b *testing.B, n int) {
	if !supported[tierAVX512] {
		b.Skip("no AVX-512 VNNI")
	}
	defer setTier(setTier(tierAVX512))
	cols := streamCols
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0} {
		k := kernelSets[tierAVX512][typ]
		xs := k.actBytes(cols)
		xq := make([]byte, 8*xs)
		rng := rand.New(rand.NewPCG(1, 2))
		x := make([]float32, cols)
		for r := 0; r < 8; r++ {
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			k.quant(xq[r*xs:(r+1)*xs], x)
		}
		type place struct {
			w              []byte
			groups, blocks int
			reps           int
			out            []float32
		}
		var ps [2]place
		for i, size := range []int{256 << 20, 0} {
			w, groups, blocks := streamWeights(typ, cols, size)
			ps[i] = place{w, groups, blocks, max(1, (64<<20)/len(w)), make([]float32, 8*groups*packRows)}
		}
		b.Run(typ.String(), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var rate [2][]float64
			var ratio []float64
			for b.Loop() {
				for i, p := range ps {
					ostride := p.groups * packRows
					c0 := cputime.Thread()
					for range p.reps {
						if n == 4 {
							k.packed.vec4(p.out, ostride, p.w, p.groups, p.blocks, xq, xs)
						} else {
							k.packed.vec8(p.out, ostride, p.w, p.groups, p.blocks, xq, xs)
						}
					}
					macs := float64(p.reps) * float64(ostride) * float64(cols) * float64(n)
					rate[i] = append(rate[i], macs/(cputime.Thread()-c0).Seconds()/1e9)
				}
				ratio = append(ratio, rate[0][len(rate[0])-1]/rate[1][len(rate[1])-1])
			}
			b.ReportMetric(streamMedian(rate[0]), "dram-GMAC/s")
			b.ReportMetric(streamMedian(rate[1]), "l2-GMAC/s")
			b.ReportMetric(streamMedian(ratio), "dram/l2")
		})
	}
}

// streamCols is the weights' row width in BenchmarkPackedStream8: 2048,
// or STREAM_COLS (a multiple of 256).
var streamCols = func() int {
	if c, err := strconv.Atoi(os.Getenv("STREAM_COLS")); err == nil && c > 0 && c%256 == 0 {
		return c
	}
	return 2048
}()
