package model

import "testing"

// TestRecycleLogits checks that a step's logits handed back serve a later
// step of no more rows, that a larger step replaces the smallest kept
// buffer, and that slices which are not logits are left alone.
func TestRecycleLogits(t *testing.T) {
	logitsBufs = logitsPool{}
	a := newLogits(800)
	RecycleLogits([][]float32{a[:400:400], a[400:800:800], make([]float32, 10)})
	if b := newLogits(600); &b[0] != &a[0] || len(b) != 600 {
		t.Fatal("a handed-back buffer was not reused")
	}
	// Two one-row buffers kept, then an eight-row one: it replaces one.
	small1, small2 := newLogits(100), newLogits(100)
	RecycleLogits([][]float32{small1})
	RecycleLogits([][]float32{small2})
	big := newLogits(800)
	RecycleLogits([][]float32{big})
	if b := newLogits(800); &b[0] != &big[0] {
		t.Fatal("the larger buffer was not kept over a smaller one")
	}
	// Handing back twice, or what was never handed out, changes nothing.
	RecycleLogits([][]float32{big, make([]float32, 5)})
	RecycleLogits([][]float32{big})
	if n := len(logitsBufs.free); n > 2 {
		t.Fatalf("%d buffers kept, want at most 2", n)
	}
}
