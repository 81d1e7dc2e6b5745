package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
)

// BenchmarkConvCPU: one thread, the codec residual conv of BenchmarkConv
// and the register-only FMA loop alternated, both timed in thread CPU
// time (which a loaded machine disturbs far less than wall time);
// fma-share is the conv's FLOP rate over the loop's.
func BenchmarkConvCPU(b *testing.B) {
	for _, c := range []convCase{{768, 768, 7, 3, 512}, {768, 768, 1, 1, 512}, {384, 384, 7, 9, 2560}, {192, 192, 7, 9, 10240}, {96, 96, 7, 9, 30720}, {96, 96, 1, 1, 30720}, {6144, 1536, 2, 1, 64}, {1536, 1024, 7, 1, 64}, {768, 384, 2, 1, 320}, {192, 192, 1, 1, 1280}, {768, 768, 7, 9, 64}} {
		b.Run(fmt.Sprintf("%dx%dx%d_d%d_n%d", c.out, c.in, c.taps, c.dil, c.n), func(b *testing.B) { convCPU(b, c) })
	}
}

func convCPU(b *testing.B, c convCase) {
	m, bias, x := convData(rand.New(rand.NewPCG(1, 1)), c)
	w, _ := kernels.PackConv(m, c.taps, bias)
	dst := make([]float32, c.n*c.out)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev := kernels.Threads()
	kernels.SetThreads(1)
	defer kernels.SetThreads(prev)
	var convCPU, peakCPU float64
	var peakFlops float64
	for b.Loop() {
		t0 := threadCPU()
		kernels.Conv(dst, w, x, c.n, c.dil)
		t1 := threadCPU()
		peakFlops += kernels.FMAPeak(1<<18, 1)
		t2 := threadCPU()
		convCPU += (t1 - t0).Seconds()
		peakCPU += (t2 - t1).Seconds()
	}
	conv := 2 * float64(c.out*c.in*c.taps*c.n) * float64(b.N) / convCPU
	b.ReportMetric(conv/1e9, "conv-GFLOP/cpu-s")
	if peakFlops > 0 {
		b.ReportMetric(peakFlops/peakCPU/1e9, "peak-GFLOP/cpu-s")
		b.ReportMetric(conv/(peakFlops/peakCPU), "fma-share")
	}
}
