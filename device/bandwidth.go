package device

import (
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Bandwidth is the result of a memory read-bandwidth measurement.
//
// Method: a buffer several times larger than the last-level cache
// (BufferBytes) is first written by the same threads that will read it,
// so every page is really backed (an untouched page reads the shared
// zero page, which lives in cache) and, on NUMA machines, lies near the
// thread that reads it. Then each pass has every thread sum its own
// contiguous slice of 64-bit words with independent accumulators, so
// the loop is limited by memory rather than by the add latency, in one
// of the ReadPatterns (four streams at once, or one); a pass's bandwidth
// is the buffer's size over the wall time from start to the last thread
// finishing. Passes alternate the patterns and repeat for the requested
// duration (at least three of each); the faster pattern's median is
// reported, because a shared or virtualised machine has outliers on both
// sides and CPUs differ in which pattern their prefetchers serve best. This read-only sum is
// what decoding does with the weights, so tokens/s is bounded by
// GBs / weight bytes.
type Bandwidth struct {
	GBs         float64       `json:"gbs"` // median, 10^9 bytes per second
	MinGBs      float64       `json:"min_gbs"`
	MaxGBs      float64       `json:"max_gbs"`
	Threads     int           `json:"threads"`
	BufferBytes int64         `json:"buffer_bytes"`
	Passes      int           `json:"passes"`
	Duration    time.Duration `json:"duration_ns"`
	// Pattern names the read pattern whose passes are reported.
	Pattern string `json:"pattern"`
}

// ReadPattern is one way to read a thread's slice of the probe's buffer.
type ReadPattern struct {
	Name string
	Sum  func([]uint64) uint64
}

// ReadPatterns are the patterns bandwidth probes alternate, reporting the
// faster. Neither wins everywhere: on an Intel Xeon VM (2 threads, 1 GiB)
// one stream a goroutine read 14.8-16.1 GB/s and four 19.6-19.9, while on
// an AMD Zen 4 EPYC VM one stream read 31-32.5 GB/s and four 23.7-24.4
// (seven alternated passes each, twice), and a ceiling the kernels beat
// is no ceiling.
var ReadPatterns = []ReadPattern{{"four streams", SumWords}, {"one stream", SumStream}}

// BestPattern returns the index of the rates (one slice per pattern,
// each sorted) whose median is highest.
func BestPattern(rates [][]float64) int {
	best := 0
	for i := range rates {
		if median(rates[i]) > median(rates[best]) {
			best = i
		}
	}
	return best
}

// Buffer-size bounds: large enough that the caches cannot hold a
// meaningful part of it, small enough for a 1 GiB board.
const (
	bwMinBuffer   = 64 << 20
	bwMaxBuffer   = 1 << 30
	bwDefaultL3   = 32 << 20
	bwL3Multiple  = 8
	bwMinPasses   = 3
	bwDefaultTime = time.Second
)

// sink keeps the sums alive so the compiler cannot drop the loads.
var sink atomic.Uint64

// MeasureBandwidth measures main-memory read bandwidth in GB/s with the
// given number of threads (<= 0: Probe().DefaultThreads()) for about d
// (<= 0: one second). See Bandwidth for the method.
func MeasureBandwidth(threads int, d time.Duration) (gbs float64) {
	return MeasureBandwidthDetail(nil, threads, d).GBs
}

// MeasureBandwidthDetail is MeasureBandwidth with the details. info, if
// not nil, sizes the buffer from its L3 size and available memory and
// gives the default thread count; nil probes.
func MeasureBandwidthDetail(info *Info, threads int, d time.Duration) Bandwidth {
	if info == nil {
		info = Probe()
	}
	if threads <= 0 {
		threads = info.DefaultThreads()
	}
	if d <= 0 {
		d = bwDefaultTime
	}
	return measureBandwidth(threads, d, bufferSize(info))
}

// bufferSize is bwL3Multiple times the L3 (or a typical 32 MiB when
// unknown), within [bwMinBuffer, bwMaxBuffer] and at most an eighth of
// the available memory.
func bufferSize(info *Info) int64 {
	l3 := info.Caches.L3
	if l3 <= 0 {
		l3 = bwDefaultL3
	}
	n := min(max(l3*bwL3Multiple, bwMinBuffer), bwMaxBuffer)
	if a := info.Memory.AvailableBytes; a > 0 {
		n = min(n, max(a/8, 8<<20))
	}
	return n
}

func measureBandwidth(threads int, d time.Duration, size int64) Bandwidth {
	words := int(size / 8)
	threads = max(1, min(threads, words/1024))
	buf := make([]uint64, words)
	chunk := func(t int) []uint64 { return buf[t*words/threads : (t+1)*words/threads] }
	parallel := func(f func([]uint64)) time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for t := range threads {
			wg.Go(func() { f(chunk(t)) })
		}
		wg.Wait()
		return time.Since(start)
	}
	parallel(func(b []uint64) {
		for i := range b {
			b[i] = uint64(i)
		}
	})
	rates := make([][]float64, len(ReadPatterns))
	begin := time.Now()
	for pass := 0; len(rates[len(rates)-1]) < bwMinPasses || time.Since(begin) < d; pass++ {
		p := pass % len(ReadPatterns)
		el := parallel(func(b []uint64) { sink.Add(ReadPatterns[p].Sum(b)) })
		rates[p] = append(rates[p], float64(words*8)/el.Seconds()/1e9)
	}
	total := time.Since(begin)
	buf = nil // the closures hold buf by reference: drop it for the GC
	// Give the buffer back now: a server probing at start-up should not
	// keep it resident until the next GC cycle happens to run.
	debug.FreeOSMemory()
	for _, r := range rates {
		slices.Sort(r)
	}
	p := BestPattern(rates)
	r := rates[p]
	return Bandwidth{
		GBs:         median(r),
		MinGBs:      r[0],
		MaxGBs:      r[len(r)-1],
		Threads:     threads,
		BufferBytes: int64(words) * 8,
		Passes:      len(r),
		Duration:    total,
		Pattern:     ReadPatterns[p].Name,
	}
}

// SumWords adds up b as four streams read together, its four quarters
// side by side, 32 bytes of each a step, with an accumulator each so
// the adds never limit the loads (on the Intel Xeon VM of ReadPatterns,
// decoding a Q4_0 model streamed its weights at 18.9 GB/s, above what
// one stream read).
func SumWords(b []uint64) uint64 {
	q := len(b) / 4 &^ 3
	a0, a1, a2, a3 := b[:q], b[q:2*q], b[2*q:3*q], b[3*q:4*q]
	var s0, s1, s2, s3 uint64
	for i := 0; i < q; i += 4 {
		c0, c1, c2, c3 := a0[i:i+4:i+4], a1[i:i+4:i+4], a2[i:i+4:i+4], a3[i:i+4:i+4]
		s0 += c0[0] + c0[1] + c0[2] + c0[3]
		s1 += c1[0] + c1[1] + c1[2] + c1[3]
		s2 += c2[0] + c2[1] + c2[2] + c2[3]
		s3 += c3[0] + c3[1] + c3[2] + c3[3]
	}
	for _, v := range b[4*q:] {
		s0 += v
	}
	return s0 + s1 + s2 + s3
}

// SumStream adds up b in order, 64 bytes a step into four accumulators.
func SumStream(b []uint64) uint64 {
	var s0, s1, s2, s3 uint64
	n := len(b) &^ 7
	for i := 0; i < n; i += 8 {
		c := b[i : i+8 : i+8]
		s0 += c[0] + c[4]
		s1 += c[1] + c[5]
		s2 += c[2] + c[6]
		s3 += c[3] + c[7]
	}
	for _, v := range b[n:] {
		s0 += v
	}
	return s0 + s1 + s2 + s3
}

// median of sorted values.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
