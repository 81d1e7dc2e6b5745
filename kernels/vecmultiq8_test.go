package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDotAxpyRowsMultiQ8: in every tier the q8_0 kernels equal the
// float32 ones on the dequantized keys and values bit for bit (the dot of
// a tier with int8 dots, AVX-512, as checkQ8Int8Dot says instead), with and
// without rows to prefetch, for 0-6 query rows (the AVX-512 kernels take
// 4, 2 and 1 at a time), key counts with ragged tails of the 8/4/2-key
// groups, widths of 1-8 blocks and padded strides; and the generic twins
// (dotRowsMultiQ8Go, axpyRowsMultiQ8Go) are within 1e-6 of the sum of
// |terms| of them (reordered float32 sums, FMA against multiply and add).
// Quantizing then dequantizing a row errs by at most half a step plus the
// fp16 rounding of the scale, d*(1/2 + 127/2048) with d = amax/127 per
// block.
func TestDotAxpyRowsMultiQ8(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	// rows returns n q8_0 rows of width, stride bytes apart, and their
	// dequantized values (width floats apart).
	rows := func(n, width, stride int) ([]byte, []float32) {
		b := make([]byte, max(0, (n-1)*stride+Q8RowBytes(width)))
		f := make([]float32, n*width)
		for i := 0; i < n; i++ {
			src := normals(r, width)
			QuantizeRowQ8(b[i*stride:i*stride+Q8RowBytes(width)], src)
			DequantRowQ8(f[i*width:(i+1)*width], b[i*stride:i*stride+Q8RowBytes(width)])
			for blk := 0; blk < width/32; blk++ {
				amax := 0.0
				for _, x := range src[blk*32 : blk*32+32] {
					amax = math.Max(amax, math.Abs(float64(x)))
				}
				for e := blk * 32; e < blk*32+32; e++ {
					if d := math.Abs(float64(f[i*width+e] - src[e])); d > amax/127*(0.5+127.0/2048)+1e-7 {
						t.Fatalf("q8_0 round trip of %g gave %g (block amax %g)", src[e], f[i*width+e], amax)
					}
				}
			}
		}
		return b, f
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
		for _, width := range []int{32, 64, 96, 128, 256} {
			for m := 0; m <= 6; m++ {
				for _, n := range []int{0, 1, 2, 3, 5, 8, 9, 15, 17} {
					name := func(op string) string {
						return fmt.Sprintf("%s %s width %d m %d n %d", tierName, op, width, m, n)
					}
					qs, ks, os := width+r.IntN(2)*8, Q8RowBytes(width)+r.IntN(3)*34+r.IntN(2), n+r.IntN(3)
					q := normals(r, max(0, (m-1)*qs+width))
					k8, k := rows(n, width, ks)
					nx, _ := rows(2, width, ks)
					out0 := normals(r, max(0, (m-1)*os+n))
					want := append([]float32(nil), out0...)
					DotRowsMulti(want, os, q, qs, m, width, k, width, n, 0.0625)
					got := append([]float32(nil), out0...)
					DotRowsMultiNextQ8(got, os, q, qs, m, width, k8, ks, n, 0.0625, nil)
					if vk().q8QueryInt8 {
						checkQ8Int8Dot(t, name("DotRowsMultiQ8"), got, want, os, q, qs, m, width, k8, k, ks, n, 0.0625)
						want = got
					}
					same(name("DotRowsMultiQ8"), got, want)
					got = append([]float32(nil), out0...)
					DotRowsMultiNextQ8(got, os, q, qs, m, width, k8, ks, n, 0.0625, nx)
					same(name("DotRowsMultiNextQ8"), got, want)
					twin := append([]float32(nil), out0...)
					dotRowsMultiQ8Go(twin, os, q, qs, m, width, k8, ks, n, 0.0625)
					for j := 0; j < m && !vk().q8QueryInt8; j++ {
						for i := 0; i < n; i++ {
							mag := 0.0
							for e := 0; e < width; e++ {
								mag += math.Abs(float64(q[j*qs+e]) * float64(k[i*width+e]))
							}
							if d := math.Abs(float64(got[j*os+i] - twin[j*os+i])); d > 1e-6*0.0625*mag {
								t.Fatalf("%s: [%d][%d] = %v, generic twin %v", name("DotRowsMultiQ8"), j, i, got[j*os+i], twin[j*os+i])
							}
						}
					}

					ys, ps := width+r.IntN(2)*8, n+r.IntN(2)
					y0 := normals(r, max(0, (m-1)*ys+width))
					p := normals(r, max(0, (m-1)*ps+n))
					wantY := append([]float32(nil), y0...)
					AxpyRowsMulti(wantY, ys, m, width, p, ps, n, k, width)
					y := append([]float32(nil), y0...)
					AxpyRowsMultiNextQ8(y, ys, m, width, p, ps, n, k8, ks, nil)
					same(name("AxpyRowsMultiQ8"), y, wantY)
					y = append(y[:0], y0...)
					AxpyRowsMultiNextQ8(y, ys, m, width, p, ps, n, k8, ks, nx)
					same(name("AxpyRowsMultiNextQ8"), y, wantY)
					twinY := append([]float32(nil), y0...)
					axpyRowsMultiQ8Go(twinY, ys, m, width, p, ps, n, k8, ks)
					for j := 0; j < m; j++ {
						for e := 0; e < width; e++ {
							mag := math.Abs(float64(y0[j*ys+e]))
							for i := 0; i < n; i++ {
								mag += math.Abs(float64(p[j*ps+i]) * float64(k[i*width+e]))
							}
							if d := math.Abs(float64(y[j*ys+e] - twinY[j*ys+e])); d > 1e-6*mag {
								t.Fatalf("%s: [%d][%d] = %v, generic twin %v", name("AxpyRowsMultiQ8"), j, e, y[j*ys+e], twinY[j*ys+e])
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
			t.Error("DotRowsMultiNextQ8 of width 48 did not panic")
		}
	}()
	DotRowsMultiNextQ8(make([]float32, 8), 2, make([]float32, 96), 48, 2, 48, make([]byte, 200), 51, 2, 1, nil)
}

// TestDequantRowQ8: in every tier DequantRowQ8 gives the generic twin's
// bits for random blocks, including subnormal, zero and negative scales.
func TestDequantRowQ8(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	src := make([]byte, 9*34)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	for b, d := range []uint16{0x0001, 0x0000, 0x8000, 0xbc00, 0x3c00} {
		src[34*b], src[34*b+1] = byte(d), byte(d>>8)
	}
	want := make([]float32, 9*32)
	dequantQ8Go(want, src)
	for _, tierName := range allTiers() {
		if !supported[tierName] {
			continue
		}
		prev := setTier(tierName)
		for _, n := range []int{0, 1, 9} {
			got := make([]float32, 32*n)
			DequantRowQ8(got, src[:34*n])
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: [%d] = %v, want %v", tierName, i, got[i], want[i])
				}
			}
		}
		setTier(prev)
	}
}

// checkQ8Int8Dot checks the scores got (times scale) of a tier whose q8_0
// dot quantizes the query (q8QueryInt8): against the generic twin
// dotRowsMultiQ8Int8Go within 1e-6 of the sum of the magnitudes the
// kernel's float32 operations see (per block |dq*dk| times sum |q8*k8|
// plus 128 sum |q8|, the offset correction's share of a lane); against
// the float32 scores want on the unquantized query within the query's
// quantization error, per block d_q*(1/2 + 127/2048) times sum |k|, plus
// 1e-5 of sum |q*k|; and a row computed alone gives the same bits.
func checkQ8Int8Dot(t *testing.T, what string, got, want []float32, os int, q []float32, qs, m, width int, k8 []byte, k []float32, ks, n int, scale float32) {
	t.Helper()
	twin := append([]float32(nil), got...)
	dotRowsMultiQ8Int8Go(twin, os, q, qs, m, width, k8, ks, n, scale)
	qq := quantQueryQ8(q, qs, m, width)
	defer queryPool.Put(qq)
	steps := width / 32
	for j := 0; j < m; j++ {
		alone := make([]float32, n)
		DotRowsMultiNextQ8(alone, n, q[j*qs:], qs, 1, width, k8, ks, n, scale, nil)
		for i := 0; i < n; i++ {
			g := got[j*os+i]
			if math.Float32bits(alone[i]) != math.Float32bits(g) {
				t.Fatalf("%s: [%d][%d] = %v in a group of %d rows, %v alone", what, j, i, g, m, alone[i])
			}
			lanes, qerr, mag := 0.0, 0.0, 0.0
			for s := 0; s < steps; s++ {
				qb := (*qq)[(j*steps+s)*q8QueryBytes:]
				kb := k8[i*ks+s*q8_0Bytes:]
				dq := float64(math.Float32frombits(binary.LittleEndian.Uint32(qb[128:])))
				dk := math.Abs(float64(fp16At(kb)))
				ints, ks1 := 0.0, 0.0
				for e := 0; e < 32; e++ {
					qv := math.Abs(float64(int8(qb[e])))
					ints += qv*math.Abs(float64(int8(kb[2+e]))) + 128*qv
					ks1 += math.Abs(float64(k[i*width+32*s+e]))
					mag += math.Abs(float64(q[j*qs+32*s+e]) * float64(k[i*width+32*s+e]))
				}
				lanes += dq * dk * ints
				qerr += dq * (0.5 + 127.0/2048) * ks1
			}
			if d := math.Abs(float64(g - twin[j*os+i])); d > 1e-6*float64(scale)*lanes {
				t.Fatalf("%s: [%d][%d] = %v, generic twin %v", what, j, i, g, twin[j*os+i])
			}
			if d := math.Abs(float64(g - want[j*os+i])); d > float64(scale)*(qerr+1e-5*mag) {
				t.Fatalf("%s: [%d][%d] = %v, float32 dot of the unquantized query %v (bound %g)", what, j, i, g, want[j*os+i], float64(scale)*(qerr+1e-5*mag))
			}
		}
	}
}

// TestDotRowsMultiNextQ8Query: in every tier, the scores from a query
// prepared once (Q8Query) are DotRowsMultiNextQ8's bits for groups of
// 1-5 rows at any head offset of the prepared rows.
func TestDotRowsMultiNextQ8Query(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	const width, heads, n = 64, 6, 11
	all := make([]float32, 3*heads*width)
	for i := range all {
		all[i] = float32(r.NormFloat64())
	}
	ks := Q8RowBytes(width) + 34
	k := make([]byte, n*ks)
	for i := 0; i < n; i++ {
		src := make([]float32, width)
		for e := range src {
			src[e] = float32(r.NormFloat64())
		}
		QuantizeRowQ8(k[i*ks:i*ks+Q8RowBytes(width)], src)
	}
	for _, tierName := range allTiers() {
		if !supported[tierName] {
			continue
		}
		prev := setTier(tierName)
		var x Q8Query
		x.Prepare(all)
		for _, m := range []int{1, 2, 3, 4, 5} {
			for _, off := range []int{0, width, 7 * width} {
				want := make([]float32, m*n)
				DotRowsMultiNextQ8(want, n, all[off:], width, m, width, k, ks, n, 0.25, nil)
				got := make([]float32, m*n)
				DotRowsMultiNextQ8Query(got, n, all, &x, off, width, m, width, k, ks, n, 0.25, nil)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s m %d off %d: [%d] = %v, want %v", tierName, m, off, i, got[i], want[i])
					}
				}
			}
		}
		setTier(prev)
	}
}

// TestSumInt8x32 checks the word-at-a-time sum against a loop, on random
// bytes and on the extremes (every byte -128, every byte 127).
func TestSumInt8x32(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	b := make([]byte, 32)
	for trial := range 1000 {
		for i := range b {
			switch trial {
			case 0:
				b[i] = 0x80
			case 1:
				b[i] = 0x7f
			default:
				b[i] = byte(r.Uint32())
			}
		}
		want := int32(0)
		for _, x := range b {
			want += int32(int8(x))
		}
		if got := sumInt8x32(b); got != want {
			t.Fatalf("% x: sum %d, want %d", b, got, want)
		}
	}
}

// TestQuantizeRowQ8Tiers: in every tier QuantizeRowQ8 and the query
// layout built on it (quantQueryQ8To) write the generic twins' bytes, for
// rows of 0-20 blocks (the assembly path takes eight at a time) and of
// 1029 (which four threads split at multiples of eight blocks, against
// the generic layout made in one pass), of random
// values over many magnitudes and blocks of infinities, the largest
// floats, subnormals, zeros and signed zeros (NaN blocks are garbage in
// any tier and not compared).
func TestQuantizeRowQ8Tiers(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	sub := math.Float32frombits(3)
	special := [][]float32{
		{float32(math.Inf(1)), 1, -2}, {float32(math.Inf(-1)), 0.5},
		{math.MaxFloat32, -math.MaxFloat32 / 3}, {sub, 2 * sub, -sub}, {0}, {float32(math.Copysign(0, -1)), 0},
	}
	// Four threads whatever the machine, so the long row is split.
	SetThreads(4)
	defer SetThreads(0)
	for _, n := range []int{0, 1, 7, 8, 9, 16, 20, 1029} {
		src := make([]float32, 32*n)
		for i := range src {
			src[i] = float32(r.NormFloat64() * math.Pow(10, float64(i/32%9-4)))
		}
		for b := 0; b < n && b < len(special); b++ {
			for i := range 32 {
				if b%2 == 0 || i%3 == 0 {
					src[32*b+i] = special[b][i%len(special[b])]
				}
			}
		}
		want := make([]byte, Q8RowBytes(len(src)))
		quantQ8Go(want, src)
		prev := setTier(tierGeneric)
		// The generic tier's blocks in one unsplit pass: the reference
		// the threads' split must reproduce.
		wantQ := make([]byte, n*q8QueryBytes)
		quantQueryBlocks(wantQ, src)
		setTier(prev)
		for _, tierName := range allTiers() {
			if !supported[tierName] {
				continue
			}
			prev := setTier(tierName)
			got := make([]byte, len(want))
			QuantizeRowQ8(got, src)
			gotQ := quantQueryQ8To(nil, src, len(src), 1, len(src))
			setTier(prev)
			if i := firstByteDiff(got, want); i >= 0 {
				t.Fatalf("%s, %d blocks: byte %d (block %d) = %#x, want %#x", tierName, n, i, i/q8_0Bytes, got[i], want[i])
			}
			if i := firstByteDiff(gotQ, wantQ); i >= 0 {
				t.Fatalf("%s, %d blocks: query byte %d = %#x, want %#x", tierName, n, i, gotQ[i], wantQ[i])
			}
		}
	}
}

// firstByteDiff is the first index where a and b differ (or where the shorter
// ends), -1 if they are equal.
func firstByteDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// BenchmarkQuantizeRowQ8 quantizes one key row of Qwen3-1.7B's shape (8
// KV heads of 128) per tier, as a decode step does twice a layer.
func BenchmarkQuantizeRowQ8(b *testing.B) {
	r := rand.New(rand.NewPCG(27, 28))
	src := make([]float32, 1024)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	dst := make([]byte, Q8RowBytes(len(src)))
	for _, tr := range allTiers() {
		if !supported[tr] {
			continue
		}
		b.Run(tr.String(), func(b *testing.B) {
			defer setTier(setTier(tr))
			b.SetBytes(int64(4 * len(src)))
			for b.Loop() {
				QuantizeRowQ8(dst, src)
			}
		})
	}
}

// TestRowsHeadsQ8: in every tier DotRowsHeadsQ8Query and AxpyRowsHeadsQ8
// give the bits of a call per head (DotRowsMultiNextQ8Query,
// AxpyRowsMultiNextQ8), over 1-9 heads, group sizes 1-4 (3 and the
// tiers' other sizes take the per-head path), head dims 32-128, 0-40 rows
// (every row-group tail), padded rows and outputs added to, not set.
func TestRowsHeadsQ8(t *testing.T) {
	defer SetNTAStream(ntaStream)
	if !supported[tierAVX512] {
		t.Log("this CPU or build has no AVX-512: the heads kernels are not tested here, only the per-head path")
	}
	r := rand.New(rand.NewPCG(29, 30))
	for trial := range 60 {
		heads, m, width := 1+r.IntN(9), 1+r.IntN(4), 32*(1+r.IntN(4))
		n := []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 40}[r.IntN(12)]
		pad := 32 * r.IntN(2)
		rowElems := heads*width + pad
		kstride := Q8RowBytes(rowElems) + 2*r.IntN(3)
		k := make([]byte, n*kstride)
		for i := range n {
			QuantizeRowQ8(k[i*kstride:i*kstride+Q8RowBytes(rowElems)], normals(r, rowElems))
		}
		// Queries: heads groups of m rows of width (qstride = width), the
		// groups hq apart; scores attnChunk-like rows.
		qstride, hq := width, m*width
		all := normals(r, heads*hq)
		ostride, hout := n+r.IntN(3), 0
		hout = m * ostride
		py := normals(r, heads*hout)
		ystride, hy := width, m*width
		y0 := normals(r, heads*hy)
		// Both prefetch variants of the heads kernels (NTA: AMD CPUs).
		for _, nta := range []bool{false, true} {
			ntaStream = nta
			for _, tr := range allTiers() {
				if !supported[tr] {
					continue
				}
				prev := setTier(tr)
				var x Q8Query
				x.Prepare(all)
				got, want := make([]float32, heads*hout), make([]float32, heads*hout)
				DotRowsHeadsQ8Query(got, ostride, hout, all, &x, 0, qstride, hq, m, width, k, kstride, width, n, heads, 0.125)
				for g := range heads {
					DotRowsMultiNextQ8Query(want[g*hout:], ostride, all, &x, g*hq, qstride, m, width, k[min(len(k), q8Bytes(g*width)):], kstride, n, 0.125, nil)
				}
				gy, wy := slices.Clone(y0), slices.Clone(y0)
				AxpyRowsHeadsQ8(gy, ystride, hy, m, width, py, ostride, hout, n, k, kstride, width, heads)
				for g := range heads {
					AxpyRowsMultiNextQ8(wy[g*hy:], ystride, m, width, py[g*hout:], ostride, n, k[min(len(k), q8Bytes(g*width)):], kstride, nil)
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

// TestRowsHeadsAllocs: the heads kernels, q8_0 and f16, allocate nothing
// (decode calls them twice a chunk of every layer).
func TestRowsHeadsAllocs(t *testing.T) {
	const heads, m, width, n = 4, 2, 64, 20
	kstride := Q8RowBytes(heads * width)
	k := make([]byte, n*kstride)
	all := make([]float32, heads*m*width)
	var x Q8Query
	x.Prepare(all)
	out, y := make([]float32, heads*m*n), make([]float32, heads*m*width)
	k16 := make([]uint16, n*heads*width)
	allocs := testing.AllocsPerRun(20, func() {
		DotRowsHeadsQ8Query(out, n, m*n, all, &x, 0, width, m*width, m, width, k, kstride, width, n, heads, 1)
		AxpyRowsHeadsQ8(y, width, m*width, m, width, out, n, m*n, n, k, kstride, width, heads)
		DotRowsHeadsF16(out, n, m*n, all, width, m*width, m, width, k16, heads*width, width, n, heads, 1)
		AxpyRowsHeadsF16(y, width, m*width, m, width, out, n, m*n, n, k16, heads*width, width, heads)
	})
	if allocs != 0 {
		t.Errorf("%v allocations a call pair", allocs)
	}
}

// BenchmarkQ8QueryPrepare: Q8Query.Prepare on one decode step's queries
// (Qwen3-1.7B: 16 heads of 128) and on a 512-token prompt's, which it
// splits across threads (a q8_0 cache's prefill runs it once a layer).
func BenchmarkQ8QueryPrepare(b *testing.B) {
	r := rand.New(rand.NewPCG(29, 30))
	for _, tokens := range []int{1, 512} {
		q := normals(r, tokens*2048)
		var x Q8Query
		b.Run(fmt.Sprintf("tokens=%d", tokens), func(b *testing.B) {
			b.SetBytes(int64(4 * len(q)))
			for b.Loop() {
				x.Prepare(q)
			}
		})
	}
}
