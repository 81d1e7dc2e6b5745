package model

import "sync"

// floatScratch holds float32 buffers between the passes that use them
// for temporaries (a layer stack's activations, a prompt's embedding
// rows). Fresh buffers come from memory the process has not touched
// since the last garbage collection, which with gigabytes of weights on
// the heap is far off: each new page is a page fault (tens of
// microseconds on a virtual machine), and a decode step's temporaries,
// made for every pass, added up to thousands a second.
var floatScratch sync.Pool // *[]float32

// GetScratch returns n zeroed float32s, from the pool when it holds a
// buffer large enough. Give it back with PutScratch when done.
func GetScratch(n int) *[]float32 {
	p, _ := floatScratch.Get().(*[]float32)
	if p == nil || cap(*p) < n {
		s := make([]float32, n)
		return &s
	}
	*p = (*p)[:n]
	clear(*p)
	return p
}

// PutScratch hands a buffer from GetScratch back; the caller keeps no
// part of it.
func PutScratch(p *[]float32) { floatScratch.Put(p) }
