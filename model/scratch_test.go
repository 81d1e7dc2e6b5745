package model

import (
	"runtime"
	"testing"
)

// A scratch buffer comes back zeroed, of the length asked, and a small
// one is handed out again after garbage collections (which empty a
// sync.Pool).
func TestScratch(t *testing.T) {
	p := GetScratch(1000)
	if len(*p) != 1000 {
		t.Fatalf("length %d, want 1000", len(*p))
	}
	for i := range *p {
		(*p)[i] = 1
	}
	PutScratch(p)
	runtime.GC()
	runtime.GC()
	q := GetScratch(500)
	defer PutScratch(q)
	if len(*q) != 500 || cap(*q) < 1000 {
		t.Errorf("after two collections: length %d, capacity %d; want the kept buffer of 1000", len(*q), cap(*q))
	}
	for i, v := range *q {
		if v != 0 {
			t.Fatalf("element %d is %v, not zeroed", i, v)
		}
	}
}
