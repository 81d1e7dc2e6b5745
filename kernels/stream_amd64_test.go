//go:build linux && amd64 && gc && !purego

package kernels

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/siskin-ml/siskin/internal/cputime"
	"github.com/siskin-ml/siskin/tensor"
)

// streamKernels are the one-activation-row packed kernels that
// BenchmarkPackedStream times, by weight type (the AVX-512 tier's, called
// directly on pairs of groups, with T0 and NTA prefetches; for Q8_0 the
// AVX-512 and AVX2 kernels).
var streamKernels = map[tensor.Type][]streamKernel{
	tensor.Q4_K: {{"avx512", q4kPackVecAVX512}, {"nta", q4kPackVecAVX512NTA}},
	tensor.Q6_K: {{"avx512", q6kPackVecAVX512}, {"nta", q6kPackVecAVX512NTA}},
	tensor.Q4_0: {{"avx512", q4_0PackVecAVX512}, {"nta", q4_0PackVecAVX512NTA}},
	tensor.Q8_0: {{"avx512", q8_0PackVecAVX512}, {"avx2", q8_0PackVecAVX2}},
}

type streamKernel struct {
	name string
	f    packVecAsm
}

// BenchmarkPackedStream: the AVX-512 one-row packed kernels alone (no
// pool: each thread calls the kernel on its own contiguous half of the
// groups) on 256 MiB of packed weights, far past the last-level cache
// ("dram"; and "l2": 256 rows, read over and over, for the kernel's own
// speed),
// against the read-only sum of the same bytes split the same way (the
// bench command's bandwidth probe), the two alternated pass by pass. It
// reports the median rate of each and the median of the per-pass ratios
// (kernel/probe): the share of the read ceiling the kernel reaches. Rates
// are bytes over the largest thread CPU time of the threads (a shared
// machine's other load disturbs that less than the wall clock).
func BenchmarkPackedStream(b *testing.B) {
	if !supported[tierAVX512] {
		b.Skip("no AVX-512 VNNI")
	}
	defer setTier(setTier(tierAVX512))
	const cols = 2048
	for _, c := range []struct {
		typ  tensor.Type
		size int
	}{{tensor.Q4_K, 256 << 20}, {tensor.Q6_K, 256 << 20}, {tensor.Q4_0, 256 << 20}, {tensor.Q8_0, 256 << 20}, {tensor.Q4_K, 0}, {tensor.Q6_K, 0}, {tensor.Q4_0, 0}} {
		typ := c.typ
		w, groups, blocks := streamWeights(typ, cols, c.size)
		where, reps := "dram", 1
		if c.size == 0 {
			where, reps = "l2", (256<<20)/len(w)
		}
		k := kernelSets[tierAVX512][typ]
		x := make([]float32, cols)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		xq := make([]byte, k.actBytes(cols))
		k.quant(xq, x)
		out := make([]float32, groups*packRows)
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%s/threads=%d", typ, where, th), func(b *testing.B) {
				kerns := streamKernels[typ]
				kr := make([][]float64, len(kerns))
				ratio := make([][]float64, len(kerns))
				var pr []float64
				for b.Loop() {
					for i, kern := range kerns {
						dk := splitPairs(th, groups, func(g0, g1 int) {
							for range reps {
								kern.f(out[g0*packRows:g1*packRows], w[g0*len(w)/groups:g1*len(w)/groups], g1-g0, blocks, xq)
							}
						})
						dp := splitPairs(th, groups, func(g0, g1 int) {
							for range reps {
								streamSink[g0/(groups/2)*8] += streamSum(w[g0*len(w)/groups : g1*len(w)/groups])
							}
						})
						kr[i] = append(kr[i], float64(reps*len(w))/dk.Seconds()/1e9)
						pr = append(pr, float64(reps*len(w))/dp.Seconds()/1e9)
						ratio[i] = append(ratio[i], kr[i][len(kr[i])-1]/pr[len(pr)-1])
					}
				}
				b.ReportMetric(streamMedian(pr), "probe-GB/s")
				for i, kern := range kerns {
					b.ReportMetric(streamMedian(kr[i]), kern.name+"-GB/s")
					b.ReportMetric(streamMedian(ratio[i]), kern.name+"-ratio")
				}
			})
		}
	}
}

// streamWeights returns about size bytes of packed weights of typ (cols
// columns; random quants, fp16 scales 1/64), as groups groups of blocks
// blocks: a 256-row matrix packed once and copied.
func streamWeights(typ tensor.Type, cols, size int) (w []byte, groups, blocks int) {
	const rows = 256
	stride, _ := tensor.RowBytes(typ, cols)
	src := make([]byte, rows*stride)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	bb := typ.BlockBytes()
	for off := 0; off < len(src); off += bb {
		blk := src[off : off+bb]
		switch typ {
		case tensor.Q4_K, tensor.Q5_K:
			binary.LittleEndian.PutUint16(blk, 0x2400)
			binary.LittleEndian.PutUint16(blk[2:], 0x2400)
		case tensor.Q6_K:
			binary.LittleEndian.PutUint16(blk[208:], 0x2400)
		case tensor.Q4_0:
			binary.LittleEndian.PutUint16(blk, 0x2400)
		}
	}
	m := &tensor.Matrix{Name: "stream", Type: typ, Rows: rows, Cols: cols, Data: src}
	Prepare(m)
	defer Release(m)
	p := lookupPrepared(m)
	if p == nil || p.fullGroups != rows/packRows {
		panic("not packed")
	}
	n := max(1, size/len(p.data))
	w = packAlloc(n * len(p.data))
	for i := 0; i < n; i++ {
		copy(w[i*len(p.data):], p.data)
	}
	return w, n * p.groups, p.blocks
}

// splitPairs calls f on threads contiguous ranges of whole pairs of
// groups covering [0, groups), each on its own goroutine, and returns the
// largest thread CPU time that took.
func splitPairs(threads, groups int, f func(g0, g1 int)) time.Duration {
	pairs := groups / 2
	var wg sync.WaitGroup
	cpu := make([]time.Duration, threads)
	for t := 0; t < threads; t++ {
		g0, g1 := 2*(pairs*t/threads), 2*(pairs*(t+1)/threads)
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0 := cputime.Thread()
			f(g0, g1)
			cpu[t] = cputime.Thread() - c0
		})
	}
	wg.Wait()
	return slices.Max(cpu)
}

var streamSink [16]uint64

func streamSum(b []byte) uint64 {
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

func streamMedian(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkPackedStreamPool: the packed one-row products through the
// pool (mulPacked: chunks, hand-offs, the last straggler), on matrices
// of a Qwen3-1.7B layer's sizes (4096, 2048, 12288 and 6144 rows of 2048
// columns) carved one after another from 256 MiB of packed weights,
// against the read-only sum of the same bytes on as many threads, both
// timed by the wall clock and alternated pass by pass; per guided-chunk
// share (guidedShare).
func BenchmarkPackedStreamPool(b *testing.B) {
	if !supported[tierAVX512] {
		b.Skip("no AVX-512 VNNI")
	}
	defer setTier(setTier(tierAVX512))
	defer func(g int) { guidedShare = g }(guidedShare)
	const cols = 2048
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0} {
		w, groups, blocks := streamWeights(typ, cols, 256<<20)
		k := kernelSets[tierAVX512][typ]
		gstride := len(w) / groups
		var ps []*prepared
		for g, i := 0, 0; ; i++ {
			rows := []int{4096, 2048, 12288, 6144}[i%4]
			if g+rows/packRows > groups {
				break
			}
			ps = append(ps, &prepared{tier: tierAVX512, typ: typ, rows: rows, cols: cols, pk: k.packed,
				data: w[g*gstride : (g+rows/packRows)*gstride], blocks: blocks, gstride: gstride,
				groups: rows / packRows, fullGroups: rows / packRows})
			g += rows / packRows
		}
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		xq := make([]byte, k.actBytes(cols))
		k.quant(xq, x)
		out := make([]float32, 12288)
		b.Run(fmt.Sprintf("%s/threads=%d", typ, Threads()), func(b *testing.B) {
			shares := []int{4, 2, 8}
			kr := make([][]float64, len(shares))
			ratio := make([][]float64, len(shares))
			var pr []float64
			var bytes int
			for _, p := range ps {
				bytes += len(p.data)
			}
			for b.Loop() {
				for i, sh := range shares {
					guidedShare = sh
					t0 := time.Now()
					for _, p := range ps {
						mulPacked(out[:p.rows], p, xq, len(xq), 1)
					}
					t1 := time.Now()
					var wg sync.WaitGroup
					th := Threads()
					for t := 0; t < th; t++ {
						wg.Go(func() {
							for _, p := range ps {
								n := len(p.data) / 64 / th * 64
								streamSink[8*t] += streamSum(p.data[t*n : (t+1)*n])
							}
						})
					}
					wg.Wait()
					t2 := time.Now()
					kr[i] = append(kr[i], float64(bytes)/t1.Sub(t0).Seconds()/1e9)
					pr = append(pr, float64(bytes)/t2.Sub(t1).Seconds()/1e9)
					ratio[i] = append(ratio[i], kr[i][len(kr[i])-1]/pr[len(pr)-1])
				}
			}
			b.ReportMetric(streamMedian(pr), "probe-GB/s")
			for i, sh := range shares {
				b.ReportMetric(streamMedian(kr[i]), fmt.Sprintf("share%d-GB/s", sh))
				b.ReportMetric(streamMedian(ratio[i]), fmt.Sprintf("share%d-ratio", sh))
			}
		})
	}
}

// BenchmarkPackedStreamChunks: BenchmarkPackedStream's kernels on two
// threads in the pool's chunks (guided, a 1/(share*2) part of what is
// left, at least 4 groups, chunks dealt to the threads in turn) of
// matrices of a Qwen3-1.7B layer's sizes, by thread CPU time: what the
// chunk starts and ends cost, against the read-only sum of each thread's
// half.
func BenchmarkPackedStreamChunks(b *testing.B) {
	if !supported[tierAVX512] {
		b.Skip("no AVX-512 VNNI")
	}
	defer setTier(setTier(tierAVX512))
	const cols = 2048
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0} {
		w, groups, blocks := streamWeights(typ, cols, 256<<20)
		k := kernelSets[tierAVX512][typ]
		gstride := len(w) / groups
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		xq := make([]byte, k.actBytes(cols))
		k.quant(xq, x)
		out := make([]float32, groups*packRows)
		// chunks[share][t]: thread t's group ranges.
		chunks := map[int][2][][2]int{}
		for _, share := range []int{4, 2} {
			var cs [2][][2]int
			i := 0
			for g, m := 0, 0; ; m++ {
				n := []int{4096, 2048, 12288, 6144}[m%4] / packRows
				if g+n > groups {
					break
				}
				for lo := 0; lo < n; i++ {
					c := max(4, ((n-lo)/(share*2)+3)/4*4)
					hi := min(lo+c, n)
					cs[i%2] = append(cs[i%2], [2]int{g + lo, g + hi})
					lo = hi
				}
				g += n
			}
			chunks[share] = cs
		}
		b.Run(fmt.Sprintf("%s/threads=2", typ), func(b *testing.B) {
			type variant struct {
				name  string
				f     packVecAsm
				share int
			}
			var vs []variant
			for _, kern := range streamKernels[typ] {
				for _, share := range []int{4, 2} {
					vs = append(vs, variant{fmt.Sprintf("%s-share%d", kern.name, share), kern.f, share})
				}
			}
			kr := make([][]float64, len(vs))
			ratio := make([][]float64, len(vs))
			var pr []float64
			for b.Loop() {
				for i, v := range vs {
					cs := chunks[v.share]
					dk := splitPairs(2, 4, func(g0, _ int) { // thread g0/2
						for _, c := range cs[g0/2] {
							v.f(out[c[0]*packRows:c[1]*packRows], w[c[0]*gstride:c[1]*gstride], c[1]-c[0], blocks, xq)
						}
					})
					dp := splitPairs(2, groups, func(g0, g1 int) {
						streamSink[g0/(groups/2)*8] += streamSum(w[g0*gstride : g1*gstride])
					})
					kr[i] = append(kr[i], float64(len(w))/dk.Seconds()/1e9)
					pr = append(pr, float64(len(w))/dp.Seconds()/1e9)
					ratio[i] = append(ratio[i], kr[i][len(kr[i])-1]/pr[len(pr)-1])
				}
			}
			b.ReportMetric(streamMedian(pr), "probe-GB/s")
			for i, v := range vs {
				b.ReportMetric(streamMedian(ratio[i]), v.name+"-ratio")
			}
		})
	}
}
