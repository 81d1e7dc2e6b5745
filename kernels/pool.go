package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

var threads atomic.Int32 // 0: use GOMAXPROCS

// SetThreads sets how many threads MatVec and MatMul may use (the
// caller's goroutine and up to n-1 persistent workers); n <= 0 restores
// the default, runtime.GOMAXPROCS(0) at the time of each call. Results
// never depend on it: each output element is computed by one thread with
// the same code.
func SetThreads(n int) {
	if n < 0 {
		n = 0
	}
	threads.Store(int32(n))
}

// Threads returns the number of threads MatVec and MatMul may use.
func Threads() int {
	if n := threads.Load(); n > 0 {
		return int(n)
	}
	return runtime.GOMAXPROCS(0)
}

// minWorkPerThread is the number of multiply-adds below which handing
// work to another thread (a wake-up, cache traffic, the final wait) costs
// more than it saves: the job runs on fewer threads, or on the caller.
const minWorkPerThread = 1 << 16

// A task is one parallel operation over the index range [0, n): run is
// called on disjoint sub-ranges that together cover it, from several
// threads at once.
type task interface {
	run(lo, hi int)
}

// funcTask adapts a closure (tests, rarely used paths; it allocates).
type funcTask func(lo, hi int)

func (f funcTask) run(lo, hi int) { f(lo, hi) }

// The pool: persistent workers that spin for a short while after each job
// (a transformer step issues its matrix products microseconds apart) and
// then park on a channel. One job runs at a time; a caller that finds
// the pool busy (mu held) runs its job on its own goroutine. The caller's
// goroutine works on every job too, and it never waits for a worker that
// has not started: once the chunks are all claimed it cancels the workers
// still pending, so a worker that the OS (or a busy machine) wakes late
// costs nothing.
//
// Each handshake between the caller and a worker (wake a parked worker,
// cancel it, wait for it to finish) is a transition of one atomic word,
// the worker's state, made with Swap or CompareAndSwap: whoever moves the
// state out of a "parked" value sends the one token the parked side
// receives. No decision depends on the order in which two different
// variables are seen, which the earlier design (a parked flag beside the
// state, written then the other side's read) needed: it relied on a store
// followed by a load of another variable never being reordered (true of
// Go's atomics, but qemu-user's arm64 translation on x86 hosts reorders
// STLR then LDAR, and the caller then slept forever on a worker that had
// finished without seeing it park).
type pool struct {
	mu      sync.Mutex
	workers []*worker

	// The current job, written by the caller before the workers are
	// signalled and read-only while any of them runs it.
	t     task
	n     int // index range [0, n)
	grain int // chunks are multiples of grain (but the last)
	nt    int // threads on this job, the caller included
	spans []span

	// The caller, parked waiting for a worker (whose state it set to
	// waited), receives here; one token per wait.
	waiterWake chan struct{}
}

// Worker states. Only the worker moves idle to parked, only the caller
// moves running to waited; the one who moves a state out of parked
// (caller) or waited (worker) sends the token the other side waits for.
const (
	idle    = iota // no job for this worker; it spins
	parked         // no job; it sleeps on wake
	pending        // signalled; the caller may still cancel it
	running        // on the job; the caller waits for it
	waited         // on the job; the caller sleeps on waiterWake
)

type worker struct {
	p     *pool
	id    int // its span: 1 to Threads()-1 (the caller's is 0)
	state atomic.Int32
	wake  chan struct{}
	_     [64]byte // keep workers' hot fields on separate cache lines
}

// guidedShare: a chunk is 1/guidedShare of what is left of the thread's
// span (taken from another's: half that).
var guidedShare = 4

var thePool = &pool{waiterWake: make(chan struct{}, 1)}

// spinFor is how long an idle worker, or the caller waiting for workers,
// spins before parking.
const spinFor = 100 * time.Microsecond

// callers counts the goroutines inside parallelFor. Two pipelines
// stepping at once (speech: the talker and predictor beside the codec)
// share the threads: each job takes Threads() less one per other caller,
// so two callers on two threads run one thread each, and a caller alone
// again takes them all.
var callers atomic.Int32

// parallelFor calls t.run on disjoint ranges covering [0, n), on up to
// Threads() threads (the caller's included, less one for each other
// goroutine in parallelFor). unitWork is the cost of one index in
// multiply-adds: small jobs run on the calling goroutine alone. Chunks
// are multiples of grain indices (except the last); each thread takes
// them in order from its own contiguous span, with decreasing sizes, and
// then from the back of the others' (see span), so the threads finish
// together even when one of them is slowed down by the OS.
func parallelFor(t task, n, unitWork, grain int) {
	if n <= 0 {
		return
	}
	others := int(callers.Add(1)) - 1
	defer callers.Add(-1)
	grain = max(grain, 1)
	nt := min(Threads()-others, (n+grain-1)/grain)
	if total := n * unitWork; total/minWorkPerThread < nt {
		nt = total / minWorkPerThread
	}
	if nt <= 1 || !thePool.mu.TryLock() {
		t.run(0, n) // small, or the pool is another caller's
		return
	}
	thePool.do(t, n, grain, nt)
}

// ParallelFor calls fn on disjoint ranges covering [0, n) from up to
// Threads() threads, as the matrix products are split: unitWork is the
// cost of one index in multiply-adds (small jobs run on the caller
// alone), chunks are multiples of grain and shrink as the work runs out
// (as parallelFor deals them), so the threads finish together.
func ParallelFor(n, unitWork, grain int, fn func(lo, hi int)) {
	parallelFor(funcTask(fn), n, unitWork, grain)
}

// Parallel reports whether a job of work multiply-adds is large enough
// for ParallelFor to hand part of it to another thread (given enough
// indices): below that it runs on the caller alone, and splitting it
// finer only adds overhead.
func Parallel(work int) bool { return Threads() > 1 && work/minWorkPerThread >= 2 }

// do runs the job on nt threads; the caller holds p.mu.
func (p *pool) do(t task, n, grain, nt int) {
	defer p.mu.Unlock()
	for len(p.workers) < nt-1 {
		w := &worker{p: p, id: len(p.workers) + 1, wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go w.loop()
	}
	p.t, p.n, p.grain, p.nt = t, n, grain, nt
	p.split(n, grain, nt)
	ws := p.workers[:nt-1]
	for _, w := range ws {
		// Every worker is idle or parked between jobs.
		if w.state.Swap(pending) == parked {
			w.wake <- struct{}{}
		}
	}
	p.work(0)
	for _, w := range ws {
		if !w.state.CompareAndSwap(pending, idle) { // cancelled if it had not started
			p.waitIdle(w)
		}
	}
	p.t = nil
}

// A job's range is dealt out as nt contiguous spans, one per thread (the
// caller's first), in units of grain indices. A thread claims chunks from
// the front of its own span, in order, so a thread streaming weights
// from memory reads one run of them: with one guided schedule over the
// whole range the threads' chunks interleaved, each chunk a jump that
// restarts the prefetchers. BenchmarkLayerStream (Q4_K, two threads, Zen
// 5, alternated twice): the talker's matrices (1024 columns, 0.6-1.7 MB)
// at 0.61-0.66 of the read probe's rate before, 0.86-0.91 in spans;
// Qwen3-1.7B's at 0.96-0.98 before, 1.02-1.07. A thread whose span is
// done takes chunks from the back of the span with the most left, so a
// thread slowed down (or woken late) holds up no one.
type span struct {
	fb atomic.Uint64 // front<<32 | back, in units; empty when front >= back
	_  [56]byte
}

// split deals [0, n) out as nt spans of grain-index units (fewer than
// 2^32 of them: a job's range is a matrix's rows or an attention's tiles).
func (p *pool) split(n, grain, nt int) {
	if len(p.spans) < nt {
		p.spans = make([]span, nt)
	}
	units := (n + grain - 1) / grain
	for i := range nt {
		lo, hi := units*i/nt, units*(i+1)/nt
		p.spans[i].fb.Store(uint64(lo)<<32 | uint64(hi))
	}
}

// work claims and runs chunks until none is left: thread self's own span
// front first, then the others' backs.
func (p *pool) work(self int) {
	for {
		lo, hi, ok := p.claim(self)
		if !ok {
			return
		}
		p.t.run(lo*p.grain, min(hi*p.grain, p.n))
	}
}

// claim takes a chunk (units [lo, hi)): a guided share of what is left
// of self's span, from its front; once that is empty, a smaller share
// of the fullest other span, from its back.
func (p *pool) claim(self int) (lo, hi int, ok bool) {
	s := &p.spans[self]
	for {
		v := s.fb.Load()
		f, b := int(v>>32), int(uint32(v))
		if f >= b {
			break
		}
		c := max(1, (b-f)/guidedShare)
		if s.fb.CompareAndSwap(v, uint64(f+c)<<32|uint64(b)) {
			return f, f + c, true
		}
	}
	for {
		var victim *span
		var v uint64
		most := 0
		for i := range p.nt {
			w := p.spans[i].fb.Load()
			if left := int(uint32(w)) - int(w>>32); left > most {
				victim, v, most = &p.spans[i], w, left
			}
		}
		if victim == nil {
			return 0, 0, false
		}
		f, b := int(v>>32), int(uint32(v))
		c := max(1, most/(2*guidedShare))
		if victim.fb.CompareAndSwap(v, uint64(f)<<32|uint64(b-c)) {
			return b - c, b, true
		}
	}
}

// waitIdle waits until a worker that took the job has finished it: its
// state is running, or already idle (or parked, once idle).
func (p *pool) waitIdle(w *worker) {
	if spinUntil(func() bool { return w.state.Load() != running }) {
		return
	}
	// Still running: park, unless it finished just now (the CAS fails,
	// and the worker sends nothing).
	if w.state.CompareAndSwap(running, waited) {
		<-p.waiterWake
	}
}

func (w *worker) loop() {
	p := w.p
	signalled := func() bool { return w.state.Load() == pending }
	for {
		// Park, unless signalled meanwhile (the CAS fails: the state is
		// pending, and the caller sends nothing). A caller that finds
		// the state parked sends exactly one token; it may cancel the
		// job before this receives it, and the next check sees idle.
		if !spinUntil(signalled) && w.state.CompareAndSwap(idle, parked) {
			<-w.wake
		}
		if !w.state.CompareAndSwap(pending, running) {
			continue // cancelled
		}
		p.work(w.id)
		if w.state.Swap(idle) == waited {
			p.waiterWake <- struct{}{}
		}
	}
}

// spinUntil polls cond for up to spinFor and reports whether it became
// true. Every few polls it yields the P (runtime.Gosched), so goroutines
// of the caller's program (attention heads, say) are not held up by a
// spinning worker. It does not spin when there are more threads than Ps.
func spinUntil(cond func() bool) bool {
	if Threads() > runtime.GOMAXPROCS(0) {
		return cond()
	}
	start := time.Now()
	for {
		for range 16 {
			if cond() {
				return true
			}
			spinPause()
		}
		if time.Since(start) > spinFor {
			return cond()
		}
		runtime.Gosched()
	}
}
