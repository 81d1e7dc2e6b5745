package bench

import (
	"encoding/binary"
	"math"
	"sort"
	"time"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// Peak is a measured arithmetic throughput.
type Peak struct {
	Median, Min, Max float64 // GFLOP/s (multiply and add counted as two)
	Threads, Runs    int
}

// Probe shape: a 256 x 512 F32 weight (512 KiB, resident in a Zen 5 or
// recent Intel L2) times 64 activation rows, so the product is bound by
// the FMA units, not by memory.
const peakRows, peakCols, peakBatch = 256, 512, 64

// MeasureFMAPeak measures the FP32 FMA throughput reachable with threads
// threads, each of runs timed passes lasting about 100 ms after an
// untimed one; the median is reported. Where the kernel tier has one it
// runs kernels.FMAPeak, a register-only loop of independent FMA chains:
// the ceiling, since the codec's convolution tiles now beat siskin's
// float matrix product. On a tier without it (generic) it falls back to
// siskin's F32 matrix product over a cache-resident weight.
func MeasureFMAPeak(threads, runs int) Peak {
	if runs < 1 {
		runs = 1
	}
	prev := kernels.Threads()
	kernels.SetThreads(max(threads, 1))
	defer kernels.SetThreads(prev)
	if kernels.FMAPeak(1, 1) > 0 {
		// Each call starts its threads anew, so it must last long enough
		// (about 5 ms at 2 FMAs a cycle) for their start to be noise: at
		// 2^14 iterations (40 us) the second thread often began when the
		// first was done, and the peak read a half to two thirds of the
		// loop's rate on 2 vCPUs.
		return measure(runs, func() float64 { return kernels.FMAPeak(1<<21, kernels.Threads()) })
	}
	data := make([]byte, 4*peakRows*peakCols)
	for i := 0; i < len(data); i += 4 {
		binary.LittleEndian.PutUint32(data[i:], math.Float32bits(float32(i%97)/97-0.5))
	}
	w := &tensor.Matrix{Name: "fma-probe", Type: tensor.F32, Rows: peakRows, Cols: peakCols, Data: data}
	x := make([]float32, peakBatch*peakCols)
	for i := range x {
		x[i] = float32(i%89)/89 - 0.5
	}
	out := make([]float32, peakBatch*peakRows)
	flops := 2.0 * peakRows * peakCols * peakBatch
	return measure(runs, func() float64 {
		kernels.MatMul(out, w, x, peakBatch)
		return flops
	})
}

// measure times passes of step (which returns the float operations it
// did): an untimed 20 ms one, then runs of about 100 ms.
func measure(runs int, step func() float64) Peak {
	pass := func(d time.Duration) float64 {
		done, start := 0.0, time.Now()
		for time.Since(start) < d {
			done += step()
		}
		return done / time.Since(start).Seconds() / 1e9
	}
	pass(20 * time.Millisecond)
	rates := make([]float64, runs)
	for i := range rates {
		rates[i] = pass(100 * time.Millisecond)
	}
	sort.Float64s(rates)
	return Peak{Median: median(rates), Min: rates[0], Max: rates[len(rates)-1], Threads: kernels.Threads(), Runs: runs}
}
