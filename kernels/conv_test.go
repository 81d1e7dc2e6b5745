package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// guardedF32 returns n float32s that end at an unmapped page.
func guardedF32(t testing.TB, n int) []float32 {
	b := guarded(t, 4*n)
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}

type convCase struct{ out, in, taps, dil, n int }

// convCases cover ragged output blocks (1, 7, 33), every tile height and
// row tails (n up to 2 chunks plus a tail), one to seven taps and
// dilations.
var convCases = []convCase{
	{1, 5, 7, 1, 30}, {7, 3, 3, 2, 13}, {16, 1, 1, 1, 1}, {16, 17, 7, 3, 25},
	{32, 8, 1, 1, 12}, {33, 9, 2, 1, 49}, {48, 16, 7, 9, 100}, {64, 32, 3, 1, 7},
	{96, 24, 7, 1, 61}, {80, 40, 1, 1, 97},
}

func convData(rng *rand.Rand, c convCase) (*tensor.Matrix, []float32, []float32) {
	data := make([]byte, 4*c.out*c.taps*c.in)
	for i := 0; i < len(data); i += 4 {
		binary.LittleEndian.PutUint32(data[i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	m := &tensor.Matrix{Name: "conv", Type: tensor.F32, Rows: c.out, Cols: c.taps * c.in, Data: data}
	bias := make([]float32, c.out)
	for i := range bias {
		bias[i] = float32(rng.NormFloat64())
	}
	x := make([]float32, (c.n+(c.taps-1)*c.dil)*c.in)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return m, bias, x
}

// runConv runs Conv with x and dst at the end of guarded memory, with a
// sentinel row before dst.
func runConv(t *testing.T, w *kernels.ConvWeights, xs []float32, c convCase) []float32 {
	x := guardedF32(t, len(xs))
	copy(x, xs)
	buf := guardedF32(t, (c.n+1)*c.out)
	for i := range buf {
		buf[i] = sentinel
	}
	kernels.Conv(buf[c.out:], w, x, c.n, c.dil)
	for i := range c.out {
		if buf[i] != sentinel {
			t.Fatalf("%+v: Conv wrote before its output", c)
		}
	}
	return buf[c.out:]
}

// TestConvTiers compares every tier's Conv with a float64 reference. The
// tolerance is the worst-case error of a float32 sum of the K = taps*in+1
// terms: (K+1)·2^-24·Σ|terms|. The SIMD tiers must agree bit for bit
// (the same FMA chain per output).
func TestConvTiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range convCases {
		m, bias, x := convData(rng, c)
		w, err := kernels.PackConv(m, c.taps, bias)
		if err != nil {
			t.Fatal(err)
		}
		wf := unsafe.Slice((*float32)(unsafe.Pointer(&m.Data[0])), c.out*c.taps*c.in)
		var simd []float32
		for _, tier := range kernels.Tiers() {
			restore := kernels.UseTier(tier)
			got := runConv(t, w, x, c)
			accel := kernels.ConvAccelerated()
			restore()
			for tt := range c.n {
				for o := range c.out {
					want, mag := float64(bias[o]), math.Abs(float64(bias[o]))
					for j := range c.taps {
						for i := range c.in {
							p := float64(wf[o*c.taps*c.in+j*c.in+i]) * float64(x[(tt+j*c.dil)*c.in+i])
							want += p
							mag += math.Abs(p)
						}
					}
					tol := float64(c.taps*c.in+2) * 0x1p-24 * mag
					if d := math.Abs(float64(got[tt*c.out+o]) - want); !(d <= tol) {
						t.Fatalf("%s %+v row %d out %d: %v, want %v (|d| %.3g > %.3g)", tier, c, tt, o, got[tt*c.out+o], want, d, tol)
					}
				}
			}
			if accel {
				if simd == nil {
					simd = got
				} else if i := firstDiff(simd, got); i >= 0 {
					t.Fatalf("%s %+v: output %d differs from the other SIMD tier's", tier, c, i)
				}
			}
		}
	}
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestConvStreams: in every tier, Conv over rows split into pieces (each
// piece reading its window in place, as a stream does) and with one or
// two threads gives the whole call's bits.
func TestConvStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range convCases {
		m, bias, x := convData(rng, c)
		w, _ := kernels.PackConv(m, c.taps, bias)
		for _, tier := range kernels.Tiers() {
			t.Run(fmt.Sprintf("%s/%d_%d_%d_%d", tier, c.out, c.in, c.taps, c.n), func(t *testing.T) {
				defer kernels.UseTier(tier)()
				whole := runConv(t, w, x, c)
				prev := kernels.Threads()
				kernels.SetThreads(1)
				one := runConv(t, w, x, c)
				kernels.SetThreads(prev)
				if i := firstDiff(whole, one); i >= 0 {
					t.Fatalf("output %d differs with one thread", i)
				}
				got := make([]float32, c.n*c.out)
				for t0 := 0; t0 < c.n; {
					step := min(c.n-t0, 1+rng.IntN(13))
					kernels.Conv(got[t0*c.out:], w, x[t0*c.in:], step, c.dil)
					t0 += step
				}
				if i := firstDiff(whole, got); i >= 0 {
					t.Fatalf("output %d differs when streamed", i)
				}
			})
		}
	}
}

// TestPackConvErrors: shapes that do not fit are errors, not panics.
func TestPackConvErrors(t *testing.T) {
	m := &tensor.Matrix{Name: "w", Type: tensor.F32, Rows: 4, Cols: 6, Data: make([]byte, 96)}
	if _, err := kernels.PackConv(m, 4, nil); err == nil {
		t.Error("6 columns with 4 taps: no error")
	}
	if _, err := kernels.PackConv(m, 3, make([]float32, 3)); err == nil {
		t.Error("bias of 3 for 4 outputs: no error")
	}
	q := &tensor.Matrix{Name: "w", Type: tensor.F16, Rows: 4, Cols: 6, Data: make([]byte, 48)}
	if _, err := kernels.PackConv(q, 3, nil); err == nil {
		t.Error("F16 weights: no error")
	}
}

// BenchmarkConv: a codec residual conv (768 channels, k=7, dilation 3,
// 512 rows), reported in GFLOP/s.
func BenchmarkConv(b *testing.B) {
	c := convCase{768, 768, 7, 3, 512}
	m, bias, x := convData(rand.New(rand.NewPCG(1, 1)), c)
	w, _ := kernels.PackConv(m, c.taps, bias)
	dst := make([]float32, c.n*c.out)
	for b.Loop() {
		kernels.Conv(dst, w, x, c.n, c.dil)
	}
	b.ReportMetric(2*float64(c.out*c.in*c.taps*c.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkFMAPeak: the register-only FMA loop on GOMAXPROCS threads, in
// GFLOP/s (the ceiling BenchmarkConv is compared with).
func BenchmarkFMAPeak(b *testing.B) {
	f := 0.0
	for b.Loop() {
		f += kernels.FMAPeak(1<<20, runtime.GOMAXPROCS(0))
	}
	if f == 0 {
		b.Skip("no FMA loop in this tier")
	}
	b.ReportMetric(f/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
