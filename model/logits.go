package model

import "sync"

// A step's logits are Vocab floats a row (4.9 MB for eight rows of a
// 152k vocabulary). Made fresh each step they are memory the process has
// not touched (see scratch.go), so every step pays a page fault per 4 KiB
// inside the logits product. A caller done with a step's logits hands
// them back (RecycleLogits) for a later step. Only the last few steps'
// buffers are remembered, so a caller that never hands them back keeps
// nothing alive.
var logitsBufs logitsPool

type logitsPool struct {
	mu   sync.Mutex
	out  [2]*[]float32 // handed out, oldest overwritten first
	next int
	free []*[]float32 // handed back, at most two
}

// maxRecycled is the largest logits buffer kept, in bytes: a decode
// step's (sixteen rows of a 152k vocabulary take 9.7 MB), not a prompt's
// every-token logits.
const maxRecycled = 16 << 20

// newLogits returns n float32s, not cleared, for a step's logits.
func newLogits(n int) []float32 {
	if n == 0 || 4*n > maxRecycled {
		return make([]float32, n)
	}
	s := &logitsBufs
	s.mu.Lock()
	defer s.mu.Unlock()
	var p *[]float32
	for i, f := range s.free {
		if cap(*f) >= n {
			p = f
			s.free = append(s.free[:i], s.free[i+1:]...)
			break
		}
	}
	if p == nil {
		b := make([]float32, n)
		p = &b
	}
	*p = (*p)[:n]
	s.out[s.next] = p
	s.next = (s.next + 1) % len(s.out)
	return *p
}

// RecycleLogits hands back what a ForwardBatch returned, once the caller
// keeps no part of it; slices that are not a step's logits (hidden
// states) are left alone.
func RecycleLogits(out [][]float32) {
	s := &logitsBufs
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range out {
		if len(o) == 0 {
			continue
		}
		for i, p := range s.out {
			if p != nil && &(*p)[0] == &o[0] {
				s.out[i] = nil
				s.keep(p)
			}
		}
	}
}

// keep adds p to the buffers handed back, in place of the smallest when
// two are kept (so that steps of one sequence do not leave only buffers
// too small for a step of eight).
func (s *logitsPool) keep(p *[]float32) {
	if len(s.free) < 2 {
		s.free = append(s.free, p)
		return
	}
	at := 0
	for i, f := range s.free {
		if cap(*f) < cap(*s.free[at]) {
			at = i
		}
	}
	if cap(*p) > cap(*s.free[at]) {
		s.free[at] = p
	}
}
