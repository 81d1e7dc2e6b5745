// Package kv holds the attention key/value cache of one sequence: per
// layer, full-attention layers grow with the sequence while sliding-window
// layers keep a ring of the last Window positions, so their memory stops
// growing once the window is full.
package kv

import (
	"fmt"

	"github.com/siskin-ml/siskin/kernels"
)

// Type is how a cache stores its keys and values.
type Type uint8

// Element types. F16 halves the bytes attention streams per token (and
// llama.cpp's default cache type); rows are rounded to nearest even.
// Q8_0 stores each row as blocks of 32 int8 with an fp16 scale (GGUF's
// Q8_0 blocks, kernels.QuantizeRowQ8; llama.cpp's -ctk/-ctv q8_0): 34
// bytes per 32 elements, so a little over half of f16's bytes, for a
// rounding error of up to about half a step (amax/254) per block.
const (
	F32 Type = iota
	F16
	Q8_0
)

func (t Type) String() string {
	switch t {
	case F16:
		return "f16"
	case Q8_0:
		return "q8_0"
	}
	return "f32"
}

// Size is the bytes of one element of f32 or f16 (1 for q8_0, whose rows
// also hold a 2-byte scale per 32 elements: use RowBytes for memory).
func (t Type) Size() int {
	switch t {
	case F16:
		return 2
	case Q8_0:
		return 1
	}
	return 4
}

// RowBytes is the bytes of one key (or value) row of dim elements.
func (t Type) RowBytes(dim int) int {
	if t == Q8_0 {
		return kernels.Q8RowBytes(dim)
	}
	return dim * t.Size()
}

// CheckHeadDim reports whether a cache of type t can hold heads of
// headDim elements: q8_0 blocks of 32 must not straddle two heads.
func (t Type) CheckHeadDim(headDim int) error {
	if t == Q8_0 && headDim%32 != 0 {
		return fmt.Errorf("kv cache type q8_0 needs a head dim that is a multiple of 32, the model's is %d (use f16)", headDim)
	}
	return nil
}

// ParseType reads "f16", "f32" or "q8_0".
func ParseType(s string) (Type, error) {
	switch s {
	case "f16":
		return F16, nil
	case "f32":
		return F32, nil
	case "q8_0":
		return Q8_0, nil
	}
	return 0, fmt.Errorf("kv cache type %q: want f16, q8_0 or f32", s)
}

// Layer is the cache of one attention layer. Keys and values are stored
// after RoPE, one row of Dim elements per position: float32 (k, v), IEEE
// half (k16, v16) or q8_0 blocks (k8, v8, RowBytes(Dim) bytes a row),
// per the layer's Type.
type Layer struct {
	Dim      int // kv heads x head dim
	Window   int // 0 for a full layer; otherwise the ring size
	typ      Type
	k, v     []float32
	k16, v16 []uint16
	k8, v8   []byte
	n        int // positions appended so far (the sequence length)
	base     int // positions before base were never stored (see Seek)
	limit    int // most positions the sequence will hold (Cache.Limit); 0: unknown
}

// NewLayer returns an empty float32 layer cache; window 0 means full
// attention.
func NewLayer(dim, window int) *Layer { return &Layer{Dim: dim, Window: window} }

// NewLayerOf returns an empty layer cache of element type t (q8_0: dim
// a multiple of 32).
func NewLayerOf(dim, window int, t Type) *Layer {
	if t == Q8_0 && dim%32 != 0 {
		panic(fmt.Sprintf("kv: q8_0 layer of dim %d, not a multiple of 32", dim))
	}
	return &Layer{Dim: dim, Window: window, typ: t}
}

// rowLen is the elements of the layer's buffers per position.
func (l *Layer) rowLen() int {
	if l.typ == Q8_0 {
		return kernels.Q8RowBytes(l.Dim)
	}
	return l.Dim
}

// Type is the layer's element type.
func (l *Layer) Type() Type { return l.typ }

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
func (l *Layer) Bytes() int {
	return 4*(cap(l.k)+cap(l.v)) + 2*(cap(l.k16)+cap(l.v16)) + cap(l.k8) + cap(l.v8)
}

func (l *Layer) slot(pos int) int {
	if l.Window > 0 {
		return pos % l.Window
	}
	return pos - l.base
}

// Append stores the key and value of the next position (an f16 layer
// rounds them with kernels.F32ToF16, as attention rounds a step's rows).
func (l *Layer) Append(k, v []float32) {
	l.checkDim(len(k), len(v))
	s := l.reserve()
	switch l.typ {
	case F16:
		kernels.F32ToF16(l.k16[s*l.Dim:(s+1)*l.Dim], k)
		kernels.F32ToF16(l.v16[s*l.Dim:(s+1)*l.Dim], v)
	case Q8_0:
		rb := l.rowLen()
		kernels.QuantizeRowQ8(l.k8[s*rb:(s+1)*rb], k)
		kernels.QuantizeRowQ8(l.v8[s*rb:(s+1)*rb], v)
	default:
		copy(l.k[s*l.Dim:], k)
		copy(l.v[s*l.Dim:], v)
	}
	l.n++
}

// AppendF16 stores the key and value of the next position of an f16
// layer, already rounded.
func (l *Layer) AppendF16(k, v []uint16) {
	l.checkDim(len(k), len(v))
	l.mustBe(F16)
	s := l.reserve()
	copy(l.k16[s*l.Dim:], k)
	copy(l.v16[s*l.Dim:], v)
	l.n++
}

// AppendQ8 stores the key and value of the next position of a q8_0
// layer, already quantized (RowBytes(Dim) bytes each).
func (l *Layer) AppendQ8(k, v []byte) {
	rb := l.rowLen()
	if len(k) != rb || len(v) != rb {
		panic(fmt.Sprintf("kv: append of %d/%d bytes to a q8_0 layer of %d-byte rows", len(k), len(v), rb))
	}
	l.mustBe(Q8_0)
	s := l.reserve()
	copy(l.k8[s*rb:], k)
	copy(l.v8[s*rb:], v)
	l.n++
}

func (l *Layer) checkDim(nk, nv int) {
	if nk != l.Dim || nv != l.Dim {
		panic(fmt.Sprintf("kv: append of %d/%d values to a layer of dim %d", nk, nv, l.Dim))
	}
}

func (l *Layer) mustBe(t Type) {
	if l.typ != t {
		panic(fmt.Sprintf("kv: %s access to an %s layer", t, l.typ))
	}
}

// reserve makes room for the next position and returns its slot.
func (l *Layer) reserve() int {
	s, rl := l.slot(l.n), l.rowLen()
	have := len(l.k)
	switch l.typ {
	case F16:
		have = len(l.k16)
	case Q8_0:
		have = len(l.k8)
	}
	if need := (s + 1) * rl; need > have {
		grow := need
		if l.Window > 0 {
			grow = l.Window * rl
			if c := 2 * have; c < grow && c >= need {
				grow = c
			}
		}
		c := l.capacity(have, grow)
		switch l.typ {
		case F16:
			l.k16 = growTo(l.k16, grow, c)
			l.v16 = growTo(l.v16, grow, c)
		case Q8_0:
			l.k8 = growTo(l.k8, grow, c)
			l.v8 = growTo(l.v8, grow, c)
		default:
			l.k = growTo(l.k, grow, c)
			l.v = growTo(l.v, grow, c)
		}
	}
	return s
}

// firstRows is the most positions a layer with a limit allocates at
// first: a short request gets its whole cache at once, a long one does
// not hold memory it may never use.
const firstRows = 256

// capacity is how many elements to allocate when a layer of have
// elements must hold need: double (amortised appends), but not past the
// limit the sequence set (which its memory budget counted) while need
// is within it.
func (l *Layer) capacity(have, need int) int {
	c, rl := max(2*have, need), l.rowLen()
	if lim := l.limit * rl; lim > 0 && need <= lim {
		if have == 0 {
			c = max(c, min(l.limit, firstRows)*rl)
		}
		c = min(c, lim)
	}
	return c
}

// growTo extends s to length n within a new capacity c if it has not
// room.
func growTo[T any](s []T, n, c int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	out := make([]T, n, max(n, c))
	copy(out, s)
	return out
}

// Key returns the key row of a position that is still held: the stored
// row of a float32 layer, a widened (f16) or dequantized (q8_0) copy
// otherwise.
func (l *Layer) Key(pos int) []float32 {
	return l.row(pos, l.k, l.k16, l.k8)
}

// Value returns the value row of a position that is still held, as Key.
func (l *Layer) Value(pos int) []float32 {
	return l.row(pos, l.v, l.v16, l.v8)
}

func (l *Layer) row(pos int, f []float32, h []uint16, q []byte) []float32 {
	s := l.slot(l.check(pos))
	switch l.typ {
	case F16:
		return widen(h[s*l.Dim : (s+1)*l.Dim])
	case Q8_0:
		rb := l.rowLen()
		out := make([]float32, l.Dim)
		kernels.DequantRowQ8(out, q[s*rb:(s+1)*rb])
		return out
	}
	return f[s*l.Dim : (s+1)*l.Dim]
}

// KeyF16 returns the stored key row of a position of an f16 layer.
func (l *Layer) KeyF16(pos int) []uint16 {
	l.mustBe(F16)
	s := l.slot(l.check(pos))
	return l.k16[s*l.Dim : (s+1)*l.Dim]
}

// ValueF16 returns the stored value row of a position of an f16 layer.
func (l *Layer) ValueF16(pos int) []uint16 {
	l.mustBe(F16)
	s := l.slot(l.check(pos))
	return l.v16[s*l.Dim : (s+1)*l.Dim]
}

func widen(h []uint16) []float32 {
	out := make([]float32, len(h))
	kernels.F16ToF32(out, h)
	return out
}

// Run returns the key and value rows of positions pos, pos+1, ... that
// are stored one after another (row i at [i*Dim, (i+1)*Dim)), as many as
// m <= n of them: all n unless a sliding layer's ring wraps first, when
// the rest start again at Run(pos+m, n-m). Every position asked for must
// still be held. The layer must be float32 (RunF16 for f16).
func (l *Layer) Run(pos, n int) (k, v []float32, m int) {
	l.mustBe(F32)
	s, m := l.run(pos, n)
	if m == 0 {
		return nil, nil, 0
	}
	return l.k[s*l.Dim : (s+m)*l.Dim], l.v[s*l.Dim : (s+m)*l.Dim], m
}

// RunF16 is Run for an f16 layer: the stored half rows.
func (l *Layer) RunF16(pos, n int) (k, v []uint16, m int) {
	l.mustBe(F16)
	s, m := l.run(pos, n)
	if m == 0 {
		return nil, nil, 0
	}
	return l.k16[s*l.Dim : (s+m)*l.Dim], l.v16[s*l.Dim : (s+m)*l.Dim], m
}

// RunQ8 is Run for a q8_0 layer: the stored rows, RowBytes(Dim) bytes
// each.
func (l *Layer) RunQ8(pos, n int) (k, v []byte, m int) {
	l.mustBe(Q8_0)
	s, m := l.run(pos, n)
	if m == 0 {
		return nil, nil, 0
	}
	rb := l.rowLen()
	return l.k8[s*rb : (s+m)*rb], l.v8[s*rb : (s+m)*rb], m
}

// Rows is a copy of the keys and values of consecutive positions in a
// layer's element type (a prefix cache keeps blocks of them, and puts
// back the very bits it copied). The zero value holds nothing.
type Rows struct {
	n, dim   int
	k, v     []float32
	k16, v16 []uint16
	k8, v8   []byte
}

// Len is the number of positions held.
func (r Rows) Len() int { return r.n }

// CopyRows copies positions [pos, pos+n), which must all still be held.
func (l *Layer) CopyRows(pos, n int) Rows {
	d := l.rowLen()
	r := Rows{n: n, dim: l.Dim}
	switch l.typ {
	case F16:
		r.k16, r.v16 = make([]uint16, n*d), make([]uint16, n*d)
	case Q8_0:
		r.k8, r.v8 = make([]byte, n*d), make([]byte, n*d)
	default:
		r.k, r.v = make([]float32, n*d), make([]float32, n*d)
	}
	for i := 0; i < n; {
		s, m := l.run(pos+i, n-i)
		switch l.typ {
		case F16:
			copy(r.k16[i*d:], l.k16[s*d:(s+m)*d])
			copy(r.v16[i*d:], l.v16[s*d:(s+m)*d])
		case Q8_0:
			copy(r.k8[i*d:], l.k8[s*d:(s+m)*d])
			copy(r.v8[i*d:], l.v8[s*d:(s+m)*d])
		default:
			copy(r.k[i*d:], l.k[s*d:(s+m)*d])
			copy(r.v[i*d:], l.v[s*d:(s+m)*d])
		}
		i += m
	}
	return r
}

// AppendRow stores row i of r (copied from a layer of the same type and
// dim) as the next position.
func (l *Layer) AppendRow(r Rows, i int) {
	if i < 0 || i >= r.n || r.dim != l.Dim {
		panic(fmt.Sprintf("kv: row %d of %d rows of dim %d appended to a layer of dim %d", i, r.n, r.dim, l.Dim))
	}
	d := l.Dim
	if r.k16 != nil {
		l.AppendF16(r.k16[i*d:(i+1)*d], r.v16[i*d:(i+1)*d])
		return
	}
	if r.k8 != nil {
		rb := kernels.Q8RowBytes(d)
		l.AppendQ8(r.k8[i*rb:(i+1)*rb], r.v8[i*rb:(i+1)*rb])
		return
	}
	l.mustBe(F32)
	l.Append(r.k[i*d:(i+1)*d], r.v[i*d:(i+1)*d])
}

// run is the slot of pos and how many of n positions follow it in order.
func (l *Layer) run(pos, n int) (s, m int) {
	if n <= 0 {
		return 0, 0
	}
	l.check(pos)
	l.check(pos + n - 1)
	s = l.slot(pos)
	m = n
	if l.Window > 0 {
		m = min(n, l.Window-s)
	}
	return s, m
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

// Type is the element type of the layers (F32 for a cache without any).
func (c *Cache) Type() Type {
	if len(c.Layers) == 0 {
		return F32
	}
	return c.Layers[0].Type()
}

// Limit says the sequence will hold at most n positions (a sliding
// layer at most its window): the layers then grow only up to that, so
// their memory stays within what was budgeted for the sequence (KV bytes
// of n positions), and a short sequence allocates its cache once instead
// of copying it as it doubles.
func (c *Cache) Limit(n int) {
	for _, l := range c.Layers {
		l.limit = n
		if l.Window > 0 {
			l.limit = min(n, l.Window)
		}
	}
}

// Reset empties every layer for a new sequence and keeps its memory:
// appends reuse it up to its capacity (a sequence that ended hands its
// cache to the next instead of the next touching fresh pages, which on a
// virtual machine cost about 12 us each, 3 ms a megabyte).
func (c *Cache) Reset() {
	for _, l := range c.Layers {
		l.n, l.base, l.limit = 0, 0, 0
		l.k, l.v = l.k[:0], l.v[:0]
		l.k16, l.v16 = l.k16[:0], l.v16[:0]
		l.k8, l.v8 = l.k8[:0], l.v8[:0]
	}
}

// Bytes is the memory held by all layers.
func (c *Cache) Bytes() int {
	n := 0
	for _, l := range c.Layers {
		n += l.Bytes()
	}
	return n
}

// Clone returns an independent copy of the cache with room for room
// more positions per layer before a layer reallocates (a benchmark
// measures every repetition from the same filled context, and without
// the room a context that fills its layers exactly, as 2048 positions
// do, would copy every layer into a doubled buffer within the first
// timed step).
func (c *Cache) Clone(room int) *Cache {
	out := &Cache{Layers: make([]*Layer, len(c.Layers))}
	for i, l := range c.Layers {
		out.Layers[i] = l.clone(room)
	}
	return out
}

func (l *Layer) clone(room int) *Layer {
	m := *l
	rows := l.n - l.base + max(room, 0)
	if l.Window > 0 {
		rows = min(rows, l.Window)
	}
	c := rows * l.rowLen()
	switch l.typ {
	case F16:
		m.k16, m.v16 = copyCap(l.k16, c), copyCap(l.v16, c)
	case Q8_0:
		m.k8, m.v8 = copyCap(l.k8, c), copyCap(l.v8, c)
	default:
		m.k, m.v = copyCap(l.k, c), copyCap(l.v, c)
	}
	return &m
}

// copyCap is a copy of s with capacity for at least c elements. The room
// beyond len(s) is written once here: fresh memory from the OS is only
// mapped on first write, and a benchmark's timed appends should not take
// those page faults (about 1% of a step's CPU time in a profile at depth
// 2048).
func copyCap[T any](s []T, c int) []T {
	out := make([]T, len(s), max(len(s), c))
	copy(out, s)
	clear(out[len(s):cap(out)])
	return out
}
