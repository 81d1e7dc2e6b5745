package model

import "sync"

// Temporaries of the passes that need them (a layer stack's
// activations, a prompt's embedding rows) are kept between passes.
// Fresh buffers come from memory the process has not touched since the
// last garbage collection, which with gigabytes of weights on the heap
// is far off: each new page is a page fault (tens of microseconds on a
// virtual machine), and a decode step's temporaries, made for every
// pass, added up to thousands a second. Buffers up to keepBytes are kept
// on a short list that garbage collection leaves alone (a server's first
// request after an idle while finds them touched); larger ones, which a
// long prompt's prefill makes, in a sync.Pool.
var floatScratch struct {
	mu   sync.Mutex
	kept []*[]float32
	pool sync.Pool // *[]float32
}

const (
	keepBytes = 4 << 20
	keepCount = 4
)

// GetScratch returns n zeroed float32s, from a kept buffer when one is
// large enough. Give it back with PutScratch when done.
func GetScratch(n int) *[]float32 {
	p := takeKept(n)
	if p == nil {
		p, _ = floatScratch.pool.Get().(*[]float32)
	}
	if p == nil || cap(*p) < n {
		s := make([]float32, n)
		return &s
	}
	*p = (*p)[:n]
	clear(*p)
	return p
}

// takeKept takes the smallest kept buffer of at least n float32s.
func takeKept(n int) *[]float32 {
	s := &floatScratch
	s.mu.Lock()
	defer s.mu.Unlock()
	at := -1
	for i, p := range s.kept {
		if cap(*p) >= n && (at < 0 || cap(*p) < cap(*s.kept[at])) {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	p := s.kept[at]
	s.kept = append(s.kept[:at], s.kept[at+1:]...)
	return p
}

// TakeScratch returns a zeroed slice of each length in ns, all cut from
// one GetScratch buffer, and the func that hands it back.
func TakeScratch(ns ...int) ([][]float32, func()) {
	total := 0
	for _, n := range ns {
		total += n
	}
	buf := GetScratch(total)
	rest := *buf
	out := make([][]float32, len(ns))
	for i, n := range ns {
		out[i], rest = rest[:n:n], rest[n:]
	}
	return out, func() { PutScratch(buf) }
}

// PutScratch hands a buffer from GetScratch back; the caller keeps no
// part of it.
func PutScratch(p *[]float32) {
	s := &floatScratch
	if cap(*p)*4 <= keepBytes {
		s.mu.Lock()
		if len(s.kept) < keepCount {
			s.kept = append(s.kept, p)
			p = nil
		}
		s.mu.Unlock()
	}
	if p != nil {
		s.pool.Put(p)
	}
}
