package kernels

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// RoPETable gives cos and sin of the rotary angles pos*inv_freq[i] for the
// rot/2 frequencies inv_freq[i] = theta^(-2i/rot), computed in float64 and
// rounded to float32.
//
// It does not keep cos and sin for every position (at 2048 positions, 2 MiB
// for 256 rotated dims): it keeps them, in float64, for a coarse grid of
// positions k*ropeStep, grown on demand (doubling, so it is sized by the
// longest sequence actually seen), and for the fine offsets q < ropeStep,
// and combines the two with the angle-addition formulas,
//
//	cos(a+b) = cos a cos b - sin a sin b,  sin(a+b) = sin a cos b + cos a sin b,
//
// in float64 before rounding to float32. That is 1/16 of the memory at
// 2048 positions and a few float64 operations per pair in the rotation
// (which reads two rows of rot/2 float64 pairs instead of one of float32
// pairs); the float64 error of the combination (~1e-15 of the angle) is far
// below float32 rounding, so the values are those of the direct formula
// except, rarely, in the last float32 bit. The products are rounded
// explicitly, so no fused multiply-add changes them between platforms.
//
// NeoX and Interleaved may be called from many goroutines at once; growth
// publishes a new immutable table, so readers never see a partial one.
type RoPETable struct {
	rot     int
	invFreq []float64
	// cos and sin of q*inv_freq[i] for the offsets q < ropeStep: [q*rot/2 + i].
	fineCos, fineSin []float64
	mu               sync.Mutex // serializes growth
	tab              atomic.Pointer[ropeTab]
}

// ropeStep is the spacing of the coarse grid of positions.
const ropeStep = 32

type ropeTab struct {
	n        int       // positions covered, a multiple of ropeStep
	cos, sin []float64 // of k*ropeStep*inv_freq[i]: [k*rot/2 + i]
}

// NewRoPETable returns an empty table for rotating rot dimensions (even,
// at most the head dimension) with base theta.
func NewRoPETable(rot int, theta float64) *RoPETable {
	if rot <= 0 || rot%2 != 0 {
		panic(fmt.Sprintf("kernels: RoPE rotation dims %d must be positive and even", rot))
	}
	h := rot / 2
	t := &RoPETable{rot: rot, invFreq: make([]float64, h)}
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

// CosSin returns the rot/2 cosines and sines for position pos, in new
// slices (NeoX and Interleaved compute them in place).
func (t *RoPETable) CosSin(pos int) (cos, sin []float32) {
	h := t.rot / 2
	cos, sin = make([]float32, h), make([]float32, h)
	cc, cs, fc, fs := t.rows(pos)
	for i := range h {
		cos[i], sin[i] = cosSin(cc[i], cs[i], fc[i], fs[i])
	}
	return cos, sin
}

// rows returns the coarse and fine rows whose angles add up to pos's.
func (t *RoPETable) rows(pos int) (cc, cs, fc, fs []float64) {
	tab := t.load(pos)
	h := t.rot / 2
	k, q := pos/ropeStep, pos%ropeStep
	return tab.cos[k*h : (k+1)*h], tab.sin[k*h : (k+1)*h], t.fineCos[q*h : (q+1)*h], t.fineSin[q*h : (q+1)*h]
}

// cosSin combines a coarse and a fine angle (angle addition) and rounds.
func cosSin(cc, cs, fc, fs float64) (cos, sin float32) {
	return float32(float64(cc*fc) - float64(cs*fs)), float32(float64(cs*fc) + float64(cc*fs))
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
	h := t.rot / 2
	if t.fineCos == nil {
		fc, fs := make([]float64, ropeStep*h), make([]float64, ropeStep*h)
		for q := range ropeStep {
			for i, f := range t.invFreq {
				fs[q*h+i], fc[q*h+i] = math.Sincos(float64(q) * f)
			}
		}
		t.fineCos, t.fineSin = fc, fs // before the table that publishes them
	}
	oldRows := old.n / ropeStep
	rows := max(pos/ropeStep+1, 2*oldRows, 2)
	tab := &ropeTab{n: rows * ropeStep, cos: make([]float64, rows*h), sin: make([]float64, rows*h)}
	copy(tab.cos, old.cos)
	copy(tab.sin, old.sin)
	for k := oldRows; k < rows; k++ {
		for i, f := range t.invFreq {
			tab.sin[k*h+i], tab.cos[k*h+i] = math.Sincos(float64(k*ropeStep) * f)
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
	cc, cs, fc, fs := t.rows(pos)
	h := t.rot / 2
	x, y := x[:h], x[h:2*h]
	cc, cs, fc, fs = cc[:h], cs[:h], fc[:h], fs[:h]
	for i := range x {
		cos, sin := cosSin(cc[i], cs[i], fc[i], fs[i])
		x0, x1 := x[i], y[i]
		x[i] = float32(x0*cos) - float32(x1*sin)
		y[i] = float32(x0*sin) + float32(x1*cos)
	}
}

// Interleaved rotates one head x at position pos in the original
// (GPT-J / Llama GGUF) layout: adjacent pairs (x[2i], x[2i+1]) for i <
// rot/2; dimensions rot and beyond pass through.
func (t *RoPETable) Interleaved(x []float32, pos int) {
	t.checkHead(x)
	cc, cs, fc, fs := t.rows(pos)
	for i := range cc {
		cos, sin := cosSin(cc[i], cs[i], fc[i], fs[i])
		x0, x1 := x[2*i], x[2*i+1]
		x[2*i] = float32(x0*cos) - float32(x1*sin)
		x[2*i+1] = float32(x0*sin) + float32(x1*cos)
	}
}

// NeoXHeads rotates every head of x (heads of headDim values, one
// token) at position pos as NeoX does, bit for bit, computing cos and
// sin once for all of them rather than once per head.
func (t *RoPETable) NeoXHeads(x []float32, headDim, pos int) {
	if headDim < t.rot || len(x)%headDim != 0 {
		panic(fmt.Sprintf("kernels: RoPE over %d values in heads of %d, %d rotated", len(x), headDim, t.rot))
	}
	h := t.rot / 2
	var buf [2 * 512]float32
	cs := buf[:]
	if 2*h > len(buf) {
		cs = make([]float32, 2*h)
	}
	cos, sin := cs[:h], cs[h:2*h]
	cc, cn, fc, fs := t.rows(pos)
	for i := range cos {
		cos[i], sin[i] = cosSin(cc[i], cn[i], fc[i], fs[i])
	}
	for o := 0; o < len(x); o += headDim {
		a, b := x[o:o+h], x[o+h:o+2*h]
		for i := range a {
			x0, x1 := a[i], b[i]
			a[i] = float32(x0*cos[i]) - float32(x1*sin[i])
			b[i] = float32(x0*sin[i]) + float32(x1*cos[i])
		}
	}
}
