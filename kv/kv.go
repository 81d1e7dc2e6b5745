// Package kv holds the attention key/value cache of one sequence: per
// layer, full-attention layers grow with the sequence while sliding-window
// layers keep a ring of the last Window positions, so their memory stops
// growing once the window is full.
package kv

import "fmt"

// Layer is the cache of one attention layer. Keys and values are stored
// after RoPE, one row of Dim float32 per position.
type Layer struct {
	Dim    int // kv heads x head dim
	Window int // 0 for a full layer; otherwise the ring size
	k, v   []float32
	n      int // positions appended so far (the sequence length)
	base   int // positions before base were never stored (see Seek)
}

// NewLayer returns an empty layer cache; window 0 means full attention.
func NewLayer(dim, window int) *Layer { return &Layer{Dim: dim, Window: window} }

// Len is the number of positions appended so far.
func (l *Layer) Len() int { return l.n }

// Stored is the number of positions held in memory.
func (l *Layer) Stored() int {
	if l.Window > 0 && l.n-l.base > l.Window {
		return l.Window
	}
	return l.n - l.base
}

// Seek moves an empty layer to position n without storing anything, so a
// sliding layer restored from a prefix cache only needs the window's last
// positions appended.
func (l *Layer) Seek(n int) {
	if l.n != 0 {
		panic("kv: seek on a layer that holds positions")
	}
	l.n, l.base = n, n
}

// First is the oldest position still held.
func (l *Layer) First() int { return l.n - l.Stored() }

// Bytes is the memory held by the layer's keys and values.
func (l *Layer) Bytes() int { return 4 * (cap(l.k) + cap(l.v)) }

func (l *Layer) slot(pos int) int {
	if l.Window > 0 {
		return pos % l.Window
	}
	return pos - l.base
}

// Append stores the key and value of the next position.
func (l *Layer) Append(k, v []float32) {
	if len(k) != l.Dim || len(v) != l.Dim {
		panic(fmt.Sprintf("kv: append of %d/%d values to a layer of dim %d", len(k), len(v), l.Dim))
	}
	s := l.slot(l.n)
	if need := (s + 1) * l.Dim; need > len(l.k) {
		grow := need
		if l.Window > 0 {
			grow = l.Window * l.Dim
			if c := 2 * len(l.k); c < grow && c >= need {
				grow = c
			}
		}
		l.k = growTo(l.k, grow)
		l.v = growTo(l.v, grow)
	}
	copy(l.k[s*l.Dim:], k)
	copy(l.v[s*l.Dim:], v)
	l.n++
}

// growTo extends s to length n, doubling capacity for amortised appends.
func growTo(s []float32, n int) []float32 {
	if n <= cap(s) {
		return s[:n]
	}
	c := 2 * cap(s)
	if c < n {
		c = n
	}
	out := make([]float32, n, c)
	copy(out, s)
	return out
}

// Key returns the key row of a position that is still held.
func (l *Layer) Key(pos int) []float32 {
	s := l.slot(l.check(pos))
	return l.k[s*l.Dim : (s+1)*l.Dim]
}

// Value returns the value row of a position that is still held.
func (l *Layer) Value(pos int) []float32 {
	s := l.slot(l.check(pos))
	return l.v[s*l.Dim : (s+1)*l.Dim]
}

// Run returns the key and value rows of positions pos, pos+1, ... that
// are stored one after another (row i at [i*Dim, (i+1)*Dim)), as many as
// m <= n of them: all n unless a sliding layer's ring wraps first, when
// the rest start again at Run(pos+m, n-m). Every position asked for must
// still be held.
func (l *Layer) Run(pos, n int) (k, v []float32, m int) {
	if n <= 0 {
		return nil, nil, 0
	}
	l.check(pos)
	l.check(pos + n - 1)
	s := l.slot(pos)
	m = n
	if l.Window > 0 {
		m = min(n, l.Window-s)
	}
	return l.k[s*l.Dim : (s+m)*l.Dim], l.v[s*l.Dim : (s+m)*l.Dim], m
}

func (l *Layer) check(pos int) int {
	if pos < l.First() || pos >= l.n {
		panic(fmt.Sprintf("kv: position %d not held (have %d..%d)", pos, l.First(), l.n-1))
	}
	return pos
}

// Truncate drops positions >= n (for a retried or rewound step). A sliding
// layer can only rewind within the positions it still holds.
func (l *Layer) Truncate(n int) error {
	if n > l.n || n < l.base {
		return fmt.Errorf("kv: truncate to %d of %d positions", n, l.n)
	}
	// After a rewind to n a sliding layer must still hold n-Window..n-1.
	if l.Window > 0 && max(0, n-l.Window) < l.First() {
		return fmt.Errorf("kv: sliding layer cannot rewind to %d: positions before %d are gone", n, l.First())
	}
	l.n = n
	return nil
}

// Cache is the per-sequence cache of every layer.
type Cache struct {
	Layers []*Layer
}

// Len is the sequence length held (the next position to fill).
func (c *Cache) Len() int {
	if len(c.Layers) == 0 {
		return 0
	}
	return c.Layers[0].Len()
}

// Bytes is the memory held by all layers.
func (c *Cache) Bytes() int {
	n := 0
	for _, l := range c.Layers {
		n += l.Bytes()
	}
	return n
}

// Clone returns an independent copy of the cache (a benchmark measures
// every repetition from the same filled context).
func (c *Cache) Clone() *Cache {
	out := &Cache{Layers: make([]*Layer, len(c.Layers))}
	for i, l := range c.Layers {
		m := *l
		m.k = append([]float32(nil), l.k...)
		m.v = append([]float32(nil), l.v...)
		out.Layers[i] = &m
	}
	return out
}
