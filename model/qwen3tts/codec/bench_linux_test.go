package codec

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/cputime"
	"github.com/siskin-ml/siskin/kernels"
)

// BenchmarkRealDecodeCPU: BenchmarkRealDecode on one thread, the decode
// and the register-only FMA loop alternated and both timed in thread CPU
// time; fma-share is the codec's FLOP rate (FLOPsPerFrame) over the
// loop's: the kernels' share of the core's FMA peak, apart from the
// machine's load and from two-thread scaling.
func BenchmarkRealDecodeCPU(b *testing.B) {
	d := releasedDecoder(b)
	rng := rand.New(rand.NewPCG(1, 2))
	codes := make([]int32, 16*25)
	for i := range codes {
		codes[i] = int32(rng.IntN(2048))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev := kernels.Threads()
	kernels.SetThreads(1)
	defer kernels.SetThreads(prev)
	var codecCPU, peakCPU time.Duration
	var peakFlops float64
	for b.Loop() {
		t0 := cputime.Thread()
		if _, err := d.Decode(codes); err != nil {
			b.Fatal(err)
		}
		t1 := cputime.Thread()
		peakFlops += kernels.FMAPeak(1<<22, 1)
		t2 := cputime.Thread()
		codecCPU += t1 - t0
		peakCPU += t2 - t1
	}
	codec := d.FLOPsPerFrame() * 25 * float64(b.N) / codecCPU.Seconds()
	b.ReportMetric(codec/1e9, "codec-GFLOP/cpu-s")
	b.ReportMetric(float64(25*b.N)/12.5/codecCPU.Seconds(), "audio-s/cpu-s")
	if peakFlops > 0 {
		b.ReportMetric(peakFlops/peakCPU.Seconds()/1e9, "peak-GFLOP/cpu-s")
		b.ReportMetric(codec/(peakFlops/peakCPU.Seconds()), "fma-share")
	}
}
