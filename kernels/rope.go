package kernels

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// RoPETable holds cos and sin of the rotary angles pos*inv_freq[i] for
// positions [0, Len()) and the rot/2 frequencies inv_freq[i] =
// theta^(-2i/rot). Angles and their cos/sin are computed in float64 and
// stored as float32. The table grows on demand, doubling, so it is sized
// by the longest sequence actually seen, not by a model's maximum context.
//
// NeoX and Interleaved may be called from many goroutines at once; growth
// publishes a new immutable table, so readers never see a partial one.
type RoPETable struct {
	rot     int
	invFreq []float64
	mu      sync.Mutex // serializes growth
	tab     atomic.Pointer[ropeTab]
}

type ropeTab struct {
	n        int
	cos, sin []float32 // [pos*rot/2 + i]
}

// NewRoPETable returns an empty table for rotating rot dimensions (even,
// at most the head dimension) with base theta.
func NewRoPETable(rot int, theta float64) *RoPETable {
	if rot <= 0 || rot%2 != 0 {
		panic(fmt.Sprintf("kernels: RoPE rotation dims %d must be positive and even", rot))
	}
	t := &RoPETable{rot: rot, invFreq: make([]float64, rot/2)}
	for i := range t.invFreq {
		t.invFreq[i] = math.Pow(theta, -2*float64(i)/float64(rot))
	}
	t.tab.Store(&ropeTab{})
	return t
}

// Rot is the number of rotated dimensions.
func (t *RoPETable) Rot() int { return t.rot }

// Len is the number of positions currently in the table.
func (t *RoPETable) Len() int { return t.tab.Load().n }

// Ensure grows the table to hold at least positions [0, n).
func (t *RoPETable) Ensure(n int) { t.load(n - 1) }

// CosSin returns the rot/2 cosines and sines for position pos.
func (t *RoPETable) CosSin(pos int) (cos, sin []float32) {
	tab := t.load(pos)
	h := t.rot / 2
	return tab.cos[pos*h : (pos+1)*h], tab.sin[pos*h : (pos+1)*h]
}

// load returns a table that covers pos, growing it if needed.
func (t *RoPETable) load(pos int) *ropeTab {
	if pos < 0 {
		panic(fmt.Sprintf("kernels: RoPE position %d", pos))
	}
	if tab := t.tab.Load(); pos < tab.n {
		return tab
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.tab.Load()
	if pos < old.n {
		return old
	}
	n := max(pos+1, 2*old.n, 64)
	h := t.rot / 2
	tab := &ropeTab{n: n, cos: make([]float32, n*h), sin: make([]float32, n*h)}
	copy(tab.cos, old.cos)
	copy(tab.sin, old.sin)
	for p := old.n; p < n; p++ {
		for i, f := range t.invFreq {
			s, c := math.Sincos(float64(p) * f)
			tab.cos[p*h+i], tab.sin[p*h+i] = float32(c), float32(s)
		}
	}
	t.tab.Store(tab)
	return tab
}

func (t *RoPETable) checkHead(x []float32) {
	if len(x) < t.rot {
		panic(fmt.Sprintf("kernels: RoPE head of %d dims is shorter than the %d rotated", len(x), t.rot))
	}
}

// NeoX rotates one head x at position pos in the NeoX (GPT-NeoX, Qwen,
// Hugging Face rotate_half) layout: pairs (x[i], x[i+rot/2]) for i <
// rot/2; dimensions rot and beyond pass through.
func (t *RoPETable) NeoX(x []float32, pos int) {
	t.checkHead(x)
	cos, sin := t.CosSin(pos)
	h := t.rot / 2
	for i := 0; i < h; i++ {
		x0, x1 := x[i], x[i+h]
		x[i] = float32(x0*cos[i]) - float32(x1*sin[i])
		x[i+h] = float32(x0*sin[i]) + float32(x1*cos[i])
	}
}

// Interleaved rotates one head x at position pos in the original
// (GPT-J / Llama GGUF) layout: adjacent pairs (x[2i], x[2i+1]) for i <
// rot/2; dimensions rot and beyond pass through.
func (t *RoPETable) Interleaved(x []float32, pos int) {
	t.checkHead(x)
	cos, sin := t.CosSin(pos)
	for i := 0; i < t.rot/2; i++ {
		x0, x1 := x[2*i], x[2*i+1]
		x[2*i] = float32(x0*cos[i]) - float32(x1*sin[i])
		x[2*i+1] = float32(x0*sin[i]) + float32(x1*cos[i])
	}
}
