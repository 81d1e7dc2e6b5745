//go:build amd64 && gc && !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/siskin-ml/siskin/tensor"
)

// TestAttentionAVX512MatchesAVX2: the AVX-512 attention kernels (1, 2 and
// 4 query rows at a time) give the AVX2 tier's bits for f32 and f16 keys
// and f32, f16 and q8_0 values (q8_0 keys: int8 dots, within checkQ8Int8Dot's bounds
// of the AVX2 tier's scores and of the generic twin's), over 0-9 query rows, key counts with ragged tails of every
// group size, widths with and without a 16-column tail, and padded
// strides; so the tiers agree and, within the AVX-512 tier, a row's
// scores do not depend on how many rows are computed with it.
func TestAttentionAVX512MatchesAVX2(t *testing.T) {
	if !supported[tierAVX512] {
		t.Skip("this CPU or build has no AVX-512 F/BW/VL + VNNI: the avx512 tier is not tested here")
	}
	r := rand.New(rand.NewPCG(31, 32))
	in := func(tr tier, f func()) {
		prev := setTier(tr)
		defer setTier(prev)
		f()
	}
	same := func(what string, a, b []float32) {
		t.Helper()
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s: [%d] avx512 %v, avx2 %v", what, i, a[i], b[i])
			}
		}
	}
	for _, width := range []int{16, 32, 40, 64, 128, 256} {
		for m := 0; m <= 9; m++ {
			for _, n := range []int{1, 2, 3, 4, 7, 8, 9, 13, 16, 31} {
				name := fmt.Sprintf("width %d m %d n %d", width, m, n)
				qs, os, ps := width+r.IntN(2)*16, n+r.IntN(3), n+r.IntN(2)
				q := normals(r, max(0, (m-1)*qs+width))
				out0 := normals(r, max(0, (m-1)*os+n))
				y0 := normals(r, max(0, (m-1)*qs+width))
				p := normals(r, max(0, (m-1)*ps+n))
				ks := width + r.IntN(3)*8
				k16 := make([]uint16, (n-1)*ks+width)
				for i := range k16 {
					k16[i] = tensor.Float32ToFP16(float32(r.NormFloat64()))
				}
				var o [2][]float32
				var y [2][]float32
				for i, tr := range []tier{tierAVX512, tierAVX2} {
					o[i] = append([]float32(nil), out0...)
					y[i] = append([]float32(nil), y0...)
					in(tr, func() {
						DotRowsMultiNextF16(o[i], os, q, qs, m, width, k16, ks, n, 0.125, nil)
						AxpyRowsMultiNextF16(y[i], qs, m, width, p, ps, n, k16, ks, nil)
					})
				}
				same("f16 dot "+name, o[0], o[1])
				same("f16 axpy "+name, y[0], y[1])
				kf32 := normals(r, (n-1)*ks+width)
				for i, tr := range []tier{tierAVX512, tierAVX2} {
					o[i] = append(o[i][:0], out0...)
					y[i] = append(y[i][:0], y0...)
					in(tr, func() {
						DotRowsMultiNext(o[i], os, q, qs, m, width, kf32, ks, n, 0.125, nil)
						AxpyRowsMultiNext(y[i], qs, m, width, p, ps, n, kf32, ks, nil)
					})
				}
				same("f32 dot "+name, o[0], o[1])
				same("f32 axpy "+name, y[0], y[1])
				if width%32 != 0 {
					continue
				}
				kb := Q8RowBytes(width) + r.IntN(2)*34
				k8 := make([]byte, (n-1)*kb+Q8RowBytes(width))
				kf := make([]float32, n*width)
				for i := 0; i < n; i++ {
					QuantizeRowQ8(k8[i*kb:i*kb+Q8RowBytes(width)], normals(r, width))
					DequantRowQ8(kf[i*width:(i+1)*width], k8[i*kb:i*kb+Q8RowBytes(width)])
				}
				for i, tr := range []tier{tierAVX512, tierAVX2} {
					o[i] = append(o[i][:0], out0...)
					y[i] = append(y[i][:0], y0...)
					in(tr, func() {
						DotRowsMultiNextQ8(o[i], os, q, qs, m, width, k8, kb, n, 0.125, nil)
						AxpyRowsMultiNextQ8(y[i], qs, m, width, p, ps, n, k8, kb, nil)
					})
				}
				in(tierAVX512, func() {
					checkQ8Int8Dot(t, "q8_0 dot "+name, o[0], o[1], os, q, qs, m, width, k8, kf, kb, n, 0.125)
				})
				same("q8_0 axpy "+name, y[0], y[1])
			}
		}
	}
}

// BenchmarkAttentionDecodeAVX512 is one KV head's decode attention of a
// GQA group of two query heads over 2048 positions (Qwen3-1.7B's shape:
// head dim 128, 8 KV heads), per tier and cache type.
func BenchmarkAttentionDecodeAVX512(b *testing.B) {
	const hd, kvd, n, m = 128, 1024, 2048, 2
	r := rand.New(rand.NewPCG(5, 6))
	k := make([]float32, n*kvd)
	for i := range k {
		k[i] = float32(r.NormFloat64())
	}
	k16 := make([]uint16, len(k))
	F32ToF16(k16, k)
	rb := Q8RowBytes(kvd)
	k8 := make([]byte, n*rb)
	for i := 0; i < n; i++ {
		QuantizeRowQ8(k8[i*rb:(i+1)*rb], k[i*kvd:(i+1)*kvd])
	}
	q := k[:m*hd]
	sc := make([]float32, m*n)
	o := make([]float32, m*hd)
	for _, tr := range []tier{tierAVX2, tierAVX512} {
		if !supported[tr] {
			continue
		}
		b.Run("f16/"+tr.String(), func(b *testing.B) {
			defer setTier(setTier(tr))
			for b.Loop() {
				DotRowsMultiF16(sc, n, q, hd, m, hd, k16, kvd, n, 0.0625)
				clear(o)
				AxpyRowsMultiF16(o, hd, m, hd, sc, n, n, k16, kvd)
			}
		})
		b.Run("q8_0/"+tr.String(), func(b *testing.B) {
			defer setTier(setTier(tr))
			for b.Loop() {
				DotRowsMultiNextQ8(sc, n, q, hd, m, hd, k8, rb, n, 0.0625, nil)
				clear(o)
				AxpyRowsMultiNextQ8(o, hd, m, hd, sc, n, n, k8, rb, nil)
			}
		})
		b.Run("q8_0-dot/"+tr.String(), func(b *testing.B) {
			defer setTier(setTier(tr))
			for b.Loop() {
				DotRowsMultiNextQ8(sc, n, q, hd, m, hd, k8, rb, n, 0.0625, nil)
			}
		})
		b.Run("q8_0-axpy/"+tr.String(), func(b *testing.B) {
			defer setTier(setTier(tr))
			for b.Loop() {
				clear(o)
				AxpyRowsMultiNextQ8(o, hd, m, hd, sc, n, n, k8, rb, nil)
			}
		})
	}
}

// TestExpMaxAVX512MatchesAVX2: the AVX-512 tier's softmax exponentials
// (sixteen at a time, an odd eight in the low half) give the AVX2 tier's
// bits, values and float64 sum alike, over lengths with every tail and
// inputs with -Inf, NaN, +Inf, values far below the maximum (e^x below the
// smallest normal float) and ties. TestExpMaxAVX512Guarded covers
// rows that end at an unmapped page.
func TestExpMaxAVX512MatchesAVX2(t *testing.T) {
	if !supported[tierAVX512] {
		t.Skip("this CPU or build has no AVX-512 F/BW/VL + VNNI: the avx512 tier is not tested here")
	}
	r := rand.New(rand.NewPCG(41, 42))
	special := []float32{float32(math.Inf(-1)), float32(math.NaN()), float32(math.Inf(1)), -100, -87.3, 0, 1e-30}
	for n := 0; n <= 80; n++ {
		for trial := range 6 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 8)
				if trial >= 3 && r.IntN(6) == 0 {
					x[i] = special[r.IntN(len(special)-trial%2*3)]
				}
			}
			a, b := append([]float32(nil), x...), append([]float32(nil), x...)
			ma, sa := expMaxAVX2(a)
			mb, sb := expMaxAVX512(b)
			if math.Float32bits(ma) != math.Float32bits(mb) || math.Float64bits(sa) != math.Float64bits(sb) {
				t.Fatalf("n %d trial %d: avx512 max %v sum %v, avx2 %v %v", n, trial, mb, sb, ma, sa)
			}
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("n %d trial %d: [%d] = %v, avx2 %v (input %v)", n, trial, i, b[i], a[i], x[i])
				}
			}
		}
	}
}

// BenchmarkAttentionHeadsStream is decode attention over a deep cache as
// Qwen3-1.7B reads it (8 KV heads of 128, two query heads each, 2048
// positions), cycling through 28 layers' keys and values so they come
// from memory, not cache (f16: 224 MiB), with each prefetch variant of
// the heads kernels (NTA: what ntaStream picks on AMD CPUs). Run with
// -count and compare the two variants of the same cache type.
func BenchmarkAttentionHeadsStream(b *testing.B) {
	if !supported[tierAVX512] || !HeadsF16() {
		b.Skip("this CPU or build has no AVX-512: no heads kernels to compare")
	}
	defer setTier(setTier(tierAVX512))
	const hd, heads, m, n, layers = 128, 8, 2, 2048, 28
	const kvd, scale = hd * heads, 0.0884
	r := rand.New(rand.NewPCG(7, 8))
	q := normals(r, heads*m*hd)
	var x Q8Query
	x.Prepare(q)
	sc := normals(r, heads*m*n)
	y := make([]float32, heads*m*hd)
	rb := Q8RowBytes(kvd)
	k16, v16 := make([][]uint16, layers), make([][]uint16, layers)
	k8, v8 := make([][]byte, layers), make([][]byte, layers)
	row := normals(r, kvd)
	for l := range layers {
		k16[l], v16[l] = make([]uint16, n*kvd), make([]uint16, n*kvd)
		k8[l], v8[l] = make([]byte, n*rb), make([]byte, n*rb)
		for i := range n {
			F32ToF16(k16[l][i*kvd:(i+1)*kvd], row)
			F32ToF16(v16[l][i*kvd:(i+1)*kvd], row)
			QuantizeRowQ8(k8[l][i*rb:(i+1)*rb], row)
			QuantizeRowQ8(v8[l][i*rb:(i+1)*rb], row)
		}
	}
	defer SetNTAStream(ntaStream)
	for _, nta := range []bool{false, true} {
		name := map[bool]string{false: "t0", true: "nta"}[nta]
		b.Run("f16/"+name, func(b *testing.B) {
			ntaStream = nta
			b.SetBytes(int64(2 * n * kvd * 2))
			l := 0
			for b.Loop() {
				DotRowsHeadsF16(sc, n, m*n, q, hd, m*hd, m, hd, k16[l], kvd, hd, n, heads, scale)
				AxpyRowsHeadsF16(y, hd, m*hd, m, hd, sc, n, m*n, n, v16[l], kvd, hd, heads)
				l = (l + 1) % layers
			}
		})
		b.Run("q8_0/"+name, func(b *testing.B) {
			ntaStream = nta
			b.SetBytes(int64(2 * n * rb))
			l := 0
			for b.Loop() {
				DotRowsHeadsQ8Query(sc, n, m*n, q, &x, 0, hd, m*hd, m, hd, k8[l], rb, hd, n, heads, scale)
				AxpyRowsHeadsQ8(y, hd, m*hd, m, hd, sc, n, m*n, n, v8[l], rb, hd, heads)
				l = (l + 1) % layers
			}
		})
	}
}

// TestHeadsPrefetch: the heads kernels' prefetch offsets point each head
// of a group of rows at the bytes read the distance on in the order of
// reading (heads of a group, then the next group), whether that is in
// the same group or a later one.
func TestHeadsPrefetch(t *testing.T) {
	defer func(a int) { headsAheadBytes = a }(headsAheadBytes)
	for _, ahead := range []int{1, 1000, 10 << 10, 40 << 10} {
		headsAheadBytes = ahead
		for _, rows := range []int{4, 8, 16} {
			for _, hk := range []int{128, 136, 256, 512} {
				for heads := 1; heads <= 9; heads++ {
					stride := heads*hk + 64 // padded rows too
					p := headsPrefetch(rows, stride, hk, heads)
					d := max(1, ahead/(rows*hk))
					for h := range heads {
						off := p[0]
						if heads-h <= p[2] {
							off = p[1]
						}
						i := h + d
						want := (i/heads)*rows*stride + (i%heads-h)*hk
						if off != want {
							t.Fatalf("ahead %d, %d rows of %d heads of %d bytes: head %d prefetches %d bytes on, want %d", ahead, rows, heads, hk, h, off, want)
						}
					}
				}
			}
		}
	}
}
