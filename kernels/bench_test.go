package kernels_test

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// decodeTypes are the weight types of the models siskin targets.
var decodeTypes = []tensor.Type{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0, tensor.F16, tensor.BF16, tensor.F32,
	tensor.W4A16, tensor.W4A8, tensor.W8A8, tensor.W16A16}

// BenchmarkKernelCompute: one thread on a matrix that stays in L2, so the
// kernel's own speed shows (weight bytes per second), not the memory's.
// A decode kernel needs well over the per-thread share of DRAM bandwidth.
// cpu-GB/s divides by the thread's CPU time, which other load on a shared
// machine disturbs much less than wall time.
func BenchmarkKernelCompute(b *testing.B) {
	defer kernels.SetThreads(0)
	const cols = 2048
	rng := newRNG(16)
	x := randomVec(rng, cols)
	for _, typ := range decodeTypes {
		stride, _ := tensor.RowBytes(typ, cols)
		rows := (192 << 10) / stride
		w := randomMatrix(rng, typ, rows, cols)
		out := make([]float32, rows)
		for _, tierName := range kernels.Tiers() {
			b.Run(fmt.Sprintf("%s/%s", typ, tierName), func(b *testing.B) {
				defer kernels.UseTier(tierName)()
				kernels.SetThreads(1)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.SetBytes(int64(len(w.Data)))
				c0 := threadCPU()
				for b.Loop() {
					kernels.MatVec(out, w, x)
				}
				cpu := (threadCPU() - c0).Seconds()
				b.ReportMetric(float64(len(w.Data))*float64(b.N)/cpu/1e9, "cpu-GB/s")
			})
		}
	}
}

// BenchmarkKernelDirect calls each SIMD tier's kernels directly (no
// quantization, no threads) on 32 rows x 2048 columns that stay in L1/L2:
// thread-CPU nanoseconds per block (32 elements, or 256 for the
// K-quants) for one activation row (vec) and per activation row for four
// (vec4). For tuning the assembly.
func BenchmarkKernelDirect(b *testing.B) {
	const rows, cols = 32, 2048
	rng := newRNG(19)
	for _, typ := range decodeTypes {
		for _, tierName := range kernels.Tiers() {
			k := kernels.KernelOf(tierName, typ)
			if k == nil || tierName == "generic" {
				continue
			}
			w := randomRow(rng, typ, rows*cols)
			stride := len(w) / rows
			xs := k.ActBytes(cols)
			x := make([]byte, 4*xs)
			for i := 0; i < 4; i++ {
				k.Quant(x[i*xs:(i+1)*xs], randomVec(rng, cols))
			}
			out := make([]float32, 4*rows)
			blocks := float64(rows * cols / max(32, typ.BlockSize()))
			b.Run(fmt.Sprintf("%s/%s", typ, tierName), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var t1, t4 time.Duration
				for b.Loop() {
					c := threadCPU()
					k.Vec(out[:rows], w, stride, x[:xs])
					c1 := threadCPU()
					k.Vec4(out, rows, w, stride, rows, x, xs)
					t1, t4 = t1+c1-c, t4+threadCPU()-c1
				}
				n := float64(b.N) * blocks
				b.ReportMetric(float64(t1.Nanoseconds())/n, "vec-ns/block")
				b.ReportMetric(float64(t4.Nanoseconds())/n/4, "vec4-ns/block/row")
			})
		}
	}
}

// BenchmarkMatMulCompute: one thread, a prefill-sized batch of 64
// activation rows against a 512x2048 weight matrix, in multiply-adds per
// second of thread CPU time.
func BenchmarkMatMulCompute(b *testing.B) {
	defer kernels.SetThreads(0)
	const rows, cols, n = 512, 2048, 64
	rng := newRNG(18)
	x := randomVec(rng, n*cols)
	out := make([]float32, n*rows)
	for _, typ := range decodeTypes {
		w := randomMatrix(rng, typ, rows, cols)
		for _, tierName := range kernels.Tiers() {
			if tierName == "generic" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s", typ, tierName), func(b *testing.B) {
				defer kernels.UseTier(tierName)()
				kernels.SetThreads(1)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				for b.Loop() {
					kernels.MatMul(out, w, x, n)
				}
				cpu := (threadCPU() - c0).Seconds()
				b.ReportMetric(float64(rows*cols*n)*float64(b.N)/cpu/1e9, "cpu-GMAC/s")
			})
		}
	}
}

// BenchmarkDecodeStream: MatVec over a set of matrices far larger than
// the last-level cache, as in decoding (every weight read once per
// token), with the default thread count, alternated with a read-only
// bandwidth probe over the same bytes. It reports both rates and their
// ratio, the share of the read ceiling the kernels reach (the target is
// 0.88 for Q4_K). Run with -benchtime of a few iterations. Types with
// packed kernels run both unprepared and prepared ("/packed"); the probe
// reads the original bytes either way (same size).
func BenchmarkDecodeStream(b *testing.B) {
	const total = 512 << 20
	rng := newRNG(17)
	shapes := [][2]int{{2048, 2048}, {512, 2048}, {6656, 2048}, {2048, 6656}}
	for _, typ := range decodeTypes {
		var mats []*tensor.Matrix
		var bytes int
		for i := 0; bytes < total; i++ {
			sh := shapes[i%len(shapes)]
			if i < len(shapes) {
				mats = append(mats, randomMatrix(rng, typ, sh[0], sh[1]))
			} else {
				m := *mats[i%len(shapes)]
				m.Data = append([]byte(nil), m.Data...) // same values, new memory
				mats = append(mats, &m)
			}
			bytes += len(mats[i].Data)
		}
		xs := map[int][]float32{2048: randomVec(rng, 2048), 6656: randomVec(rng, 6656)}
		outs := map[int][]float32{2048: make([]float32, 2048), 512: make([]float32, 512), 6656: make([]float32, 6656)}
		for _, tierName := range kernels.Tiers() {
			if tierName == "generic" {
				continue // minutes per pass
			}
			variants := []string{""}
			if slices.Contains(kernels.PackedTypes(tierName), typ) {
				variants = append(variants, "/packed")
			}
			for _, variant := range variants {
				for _, th := range []int{0, 1} {
					name := fmt.Sprintf("%s/%s%s/threads=%d", typ, tierName, variant, kernels.Threads())
					if th == 1 {
						name = fmt.Sprintf("%s/%s%s/threads=1", typ, tierName, variant)
					}
					b.Run(name, func(b *testing.B) {
						defer kernels.UseTier(tierName)()
						if variant != "" {
							for _, m := range mats {
								kernels.Prepare(m)
							}
							defer func() {
								for _, m := range mats {
									kernels.Release(m)
								}
							}()
						}
						// One thread is timed by its CPU clock (a busy
						// shared machine disturbs that less); more by
						// the wall clock.
						clock := func() time.Duration { return time.Duration(time.Now().UnixNano()) }
						if th == 1 {
							kernels.SetThreads(1)
							defer kernels.SetThreads(0)
							runtime.LockOSThread()
							defer runtime.UnlockOSThread()
							clock = threadCPU
						}
						var kt, pt []float64
						for b.Loop() {
							t0 := clock()
							for _, m := range mats {
								kernels.MatVec(outs[m.Rows], m, xs[m.Cols])
							}
							t1 := clock()
							if th == 1 {
								probeSink += sum64All(mats)
							} else {
								readProbe(mats, kernels.Threads())
							}
							t2 := clock()
							kt = append(kt, float64(bytes)/(t1-t0).Seconds()/1e9)
							pt = append(pt, float64(bytes)/(t2-t1).Seconds()/1e9)
						}
						k, p := median(kt), median(pt)
						b.ReportMetric(k, "kernel-GB/s")
						b.ReportMetric(p, "probe-GB/s")
						b.ReportMetric(k/p, "ratio")
					})
				}
			}
		}
	}
}

func sum64All(mats []*tensor.Matrix) uint64 {
	var s uint64
	for _, m := range mats {
		s += sum64(m.Data)
	}
	return s
}

func median(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}

var probeSink uint64

// readProbe sums the weight bytes as 64-bit words on threads goroutines,
// eight independent accumulators each: a load-bound read of the same
// memory the kernels stream.
func readProbe(mats []*tensor.Matrix, threads int) {
	var wg sync.WaitGroup
	sums := make([]uint64, threads)
	for t := 0; t < threads; t++ {
		wg.Go(func() {
			for _, m := range mats {
				n := len(m.Data) / 8 / threads * 8
				sums[t] += sum64(m.Data[t*n : (t+1)*n])
			}
		})
	}
	wg.Wait()
	for _, s := range sums {
		probeSink += s
	}
}

func sum64(b []byte) uint64 {
	w := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	for i := 0; i+8 <= len(w); i += 8 {
		c := w[i : i+8 : i+8]
		s0 += c[0]
		s1 += c[1]
		s2 += c[2]
		s3 += c[3]
		s4 += c[4]
		s5 += c[5]
		s6 += c[6]
		s7 += c[7]
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

// prefillShapes are the matrices of a Spark-X2.5-1.7B layer (rows x
// cols): the fused Q/K/V projection, gate and up, down.
var prefillShapes = []struct {
	name       string
	rows, cols int
}{{"qkv", 3072, 2048}, {"gateup", 6656, 2048}, {"down", 2048, 6656}}

var prefillTypes = []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0, tensor.F16}

// BenchmarkPrefill: MatMul at the Spark-1.7B shapes with a batch of n
// activation rows, one thread, in multiply-adds per second of thread CPU
// time. Each SIMD tier's sub-benchmark alternates, call by call, the
// kernels before packing ("rowmajor": the matrix not prepared, the 4-row
// kernels) and the packed ones ("packed", after Prepare), so both see the
// same machine load; it reports the median rate of each and the median
// of the per-pair ratios (packed/rowmajor). The generic tier runs alone
// and only with n=64 (a second or more per product).
func BenchmarkPrefill(b *testing.B) {
	defer kernels.SetThreads(0)
	rng := newRNG(50)
	for _, sh := range prefillShapes {
		for _, typ := range prefillTypes {
			w := randomMatrix(rng, typ, sh.rows, sh.cols)
			for _, n := range []int{64, 512} {
				x := randomVec(rng, n*sh.cols)
				out := make([]float32, n*sh.rows)
				macs := float64(sh.rows * sh.cols * n)
				for _, tierName := range kernels.Tiers() {
					if tierName == "generic" && n > 64 {
						continue
					}
					b.Run(fmt.Sprintf("%s/%s/n=%d/%s", sh.name, typ, n, tierName), func(b *testing.B) {
						defer kernels.UseTier(tierName)()
						kernels.SetThreads(1)
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						packed := kernels.Prepare(&tensor.Matrix{Name: w.Name, Type: w.Type, Rows: w.Rows, Cols: w.Cols, Data: w.Data})
						defer kernels.Release(packed)
						rate := func(m *tensor.Matrix) float64 {
							c0 := threadCPU()
							kernels.MatMul(out, m, x, n)
							return macs / (threadCPU() - c0).Seconds() / 1e9
						}
						var row, pk, ratio []float64
						for b.Loop() {
							r := rate(w)
							row = append(row, r)
							if kernels.IsPrepared(packed) {
								p := rate(packed)
								pk = append(pk, p)
								ratio = append(ratio, p/r)
							}
						}
						if len(pk) == 0 {
							b.ReportMetric(median(row), "cpu-GMAC/s")
							return
						}
						b.ReportMetric(median(row), "rowmajor-GMAC/s")
						b.ReportMetric(median(pk), "packed-GMAC/s")
						b.ReportMetric(median(ratio), "packed/rowmajor")
					})
				}
			}
		}
	}
}

// reportRates reports the median and the maximum of per-call rates (a
// shared machine slows some calls down; the best shows the kernels' own
// speed).
func reportRates(b *testing.B, rates []float64) {
	b.ReportMetric(median(rates), "cpu-GMAC/s")
	b.ReportMetric(slices.Max(rates), "best-GMAC/s")
}

// BenchmarkPrepare: packing a 6656x2048 matrix (the copy Prepare makes
// at load), in weight bytes per second of wall time with the default
// thread count.
func BenchmarkPrepare(b *testing.B) {
	rng := newRNG(51)
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0} {
		w := randomMatrix(rng, typ, 6656, 2048)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(w.Data)))
			for b.Loop() {
				kernels.Prepare(w)
				kernels.Release(w)
			}
		})
	}
}

// BenchmarkActivations: the row operations of a Spark-1.7B layer on one
// token (GELU and the product with up over the 6656 FFN activations,
// SiLU likewise, RMSNorm over 2048, softmax over 512 attention scores),
// in elements per second of thread CPU time, per tier.
func BenchmarkActivations(b *testing.B) {
	rng := newRNG(52)
	const ffn, hidden, ctx = 6656, 2048, 512
	src := randomVec(rng, ffn)
	up := randomVec(rng, ffn)
	w := randomVec(rng, hidden)
	ops := []struct {
		name string
		n    int
		f    func(x []float32)
	}{
		{"GELUErf", ffn, kernels.GELUErf},
		{"GELUErfMul", ffn, func(x []float32) { kernels.GELUErfMul(x, up) }},
		{"SiLUMul", ffn, func(x []float32) { kernels.SiLUMul(x, up) }},
		{"RMSNorm", hidden, func(x []float32) { kernels.RMSNorm(x, x, w, 1e-6) }},
		{"Softmax", ctx, kernels.Softmax},
	}
	for _, op := range ops {
		for _, tierName := range kernels.Tiers() {
			b.Run(fmt.Sprintf("%s/%s", op.name, tierName), func(b *testing.B) {
				defer kernels.UseTier(tierName)()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				x := make([]float32, op.n)
				var rates []float64
				for b.Loop() {
					copy(x, src)
					c0 := threadCPU()
					op.f(x)
					rates = append(rates, float64(op.n)/(threadCPU()-c0).Seconds()/1e9)
				}
				b.ReportMetric(median(rates), "cpu-Gelem/s")
			})
		}
	}
}

// BenchmarkW4A16: one thread, the W4A16 kernels of the fastest tier
// against the generic W4A16 kernel and the same tier's F16 kernel on the
// same shape, for decode (1 activation row) and prefill (n rows). The
// three run alternately within each iteration, timed by thread CPU, so
// the reported ratios (x-generic: generic time / W4A16 time; x-f16: F16
// time / W4A16 time) come from one run under the same load.
func BenchmarkW4A16(b *testing.B) {
	defer kernels.SetThreads(0)
	best := kernels.TiersAvailable()[0] // the tier this CPU prefers
	rng := newRNG(17)
	for _, sh := range [][2]int{{2048, 2048}, {6144, 2048}} {
		rows, cols := sh[0], sh[1]
		w4 := randomMatrix(rng, tensor.W4A16, rows, cols)
		f16 := randomMatrix(rng, tensor.F16, rows, cols)
		for _, n := range []int{1, 16} {
			x := randomVec(rng, n*cols)
			out := make([]float32, n*rows)
			b.Run(fmt.Sprintf("%s/%dx%d/n=%d", best, rows, cols, n), func(b *testing.B) {
				kernels.SetThreads(1)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				timed := func(tier string, w *tensor.Matrix) time.Duration {
					defer kernels.UseTier(tier)()
					c := threadCPU()
					kernels.MatMul(out, w, x, n)
					return threadCPU() - c
				}
				var tw, tg, tf time.Duration
				for b.Loop() {
					tw += timed(best, w4)
					tg += timed("generic", w4)
					tf += timed(best, f16)
				}
				b.ReportMetric(float64(rows*cols*n)*float64(b.N)/tw.Seconds()/1e9, "cpu-GMAC/s")
				b.ReportMetric(tg.Seconds()/tw.Seconds(), "x-generic")
				b.ReportMetric(tf.Seconds()/tw.Seconds(), "x-f16")
			})
		}
	}
}

// BenchmarkPrefillGap: where the time of a batched product goes, for the
// packed K-quant kernels at the Spark-1.7B shapes with 512 activation
// rows on one thread, in multiply-adds per second of thread CPU time.
// Each iteration runs every case once, so all see the same machine load:
// "alone" calls the kernel on the first weight tile (the groups the
// product takes at a time) with the same activation rows over and over
// (all in L1/L2: the kernel's own speed); "acts" calls it on that tile
// with every activation row in turn (activations from L2/L3); "matmulq"
// is the whole product on activations quantized beforehand and "matmul"
// the product with quantization. It reports median rates and the median
// per-iteration ratio of each to alone.
func BenchmarkPrefillGap(b *testing.B) {
	defer kernels.SetThreads(0)
	const n = 512
	rng := newRNG(53)
	for _, sh := range prefillShapes {
		if sh.name == "gateup" {
			continue
		}
		for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K} {
			w := randomMatrix(rng, typ, sh.rows, sh.cols)
			x := randomVec(rng, n*sh.cols)
			out := make([]float32, n*sh.rows)
			for _, tierName := range kernels.Tiers() {
				if !slices.Contains(kernels.PackedTypes(tierName), typ) {
					continue
				}
				b.Run(fmt.Sprintf("%s/%s/n=%d/%s", sh.name, typ, n, tierName), func(b *testing.B) {
					defer kernels.UseTier(tierName)()
					kernels.SetThreads(1)
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					kernels.Prepare(w)
					defer kernels.Release(w)
					var q kernels.QuantizedActs
					q.Quantize(typ, x, n)
					rows := 4
					if kernels.PackedVec8(tierName, typ) {
						rows = 8
					}
					g := kernels.PackTileGroups(w)
					tile := float64(g * 8 * sh.cols * rows)
					cases := []struct {
						name string
						macs float64
						f    func()
					}{
						{"alone", 64 * tile, func() {
							for range 64 {
								kernels.PackedTile(w, out, sh.rows, g, &q, 0, rows)
							}
						}},
						{"acts", n / float64(rows) * tile, func() {
							for i := 0; i+rows <= n; i += rows {
								kernels.PackedTile(w, out[i*sh.rows:], sh.rows, g, &q, i, rows)
							}
						}},
						{"matmulq", float64(n * sh.rows * sh.cols), func() { kernels.MatMulQ(out, w, &q) }},
						{"matmul", float64(n * sh.rows * sh.cols), func() { kernels.MatMul(out, w, x, n) }},
					}
					if !kernels.PackedTile(w, out, sh.rows, g, &q, 0, rows) {
						b.Skip("no packed kernel")
					}
					rates := make([][]float64, len(cases))
					ratios := make([][]float64, len(cases))
					for b.Loop() {
						for i, c := range cases {
							c0 := threadCPU()
							c.f()
							rates[i] = append(rates[i], c.macs/(threadCPU()-c0).Seconds()/1e9)
							ratios[i] = append(ratios[i], rates[i][len(rates[i])-1]/rates[0][len(rates[0])-1])
						}
					}
					for i, c := range cases {
						b.ReportMetric(median(rates[i]), c.name+"-GMAC/s")
						if i > 0 {
							b.ReportMetric(median(ratios[i]), c.name+"/alone")
						}
					}
				})
			}
		}
	}
}

// BenchmarkPackedCompute is BenchmarkKernelCompute for prepared (packed)
// matrices, one activation row (decode) and a batch of 16 (prefill), in
// weight bytes per second of thread CPU time per activation row.
func BenchmarkPackedCompute(b *testing.B) {
	defer kernels.SetThreads(0)
	const cols = 2048
	rng := newRNG(18)
	for _, typ := range decodeTypes {
		stride, _ := tensor.RowBytes(typ, cols)
		rows := (192 << 10) / stride / 16 * 16
		w := randomMatrix(rng, typ, rows, cols)
		for _, n := range []int{1, 16} {
			x := randomVec(rng, n*cols)
			out := make([]float32, n*rows)
			for _, tierName := range kernels.Tiers() {
				if !slices.Contains(kernels.PackedTypes(tierName), typ) {
					continue
				}
				b.Run(fmt.Sprintf("%s/n=%d/%s", typ, n, tierName), func(b *testing.B) {
					defer kernels.UseTier(tierName)()
					kernels.Prepare(w)
					defer kernels.Release(w)
					kernels.SetThreads(1)
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0 := threadCPU()
					for b.Loop() {
						kernels.MatMul(out, w, x, n)
					}
					cpu := (threadCPU() - c0).Seconds()
					b.ReportMetric(float64(len(w.Data))*float64(n)*float64(b.N)/cpu/1e9, "cpu-GB/s")
				})
			}
		}
	}
}

// BenchmarkFloatMatVec: one activation row against a talker-sized float
// matrix (1024 rows x 3072 columns, 6 MiB in BF16: past L2, so memory
// counts), on one thread and on the default threads, per SIMD tier.
func BenchmarkFloatMatVec(b *testing.B) {
	const rows, cols = 1024, 3072
	rng := newRNG(23)
	x := randomVec(rng, cols)
	for _, typ := range []tensor.Type{tensor.BF16, tensor.F16, tensor.F32} {
		w := randomMatrix(rng, typ, rows, cols)
		out := make([]float32, rows)
		for _, threads := range []int{1, 0} {
			for _, tierName := range kernels.Tiers() {
				if tierName == "generic" {
					continue
				}
				b.Run(fmt.Sprintf("%s/threads=%d/%s", typ, threads, tierName), func(b *testing.B) {
					defer kernels.UseTier(tierName)()
					defer kernels.SetThreads(0)
					kernels.SetThreads(threads)
					b.SetBytes(int64(len(w.Data)))
					for b.Loop() {
						kernels.MatVec(out, w, x)
					}
				})
			}
		}
	}
}

// BenchmarkLayerStream: a decode step's matrix products (Q4_K, prepared)
// on the default threads, layer by layer over 300 MiB of weights (past
// the last-level cache), for the Qwen3-TTS talker's layer shapes (hidden
// 1024: 0.6-1.7 MB a matrix) and Qwen3-1.7B's (hidden 2048), with one
// activation row (one stream) and eight (a batch of eight streams),
// alternated with the read-only probe over the same bytes; rates by the
// wall clock, medians. Small matrices show what each job's hand-offs and
// the threads' jumps between chunks cost; eight rows, how far the batched
// kernels stay from the bandwidth they could use.
func BenchmarkLayerStream(b *testing.B) {
	const total = 300 << 20
	rng := newRNG(17)
	for _, set := range []struct {
		name   string
		shapes [][2]int
	}{{"talker", [][2]int{{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}}},
		{"qwen3-1.7b", [][2]int{{2048, 2048}, {1024, 2048}, {1024, 2048}, {2048, 2048}, {6144, 2048}, {6144, 2048}, {2048, 6144}}}} {
		var mats []*tensor.Matrix
		bytes := 0
		for i := 0; bytes < total; i++ {
			sh := set.shapes[i%len(set.shapes)]
			mats = append(mats, randomMatrix(rng, tensor.Q4_K, sh[0], sh[1]))
			bytes += len(mats[i].Data)
		}
		for _, n := range []int{1, 8} {
			xs, outs := map[int][]float32{}, map[int][]float32{}
			for _, sh := range set.shapes {
				xs[sh[1]], outs[sh[0]] = randomVec(rng, n*sh[1]), make([]float32, n*sh[0])
			}
			b.Run(fmt.Sprintf("%s/rows=%d", set.name, n), func(b *testing.B) {
				for _, m := range mats {
					kernels.Prepare(m)
					defer kernels.Release(m)
				}
				var kt, pt []float64
				for b.Loop() {
					t0 := time.Now()
					for _, m := range mats {
						kernels.MatMul(outs[m.Rows], m, xs[m.Cols], n)
					}
					t1 := time.Now()
					readProbe(mats, kernels.Threads())
					t2 := time.Now()
					kt = append(kt, float64(bytes)/t1.Sub(t0).Seconds()/1e9)
					pt = append(pt, float64(bytes)/t2.Sub(t1).Seconds()/1e9)
				}
				b.ReportMetric(median(kt), "kernel-GB/s")
				b.ReportMetric(median(pt), "probe-GB/s")
				b.ReportMetric(median(kt)/median(pt), "ratio")
			})
		}
	}
}
