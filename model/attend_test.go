package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/siskin-ml/siskin/internal/cputime"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
)

// attendCase is one layer's attention input: sequences that resume from
// a cache of some length and add some tokens in this step.
type attendCase struct {
	a      Attention
	window int
	b      *Batch
	q, k   []float32
	v      []float32
}

// newAttendCase fills caches of the given lengths (positions appended
// one by one, so a sliding ring wraps) and random q, k and v for the
// new tokens of each sequence.
func newAttendCase(r *rand.Rand, heads, kvHeads, hd, window int, cached, added []int) *attendCase {
	return newAttendCaseOf(r, kv.F32, heads, kvHeads, hd, window, cached, added)
}

// newAttendCaseOf is newAttendCase with caches of element type typ.
func newAttendCaseOf(r *rand.Rand, typ kv.Type, heads, kvHeads, hd, window int, cached, added []int) *attendCase {
	a := Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: InvSqrt(hd)}
	kvd, qd := kvHeads*hd, heads*hd
	rnd := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	c := &attendCase{a: a, window: window, b: &Batch{}}
	for i := range cached {
		cache := &kv.Cache{Layers: []*kv.Layer{kv.NewLayerOf(kvd, window, typ)}}
		for p := 0; p < cached[i]; p++ {
			cache.Layers[0].Append(rnd(kvd), rnd(kvd))
		}
		row0 := len(c.b.Tokens)
		for j := 0; j < added[i]; j++ {
			c.b.Tokens = append(c.b.Tokens, 0)
			c.b.Pos = append(c.b.Pos, cached[i]+j)
			c.b.Cache = append(c.b.Cache, cache)
			c.b.Row0 = append(c.b.Row0, row0)
		}
		c.b.MaxLen = max(c.b.MaxLen, cached[i]+added[i])
	}
	n := len(c.b.Tokens)
	c.q, c.k, c.v = rnd(n*qd), rnd(n*kvd), rnd(n*kvd)
	return c
}

func (c *attendCase) out() []float32 { return make([]float32, len(c.b.Tokens)*c.a.Heads*c.a.HeadDim) }

// rounded is this step's keys and values as an f16 cache attends them:
// rounded to halves and widened back (exact); a q8_0 cache: quantized and
// dequantized; float32 caches use them as they are.
func (c *attendCase) rounded() (k, v []float32) {
	if c.b.Cache[0].Type() == kv.Q8_0 {
		kvd := c.a.KVHeads * c.a.HeadDim
		return roundQ8(c.k, kvd), roundQ8(c.v, kvd)
	}
	if c.b.Cache[0].Type() != kv.F16 {
		return c.k, c.v
	}
	round := func(x []float32) []float32 {
		h := make([]uint16, len(x))
		kernels.F32ToF16(h, x)
		out := make([]float32, len(x))
		kernels.F16ToF32(out, h)
		return out
	}
	return round(c.k), round(c.v)
}

// benchAttend times one layer's attention for a sequence of cached
// positions adding added tokens. cpu-ns/op (Linux) is the process's CPU
// time, every thread, which shared cores disturb less than the time.
//
// The Spark-X2.5-1.7B attention shape: 8 query heads on 2 KV heads of 256.
func benchAttend(b *testing.B, cached, added int) {
	for _, typ := range []kv.Type{kv.F32, kv.F16, kv.Q8_0} {
		b.Run(typ.String(), func(b *testing.B) { benchAttendOf(b, typ, cached, added) })
	}
}

func benchAttendOf(b *testing.B, typ kv.Type, cached, added int) {
	benchAttendShape(b, typ, 8, 2, 256, 512, cached, added)
}

func benchAttendShape(b *testing.B, typ kv.Type, heads, kvHeads, hd, window, cached, added int) {
	c := newAttendCaseOf(rand.New(rand.NewPCG(1, 2)), typ, heads, kvHeads, hd, window, []int{cached}, []int{added})
	out := c.out()
	b.ResetTimer()
	cpu := cputime.Process()
	for i := 0; i < b.N; i++ {
		c.a.Attend(c.b, 0, c.window, c.q, c.k, c.v, out)
	}
	b.ReportMetric(float64(b.N*added)/b.Elapsed().Seconds(), "tok/s")
	if cpu > 0 {
		b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkAttendPrefill512(b *testing.B) { benchAttend(b, 0, 512) }

// BenchmarkAttendPrefill512Qwen3: the Qwen3-1.7B shape (16 query heads on
// 8 KV heads of 128, no window), f16 cache.
func BenchmarkAttendPrefill512Qwen3(b *testing.B) { benchAttendShape(b, kv.F16, 16, 8, 128, 0, 0, 512) }

// BenchmarkAttendPrefill512Qwen3At4096 is BenchmarkAttendPrefill512Qwen3
// after 4096 cached positions (a long prompt's later chunks, where
// attention outweighs the matrices).
func BenchmarkAttendPrefill512Qwen3At4096(b *testing.B) {
	benchAttendShape(b, kv.F16, 16, 8, 128, 0, 4096, 512)
}

// BenchmarkAttendPrefill32Qwen3At4096: a short turn (a tool's result)
// after 4096 cached positions; few tiles, so the chunks are split among
// the threads (attendSplit).
func BenchmarkAttendPrefill32Qwen3At4096(b *testing.B) {
	benchAttendShape(b, kv.F16, 16, 8, 128, 0, 4096, 32)
}

func BenchmarkAttendDecode512(b *testing.B) { benchAttend(b, 511, 1) }

// TestAttendMatchesRows checks tiled attention against the row-by-row
// reference, bit for bit, over head shapes (group sizes, head dims that
// exercise the kernels' 8-float and scalar tails), full and sliding
// layers (rings that wrap), resumed caches and several sequences, with
// float32, f16 and q8_0 caches (the reference reads an f16 cache's
// widened rows, a q8_0 cache's dequantized ones, and this step's rows
// rounded as the cache stores them: a row decoded alone, in a batch or
// from the cache gets the same bits; q8_0 only where the head dim is a
// multiple of 32).
func TestAttendMatchesRows(t *testing.T) {
	for _, typ := range []kv.Type{kv.F32, kv.F16, kv.Q8_0} {
		t.Run(typ.String(), func(t *testing.T) { testAttendMatchesRows(t, typ) })
	}
}

func testAttendMatchesRows(t *testing.T, typ kv.Type) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		heads, kvHeads, hd, window int
		cached, added              []int
	}{
		{8, 2, 256, 0, []int{0}, []int{40}},
		{8, 2, 256, 16, []int{0}, []int{40}},
		{4, 4, 64, 0, []int{5}, []int{1}},
		{8, 2, 40, 12, []int{30, 0, 7}, []int{1, 20, 9}},
		{6, 2, 45, 0, []int{17, 3}, []int{11, 1}},
		{4, 1, 33, 10, []int{25}, []int{23}},
		{2, 1, 8, 0, []int{0}, []int{3}},
		{8, 2, 256, 0, []int{1}, []int{1}},
		// Several chunks of attnChunk positions: decode steps, a prompt
		// that crosses a chunk boundary, sliding windows that start
		// inside a chunk, and sequences of a mixed batch that split.
		{8, 2, 256, 0, []int{300}, []int{1}},
		{8, 2, 256, 200, []int{700}, []int{1}},
		{8, 2, 64, 0, []int{100}, []int{60}},
		{4, 2, 32, 150, []int{260, 0, 5}, []int{3, 300, 1}},
		{6, 3, 40, 130, []int{0, 513}, []int{140, 2}},
		// Qwen3-1.7B's shape (groups of 2 query heads, head dim 128).
		{16, 8, 128, 0, []int{300, 0}, []int{1, 9}},
		{4, 2, 128, 0, []int{260}, []int{1}},
		// Prompts over a deep cache, in tiles of 16 and 32 rows (one and
		// two threads), one of them sliding.
		{4, 2, 128, 0, []int{1030}, []int{130}},
		{4, 2, 64, 300, []int{1100, 2}, []int{260, 3}},
	} {
		if typ == kv.Q8_0 && tc.hd%32 != 0 {
			continue
		}
		c := newAttendCaseOf(r, typ, tc.heads, tc.kvHeads, tc.hd, tc.window, tc.cached, tc.added)
		want := c.out()
		rk, rv := c.rounded()
		c.a.AttendRows(c.b, 0, c.window, c.q, rk, rv, want)
		// One thread computes whole tiles; 2 and 64 split the chunks of
		// few tiles across threads (and 64 splits their KV heads too).
		for _, threads := range []int{1, 2, 64} {
			kernels.SetThreads(threads)
			got := c.out()
			c.a.Attend(c.b, 0, c.window, c.q, c.k, c.v, got)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Errorf("%+v, %d threads: out[%d] = %g, row by row %g", tc, threads, i, got[i], want[i])
					break
				}
			}
		}
	}
	kernels.SetThreads(0)
}

// TestAttendAccuracy compares Attend with softmax attention computed in
// float64: the chunked softmax must not cost more than float32 rounding
// (max abs error 2e-6 on outputs of size ~0.1-1). With an f16 cache the
// reference is computed on the f16-rounded keys and values (those of the
// cache and this step's, rounded as the cache stores them), and the same
// 2e-6 holds: rounding to f16 is the only change, and it is exact in the
// reference too. Likewise with a q8_0 cache, on its dequantized rows (and,
// where the tier's q8_0 dot quantizes the query, the quantized query).
func TestAttendAccuracy(t *testing.T) {
	for _, typ := range []kv.Type{kv.F32, kv.F16, kv.Q8_0} {
		t.Run(typ.String(), func(t *testing.T) { testAttendAccuracy(t, typ) })
	}
}

func testAttendAccuracy(t *testing.T, typ kv.Type) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		window, cached, added int
	}{{0, 0, 200}, {0, 1000, 1}, {300, 1000, 3}, {0, 127, 2}} {
		c := newAttendCaseOf(r, typ, 8, 2, 64, tc.window, []int{tc.cached}, []int{tc.added})
		rk, rv := c.rounded()
		a, b := c.a, c.b
		hd, qd, kvd := a.HeadDim, a.Heads*a.HeadDim, a.KVHeads*a.HeadDim
		layer := b.Cache[0].Layers[0]
		// A tier whose q8_0 dot quantizes the query (kernels.Q8DotQuantizesQuery)
		// computes the exact attention of the q8_0 query: the reference's
		// query is rounded the same way (roundQ8, per 32-block as the
		// kernel quantizes it), so the float32 bound stays.
		qref := c.q
		if typ == kv.Q8_0 && kernels.Q8DotQuantizesQuery() {
			qref = roundQ8(c.q, qd)
		}
		// The cache's rows, widened once (an f16 layer's Key is a copy).
		keys, values := map[int][]float32{}, map[int][]float32{}
		for p := layer.First(); p < layer.Len(); p++ {
			keys[p], values[p] = layer.Key(p), layer.Value(p)
		}
		key := func(p int) []float32 { return keys[p] }
		value := func(p int) []float32 { return values[p] }
		for _, threads := range []int{1, 2} {
			kernels.SetThreads(threads)
			got := c.out()
			a.Attend(b, 0, c.window, c.q, c.k, c.v, got)
			worst := 0.0
			for row := range b.Tokens {
				for h := 0; h < a.Heads; h++ {
					kvOff := h / (a.Heads / a.KVHeads) * hd
					vec := func(p int, cache func(int) []float32, step []float32) []float32 {
						if p < layer.Len() {
							return cache(p)[kvOff : kvOff+hd]
						}
						r := p - layer.Len()
						return step[r*kvd+kvOff : r*kvd+kvOff+hd]
					}
					f := first(b, c.window, row)
					var sc []float64
					mx := math.Inf(-1)
					for p := f; p <= b.Pos[row]; p++ {
						var d float64
						for i, kx := range vec(p, key, rk) {
							d += float64(qref[row*qd+h*hd+i]) * float64(kx)
						}
						sc = append(sc, d*float64(a.Scale))
						mx = math.Max(mx, d*float64(a.Scale))
					}
					var sum float64
					for i := range sc {
						sc[i] = math.Exp(sc[i] - mx)
						sum += sc[i]
					}
					for i := 0; i < hd; i++ {
						var want float64
						for j := range sc {
							want += sc[j] / sum * float64(vec(f+j, value, rv)[i])
						}
						worst = math.Max(worst, math.Abs(float64(got[row*qd+h*hd+i])-want))
					}
				}
			}
			if worst > 2e-6 {
				t.Errorf("%+v, %d threads: max |attend - float64| = %g", tc, threads, worst)
			}
			t.Logf("%+v, %d threads: max |attend - float64| = %g", tc, threads, worst)
		}
	}
	kernels.SetThreads(0)
}

// BenchmarkAttendDecodeModel2048 times one decode token's attention over
// every layer of the Spark-X2.5-1.7B shape at depth 2048 (7 full layers,
// 21 sliding layers of window 512): about 100 MB of keys and values, far
// more than the caches hold, as in a real decode step.
func BenchmarkAttendDecodeModel2048(b *testing.B) {
	for _, typ := range []kv.Type{kv.F32, kv.F16, kv.Q8_0} {
		b.Run(typ.String(), func(b *testing.B) {
			benchAttendDecodeModel(b, typ, func(l int) (int, int, int, int) {
				if l%4 == 3 {
					return 8, 2, 256, 0
				}
				return 8, 2, 256, 512
			})
		})
	}
}

// BenchmarkAttendDecodeQwen3_2048 is BenchmarkAttendDecodeModel2048 for
// Qwen3-1.7B's shape: 28 full layers of 16 query heads on 8 KV heads of
// 128 (235 MB of f16 keys and values at depth 2048).
func BenchmarkAttendDecodeQwen3_2048(b *testing.B) {
	for _, typ := range []kv.Type{kv.F16, kv.Q8_0} {
		b.Run(typ.String(), func(b *testing.B) {
			benchAttendDecodeModel(b, typ, func(int) (int, int, int, int) { return 16, 8, 128, 0 })
		})
	}
}

// benchAttendDecodeModel times a decode step at depth 2048 over 28
// layers of the shapes shape(layer) gives (heads, KV heads, head dim,
// window).
func benchAttendDecodeModel(b *testing.B, typ kv.Type, shape func(l int) (heads, kvHeads, hd, window int)) {
	const depth = 2048
	r := rand.New(rand.NewPCG(3, 4))
	var cases []*attendCase
	for l := 0; l < 28; l++ {
		heads, kvHeads, hd, window := shape(l)
		cases = append(cases, newAttendCaseOf(r, typ, heads, kvHeads, hd, window, []int{depth}, []int{1}))
	}
	out := cases[0].out()
	b.ResetTimer()
	cpu := cputime.Process()
	for i := 0; i < b.N; i++ {
		for _, c := range cases {
			c.a.Attend(c.b, 0, c.window, c.q, c.k, c.v, out)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/tok")
	if cpu > 0 {
		b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
	}
}
