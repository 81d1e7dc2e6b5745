package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/internal/cputime"
	"github.com/siskin-ml/siskin/tensor"
)

// TestF16Conversions: in every tier F32ToF16 gives tensor.Float32ToFP16's
// bits (round to nearest even, subnormals, overflow to infinity) for
// random float32 bit patterns and the edge cases, at lengths with and
// without an 8-value tail, and F16ToF32 widens every half exactly. NaNs
// only need to stay NaN (the payload is the hardware's).
func TestF16Conversions(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	src := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519.99, 65520, -65520, 1e9,
		float32(math.Inf(1)), float32(math.Inf(-1)), 5.96e-8, 2.98e-8, 2.9802326e-8, 2.9802324e-8, 6.1e-5, 6.097e-5,
		1 + 1.0/2048, 1 + 3.0/2048, 1e-30, float32(math.NaN())}
	for len(src) < 4099 {
		switch r.IntN(3) {
		case 0:
			src = append(src, math.Float32frombits(r.Uint32()))
		case 1: // near the half range, where rounding matters
			src = append(src, float32(r.NormFloat64()*math.Ldexp(1, r.IntN(40)-25)))
		default: // exact ties: a half plus half its unit
			h := uint16(r.IntN(0x7c00))
			lo, hi := tensor.FP16ToFloat32(h), tensor.FP16ToFloat32(h+1)
			src = append(src, float32((float64(lo)+float64(hi))/2))
		}
	}
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	for _, tierName := range allTiers() {
		if !supported[tierName] {
			continue
		}
		prev := setTier(tierName)
		for _, n := range []int{0, 3, 8, 17, len(src)} {
			got := make([]uint16, n)
			F32ToF16(got, src[:n])
			for i, x := range src[:n] {
				want := tensor.Float32ToFP16(x)
				if x != x {
					if got[i]&0x7c00 != 0x7c00 || got[i]&0x3ff == 0 {
						t.Fatalf("%s: F32ToF16(NaN) = %#04x, not a NaN", tierName, got[i])
					}
					continue
				}
				if got[i] != want {
					t.Fatalf("%s n %d: F32ToF16(%g [%#08x]) = %#04x, want %#04x", tierName, n, x, math.Float32bits(x), got[i], want)
				}
			}
		}
		wide := make([]float32, len(all))
		F16ToF32(wide, all)
		for i, h := range all {
			want := tensor.FP16ToFloat32(h)
			if want != want {
				if wide[i] == wide[i] {
					t.Fatalf("%s: F16ToF32(%#04x) = %g, want NaN", tierName, h, wide[i])
				}
				continue
			}
			if math.Float32bits(wide[i]) != math.Float32bits(want) {
				t.Fatalf("%s: F16ToF32(%#04x) = %g, want %g", tierName, h, wide[i], want)
			}
		}
		setTier(prev)
	}
}

// TestDotAxpyRowsMultiF16: in every tier the f16 kernels equal the
// float32 ones on the widened keys and values bit for bit (so an f16 cache
// changes what is stored, not how it is summed), with and without rows to
// prefetch, over query counts around the four the SIMD kernels take at
// once, odd and even key counts, widths with 16-float and scalar tails
// and padded strides. The SIMD tier is also within 1e-6 of the sum of
// |terms| of the generic twins (dotRowsMultiF16Go, axpyRowsMultiF16Go),
// the bound TestDotAxpyRowsMulti states for the float32 kernels.
func TestDotAxpyRowsMultiF16(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	half := func(n int) ([]uint16, []float32) {
		h := make([]uint16, n)
		f := make([]float32, n)
		for i := range h {
			h[i] = tensor.Float32ToFP16(float32(r.NormFloat64()))
			f[i] = tensor.FP16ToFloat32(h[i])
		}
		return h, f
	}
	same := func(what string, got, want []float32) {
		t.Helper()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: [%d] = %v, want %v", what, i, got[i], want[i])
			}
		}
	}
	for _, tierName := range allTiers() {
		if !supported[tierName] {
			continue
		}
		prev := setTier(tierName)
		for _, width := range []int{0, 1, 7, 8, 13, 16, 24, 32, 33, 40, 64, 100, 128, 256} {
			for m := 0; m <= 8; m++ {
				for _, n := range []int{0, 1, 2, 3, 8, 17} {
					name := func(op string) string {
						return fmt.Sprintf("%s %s width %d m %d n %d", tierName, op, width, m, n)
					}
					qs, ks, os := width+r.IntN(2)*8, width+r.IntN(3)*8+r.IntN(2), n+r.IntN(3)
					q := normals(r, max(0, (m-1)*qs+width))
					k16, k := half(max(0, (n-1)*ks+width))
					out0 := normals(r, max(0, (m-1)*os+n))

					want := append([]float32(nil), out0...)
					DotRowsMulti(want, os, q, qs, m, width, k, ks, n, 0.0625)
					got := append([]float32(nil), out0...)
					DotRowsMultiF16(got, os, q, qs, m, width, k16, ks, n, 0.0625)
					same(name("DotRowsMultiF16"), got, want)
					got = append(got[:0], out0...)
					nx, _ := half(5)
					DotRowsMultiNextF16(got, os, q, qs, m, width, k16, ks, n, 0.0625, nx)
					same(name("DotRowsMultiNextF16"), got, want)
					twin := append([]float32(nil), out0...)
					dotRowsMultiF16Go(twin, os, q, qs, m, width, k16, ks, n, 0.0625)
					for j := 0; j < m; j++ {
						for i := 0; i < n; i++ {
							mag := 0.0
							for e := 0; e < width; e++ {
								mag += math.Abs(float64(q[j*qs+e]) * float64(k[i*ks+e]))
							}
							if d := math.Abs(float64(got[j*os+i] - twin[j*os+i])); d > 1e-6*0.0625*mag {
								t.Fatalf("%s: [%d][%d] = %v, generic twin %v", name("DotRowsMultiF16"), j, i, got[j*os+i], twin[j*os+i])
							}
						}
					}

					ys, ps := width+r.IntN(2)*8, n+r.IntN(2)
					y0 := normals(r, max(0, (m-1)*ys+width))
					p := normals(r, max(0, (m-1)*ps+n))
					wantY := append([]float32(nil), y0...)
					AxpyRowsMulti(wantY, ys, m, width, p, ps, n, k, ks)
					y := append([]float32(nil), y0...)
					AxpyRowsMultiF16(y, ys, m, width, p, ps, n, k16, ks)
					same(name("AxpyRowsMultiF16"), y, wantY)
					y = append(y[:0], y0...)
					AxpyRowsMultiNextF16(y, ys, m, width, p, ps, n, k16, ks, nx)
					same(name("AxpyRowsMultiNextF16"), y, wantY)
					twinY := append([]float32(nil), y0...)
					axpyRowsMultiF16Go(twinY, ys, m, width, p, ps, n, k16, ks)
					for j := 0; j < m; j++ {
						for e := 0; e < width; e++ {
							mag := math.Abs(float64(y0[j*ys+e]))
							for i := 0; i < n; i++ {
								mag += math.Abs(float64(p[j*ps+i]) * float64(k[i*ks+e]))
							}
							if d := math.Abs(float64(y[j*ys+e] - twinY[j*ys+e])); d > 1e-6*mag {
								t.Fatalf("%s: [%d][%d] = %v, generic twin %v", name("AxpyRowsMultiF16"), j, e, y[j*ys+e], twinY[j*ys+e])
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
			t.Error("DotRowsMultiF16 past the end of the keys did not panic")
		}
	}()
	DotRowsMultiF16(make([]float32, 8), 2, make([]float32, 128), 32, 4, 32, make([]uint16, 63), 32, 2, 1)
}

// BenchmarkAttentionRowsMultiF16: BenchmarkAttentionRowsMulti's "multi"
// case with keys and values stored as halves.
func BenchmarkAttentionRowsMultiF16(b *testing.B) {
	const hd, kvd, n = 256, 512, 512
	r := rand.New(rand.NewPCG(5, 6))
	k := make([]float32, n*kvd)
	for i := range k {
		k[i] = float32(r.NormFloat64())
	}
	k16 := make([]uint16, len(k))
	F32ToF16(k16, k)
	q := k[:4*hd]
	sc := make([]float32, 4*n)
	o := make([]float32, 4*hd)
	for b.Loop() {
		DotRowsMultiF16(sc, n, q, hd, 4, hd, k16, kvd, n, 0.0625)
		clear(o)
		AxpyRowsMultiF16(o, hd, 4, hd, sc, n, n, k16, kvd)
	}
}

// TestRowsHeadsF16: in every tier DotRowsHeadsF16 and AxpyRowsHeadsF16
// give the bits of a call per head (DotRowsMultiNextF16,
// AxpyRowsMultiNextF16), over 1-9 heads, group sizes 1-4, head dims
// 8-128 (those not a multiple of 16 take the per-head path), 0-40 rows,
// padded rows and outputs added to, not set.
func TestRowsHeadsF16(t *testing.T) {
	defer SetNTAStream(ntaStream)
	if !supported[tierAVX512] {
		t.Log("this CPU or build has no AVX-512: the heads kernels are not tested here, only the per-head path")
	}
	r := rand.New(rand.NewPCG(31, 32))
	for trial := range 80 {
		heads, m := 1+r.IntN(9), 1+r.IntN(4)
		width := []int{8, 16, 24, 32, 64, 96, 128}[r.IntN(7)]
		n := []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 40}[r.IntN(12)]
		kstride := heads*width + r.IntN(20)
		k := make([]uint16, n*kstride)
		F32ToF16(k, normals(r, len(k)))
		qstride, hq := width, m*width
		q := normals(r, heads*hq)
		ostride := n + r.IntN(3)
		hout := m * ostride
		py := normals(r, heads*hout)
		hy := m * width
		y0 := normals(r, heads*hy)
		// Both prefetch variants of the heads kernels (NTA: AMD CPUs).
		for _, nta := range []bool{false, true} {
			ntaStream = nta
			for _, tr := range allTiers() {
				if !supported[tr] {
					continue
				}
				prev := setTier(tr)
				got, want := make([]float32, heads*hout), make([]float32, heads*hout)
				DotRowsHeadsF16(got, ostride, hout, q, qstride, hq, m, width, k, kstride, width, n, heads, 0.125)
				gy, wy := slices.Clone(y0), slices.Clone(y0)
				AxpyRowsHeadsF16(gy, width, hy, m, width, py, ostride, hout, n, k, kstride, width, heads)
				for g := range heads {
					kg := k[min(len(k), g*width):]
					DotRowsMultiNextF16(want[g*hout:], ostride, q[g*hq:], qstride, m, width, kg, kstride, n, 0.125, nil)
					AxpyRowsMultiNextF16(wy[g*hy:], width, m, width, py[g*hout:], ostride, n, kg, kstride, nil)
				}
				setTier(prev)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s (NTA %v) trial %d (heads %d m %d width %d n %d): score %d = %v, per head %v", tr, nta, trial, heads, m, width, n, i, got[i], want[i])
					}
				}
				for i := range gy {
					if math.Float32bits(gy[i]) != math.Float32bits(wy[i]) {
						t.Fatalf("%s (NTA %v) trial %d (heads %d m %d width %d n %d): output %d = %v, per head %v", tr, nta, trial, heads, m, width, n, i, gy[i], wy[i])
					}
				}
			}
		}
	}
}

// TestRowsPairedF16: DotRowsPairedF16 on paired queries against
// DotRowsMultiNextF16 per head on the plain rows, bit for bit, in every
// tier (the AVX-512 kernel, elsewhere the copy back), over widths with
// and without the kernel, every tail of four keys and padded strides.
func TestRowsPairedF16(t *testing.T) {
	if !supported[tierAVX512] {
		t.Log("this CPU or build has no AVX-512: the paired kernel is not tested here, only the copy back")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for trial := range 80 {
		width := []int{8, 16, 24, 32, 64, 96, 128}[r.IntN(7)]
		n := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 33, 64}[r.IntN(15)]
		kstride := width + r.IntN(20)
		k := make([]uint16, n*kstride)
		F32ToF16(k, normals(r, len(k)))
		qstride := 2*width + r.IntN(9)
		qhead := 4*qstride + r.IntN(9)
		q := normals(r, qhead+4*qstride)
		qx := make([]float32, 2*len(q))
		for i := 0; i+8 <= len(q); i += 8 {
			PairQueries(qx[2*i:2*i+16], q[i:i+8])
		}
		// Row j of head e starts 8-float-aligned in q, so it pairs
		// into qx at twice its offset.
		qstride, qhead = qstride&^7, qhead&^7
		ostride := n + r.IntN(3)
		ohead := 4*ostride + r.IntN(5)
		for _, tr := range allTiers() {
			if !supported[tr] {
				continue
			}
			prev := setTier(tr)
			got, want := normals(r, ohead+4*ostride), make([]float32, ohead+4*ostride)
			copy(want, got)
			DotRowsPairedF16(got, ostride, ohead, qx, 2*qstride, 2*qhead, width, k, kstride, n, 0.125, nil)
			for e := range 2 {
				DotRowsMultiNextF16(want[e*ohead:], ostride, q[e*qhead:], qstride, 4, width, k, kstride, n, 0.125, nil)
			}
			paired := PairedF16(width)
			setTier(prev)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s trial %d (width %d n %d, kernel %v): score %d = %v, per head %v", tr, trial, width, n, paired, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkDotRowsPairedF16: the scores of four query rows of each of
// two heads against 64 keys of 128 (the Qwen3 shape, keys 2 KiB apart,
// in L1/L2), one thread: two DotRowsMultiNextF16 calls against one
// DotRowsPairedF16 on paired queries, in multiply-adds per second of
// thread CPU time.
func BenchmarkDotRowsPairedF16(b *testing.B) {
	const hd, n, kvd, qd = 128, 64, 1024, 2048
	r := rand.New(rand.NewPCG(43, 44))
	q := make([]float32, 4*qd)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	qx := make([]float32, 2*len(q))
	PairQueries(qx, q)
	k := make([]uint16, n*kvd)
	F32ToF16(k, make([]float32, len(k)))
	out := make([]float32, 4*2*n)
	for _, paired := range []bool{false, true} {
		b.Run(map[bool]string{false: "per-head", true: "paired"}[paired], func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0 := cputime.Thread()
			for b.Loop() {
				if paired {
					DotRowsPairedF16(out, 2*n, n, qx, 2*qd, 2*hd, hd, k, kvd, n, 0.125, nil)
					continue
				}
				for e := range 2 {
					DotRowsMultiNextF16(out[e*n:], 2*n, q[e*hd:], qd, 4, hd, k, kvd, n, 0.125, nil)
				}
			}
			b.ReportMetric(float64(b.N)*8*n*hd/(cputime.Thread()-c0).Seconds()/1e9, "GMAC/s")
		})
	}
}

// normals is n draws of r's standard normal distribution as float32.
func normals(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}
