package model

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
)

// Attention holds the per-layer attention shape.
type Attention struct {
	Heads, KVHeads, HeadDim int
	Scale                   float32
}

// AttendRows is attention as its definition reads: read this first.
// For each row t of the batch and each query head h, the scores of the
// positions the row sees (earlier positions in the layer cache, then this
// step's rows of k and v; a sliding layer only the last window of them)
// are q.k scaled, softmaxed, and the output is the weighted sum of the
// values. The softmax is taken chunk by chunk of attnChunk positions and
// the chunks folded in order (fold), which is what lets Attend split the
// work across threads and still match this function bit for bit; tests
// check Attend against it. It is slow (one dot product at a time) and
// allocates.
//
// An f16 cache stores its rows rounded to halves, a q8_0 cache as blocks
// of int8 and a scale; this step's keys and values are rounded the same
// way first, as Attend does.
func (a *Attention) AttendRows(b *Batch, li, window int, q, k, v, out []float32) {
	hd, group := a.HeadDim, a.Heads/a.KVHeads
	qd, kvd := a.Heads*hd, a.KVHeads*hd
	switch b.Cache[0].Layers[li].Type() {
	case kv.F16:
		k, v = roundHalf(k[:len(b.Tokens)*kvd]), roundHalf(v[:len(b.Tokens)*kvd])
	case kv.Q8_0:
		k, v = roundQ8(k[:len(b.Tokens)*kvd], kvd), roundQ8(v[:len(b.Tokens)*kvd], kvd)
	}
	dot := func(qh, key []float32) float32 { return kernels.VecDot(qh, key) * a.Scale }
	if b.Cache[0].Layers[li].Type() == kv.Q8_0 {
		// A q8_0 cache's scores are its kernel's (on some tiers int8 dots
		// with the query quantized), on the key row quantized back: exact,
		// the row holds q8_0 values already.
		kq := make([]byte, kernels.Q8RowBytes(hd))
		dot = func(qh, key []float32) float32 {
			var s [1]float32
			kernels.QuantizeRowQ8(kq, key)
			kernels.DotRowsMultiNextQ8(s[:], 1, qh, hd, 1, hd, kq, len(kq), 1, a.Scale, nil)
			return s[0]
		}
	}
	oc := make([]float32, hd)
	for t := range b.Tokens {
		layer := b.Cache[t].Layers[li]
		pos, f := b.Pos[t], first(b, window, t)
		cached, row0 := layer.Len(), b.Row0[t]
		// row is the key or value row of position p: from the cache, or
		// from this step's rows.
		row := func(cache func(int) []float32, step []float32, p, off int) []float32 {
			if p < cached {
				return cache(p)[off : off+hd]
			}
			r := row0 + p - cached
			return step[r*kvd+off : r*kvd+off+hd]
		}
		for h := 0; h < a.Heads; h++ {
			kvOff := (h / group) * hd // the KV head this query head reads
			qh := q[t*qd+h*hd : t*qd+(h+1)*hd]
			oh := out[t*qd+h*hd : t*qd+(h+1)*hd]
			var m float32
			var l float64
			for s := f; s <= pos; {
				e := min(pos+1, (s/attnChunk+1)*attnChunk) // the rest of s's chunk
				sc := make([]float32, e-s)
				for i := range sc {
					sc[i] = dot(qh, row(layer.Key, k, s+i, kvOff))
				}
				mc, lc := kernels.ExpMax(sc) // sc becomes exp(sc - mc)
				clear(oc)
				for i := range sc {
					kernels.VecAxpy(oc, row(layer.Value, v, s+i, kvOff), sc[i])
				}
				fold(oh, &m, &l, oc, mc, lc, s == f)
				s = e
			}
			kernels.Scale(oh, float32(1/l))
		}
	}
}

// roundHalf is x rounded to halves and widened back, as an f16 cache
// stores it.
func roundHalf(x []float32) []float32 {
	h := make([]uint16, len(x))
	kernels.F32ToF16(h, x)
	out := make([]float32, len(x))
	kernels.F16ToF32(out, h)
	return out
}

// roundQ8 is x, rows of kvd values, quantized to q8_0 and dequantized, as
// a q8_0 cache stores it.
func roundQ8(x []float32, kvd int) []float32 {
	out := make([]float32, len(x))
	q := make([]byte, kernels.Q8RowBytes(kvd))
	for r := 0; r < len(x)/kvd; r++ {
		kernels.QuantizeRowQ8(q, x[r*kvd:(r+1)*kvd])
		kernels.DequantRowQ8(out[r*kvd:(r+1)*kvd], q)
	}
	return out
}

// Attend computes causal attention for every row of a batch at one layer,
// before this step's keys and values are appended to the caches: a row
// sees its sequence's earlier positions in the layer cache and the
// positions of this step in k and v (rows of the batch, after RoPE). A
// sliding layer (window > 0) also hides positions window or more behind.
//
// Each row and head takes the softmax in chunks of attnChunk positions
// (chunk c holds positions [c*attnChunk, (c+1)*attnChunk), so the chunks
// depend only on positions): per chunk the scores, their maximum m_c,
// e_i = exp(s_i - m_c), their sum l_c and o_c = sum e_i v_i (multiply-
// adds in order of position); then the chunks are folded in order of
// position into a running (m, l, o), o rescaled to the larger maximum
// (fold), and the row's output is o / l. So a one-token decode step can
// compute the chunks of one row on several threads, each streaming whole
// key and value rows of consecutive positions and reading a chunk's
// values right after its keys, while a prompt computes the same chunks
// one after another: every row and head gets the same result whether it
// is decoded or part of a batch, on any number of threads.
//
// The work is cut into tiles, each a few consecutive rows of one
// sequence: a block of keys (and later of values) is read once from
// memory for all of a tile's rows and heads while it sits in the L1 cache
// (kernels.DotRowsMulti and AxpyRowsMulti take the query heads that
// share a KV head four at a time). With enough tiles, each runs whole on
// one thread, costliest first; otherwise (decode) the tiles' chunks run in
// parallel, split by KV head too when they are few, and are folded once
// all have run.
//
// An f16 cache (kv.F16) holds its rows rounded to halves; this step's
// keys and values are rounded the same way (kernels.F32ToF16, as
// kv.Layer.Append stores them) before they are attended, so a position
// reads the same bits from this step as it later will from the cache, and
// batches, decode steps and thread counts still agree bit for bit. A q8_0
// cache (kv.Q8_0) likewise: this step's rows are quantized as
// kv.Layer.Append quantizes them (kernels.QuantizeRowQ8).
func (a *Attention) Attend(b *Batch, li, window int, q, k, v, out []float32) {
	a.attendStep(b, li, window, q, k, v, out, false)
}

// AttendAppend is Attend followed by appending the step's keys and
// values to each row's cache, storing the rows Attend has already
// rounded to halves or quantized to q8_0 rather than converting them a
// second time.
func (a *Attention) AttendAppend(b *Batch, li, window int, q, k, v, out []float32) {
	a.attendStep(b, li, window, q, k, v, out, true)
}

// attendStep is Attend, then (store) the step's rows appended to the
// caches in the form they were attended.
func (a *Attention) attendStep(b *Batch, li, window int, q, k, v, out []float32, store bool) {
	st := &stepKV{k: k, v: v}
	switch b.Cache[0].Layers[li].Type() {
	case kv.Q8_0:
		kvd := a.KVHeads * a.HeadDim
		rb := kernels.Q8RowBytes(kvd)
		n := len(b.Tokens) * rb
		buf := bytePool.Get().(*[]byte)
		if cap(*buf) < 2*n {
			*buf = make([]byte, 2*n)
		}
		st.k8, st.v8 = (*buf)[:n], (*buf)[n:2*n]
		// A prompt's rows on every thread (each row is quantized alone,
		// so the bytes do not depend on the split), not on the caller.
		if t := len(b.Tokens); kernels.Parallel(t * 2 * kvd * q8Work) {
			kernels.ParallelFor(t, 2*kvd*q8Work, 1, func(lo, hi int) { st.quantizeKV(kvd, lo, hi) })
		} else {
			st.quantizeKV(kvd, 0, t)
		}
		defer bytePool.Put(buf)
		// The queries, quantized once per step where the tier's q8_0 dot
		// wants them so (not once per block of keys).
		st.q8q = queryPool.Get().(*kernels.Q8Query)
		st.q8q.Prepare(q[:len(b.Tokens)*a.Heads*a.HeadDim])
		defer queryPool.Put(st.q8q)
	case kv.F16:
		n := len(b.Tokens) * a.KVHeads * a.HeadDim
		buf := halfPool.Get().(*[]uint16)
		if cap(*buf) < 2*n {
			*buf = make([]uint16, 2*n)
		}
		st.k16, st.v16 = (*buf)[:n], (*buf)[n:2*n]
		kernels.F32ToF16(st.k16, k[:n])
		kernels.F32ToF16(st.v16, v[:n])
		defer halfPool.Put(buf)
	}
	a.attend(b, li, window, q, st, out)
	if store {
		a.appendStep(b, li, st)
	}
}

// appendStep stores each row's key and value of st in its cache: the
// rounded or quantized copies when there are, else the float32 rows.
func (a *Attention) appendStep(b *Batch, li int, st *stepKV) {
	kvd := a.KVHeads * a.HeadDim
	rb := kernels.Q8RowBytes(kvd)
	for t := range b.Tokens {
		l := b.Cache[t].Layers[li]
		switch {
		case st.k8 != nil:
			l.AppendQ8(st.k8[t*rb:(t+1)*rb], st.v8[t*rb:(t+1)*rb])
		case st.k16 != nil:
			l.AppendF16(st.k16[t*kvd:(t+1)*kvd], st.v16[t*kvd:(t+1)*kvd])
		default:
			l.Append(st.k[t*kvd:(t+1)*kvd], st.v[t*kvd:(t+1)*kvd])
		}
	}
}

// halfPool and bytePool hold the f16 or q8_0 copies of a step's keys
// and values.
var (
	halfPool  = sync.Pool{New: func() any { return new([]uint16) }}
	bytePool  = sync.Pool{New: func() any { return new([]byte) }}
	queryPool = sync.Pool{New: func() any { return new(kernels.Q8Query) }}
)

// stepKV is this step's keys and values (rows of the batch): float32,
// and for an f16 or q8_0 cache the same rows rounded to halves or
// quantized, which are the ones attended.
type stepKV struct {
	k, v     []float32
	k16, v16 []uint16
	k8, v8   []byte
	q8q      *kernels.Q8Query // the queries prepared for a q8_0 cache
}

// kvRows points at key or value rows of one element type (the other
// slices nil); the zero value is no rows.
type kvRows struct {
	f []float32
	h []uint16
	q []byte // q8_0 blocks
}

// from is the rows starting i elements in (for q8_0 a multiple of 32:
// whole rows and heads).
func (r kvRows) from(i int) kvRows {
	if r.h != nil {
		return kvRows{h: r.h[i:]}
	}
	if r.q != nil {
		return kvRows{q: r.q[kernels.Q8RowBytes(i):]}
	}
	if r.f != nil {
		return kvRows{f: r.f[i:]}
	}
	return kvRows{}
}

// keys and values are this step's rows from row r on.
func (st *stepKV) keys(r int) kvRows {
	switch {
	case st.k16 != nil:
		return kvRows{h: st.k16[r:]}
	case st.k8 != nil:
		return kvRows{q: st.k8[kernels.Q8RowBytes(r):]}
	}
	return kvRows{f: st.k[r:]}
}

func (st *stepKV) values(r int) kvRows {
	switch {
	case st.v16 != nil:
		return kvRows{h: st.v16[r:]}
	case st.v8 != nil:
		return kvRows{q: st.v8[kernels.Q8RowBytes(r):]}
	}
	return kvRows{f: st.v[r:]}
}

func (a *Attention) attend(b *Batch, li, window int, q []float32, st *stepKV, out []float32) {
	tiles := a.tiles(b, window)
	nt := kernels.Threads()
	parts := 0 // rows x chunks of the tiles
	for _, t := range tiles {
		parts += (t.t1 - t.t0) * (t.c1 - t.c0)
	}
	if nt > 1 && len(tiles) < 4*nt && parts*a.Heads*a.HeadDim <= maxSplitFloats {
		a.attendSplit(b, li, window, q, st, out, tiles)
		return
	}
	slices.SortStableFunc(tiles, func(x, y attendTile) int { return cmp.Compare(y.cost, x.cost) })
	total, rows := 0, 0
	for _, t := range tiles {
		total += t.cost
		rows = max(rows, t.t1-t.t0)
	}
	unit := 2 * a.HeadDim * total / len(tiles)
	kernels.ParallelFor(len(tiles), unit, 1, func(lo, hi int) {
		s := a.scratch(rows)
		for _, t := range tiles[lo:hi] {
			a.attendWhole(b, li, window, q, st, out, t, s)
		}
		scratchPool.Put(s)
	})
}

// quantizeKV quantizes rows [lo, hi) of the step's keys and values (kvd
// floats each) into st.k8 and st.v8.
func (st *stepKV) quantizeKV(kvd, lo, hi int) {
	rb := kernels.Q8RowBytes(kvd)
	for r := lo; r < hi; r++ {
		kernels.QuantizeRowQ8(st.k8[r*rb:(r+1)*rb], st.k[r*kvd:(r+1)*kvd])
		kernels.QuantizeRowQ8(st.v8[r*rb:(r+1)*rb], st.v[r*kvd:(r+1)*kvd])
	}
}

// q8Work is quantizing a float to q8_0 in ParallelFor's multiply-adds
// (about 0.6 ns a float on one Zen 5 thread).
const q8Work = 32

// Tile sizes: query tokens per tile, positions per partial softmax, and
// keys (or values) taken in one block by all of a tile's rows (with
// 256-float heads a block of 16 keys is 16 KiB per KV head, half an L1
// cache). kernels.AxpyRowsMulti walks a block of values a column of 64
// bytes at a time: rows 2 KiB apart (two KV heads of 256 floats) fall in
// the same L1 sets, and 16 of them overflow the 8 ways (measured 1.5x
// slower than blocks of 8 on Zen 3). attnChunk is a multiple of both.
// An f16 cache takes the blocks kernels.F16AttendRows scales these to
// for the tier's kernels (4x and 2x on AVX-512).
const (
	tileTokens    = 8
	maxTileTokens = 32
	deepKeys      = 1024 // positions before a step that make a cache deep
	attnChunk     = 128
	keyBlock      = 16
	valueBlock    = 8
	decodeBlock   = 32
)

// maxSplitFloats bounds the partial outputs of a split step (16 MiB of
// weighted sums of values).
const maxSplitFloats = 4 << 20

// attendScratch is one thread's working memory for a tile's chunk: the
// scores (rows x heads x attnChunk), the chunk's partial outputs (rows x
// heads x head dim), maxima and sums, and the running maxima and sums of
// the fold.
type attendScratch struct {
	sc, oc []float32
	mc, m  []float32
	lc, l  []float64
	blocks []kvBlock
	// pq is the queries of the tile in use in kernels.PairQueries'
	// layout (row t-t0, head h at 2*((t-t0)*qd+h*hd)), nil where they
	// are not paired; attendWhole pairs into qx.
	pq, qx []float32
}

var scratchPool = sync.Pool{New: func() any { return new(attendScratch) }}

// scratch returns working memory for tiles of up to rows rows.
func (a *Attention) scratch(rows int) *attendScratch {
	s := scratchPool.Get().(*attendScratch)
	s.pq = nil
	rh := rows * a.Heads
	if len(s.mc) < rh || len(s.oc) < rh*a.HeadDim {
		s.sc = make([]float32, rh*attnChunk)
		s.oc = make([]float32, rh*a.HeadDim)
		s.mc, s.m = make([]float32, rh), make([]float32, rh)
		s.lc, s.l = make([]float64, rh), make([]float64, rh)
	}
	return s
}

// attendTile is a share of Attend: batch rows [t0, t1) of one sequence,
// every head. [c0, c1) are the chunks any of its rows sees; cost
// estimates the multiply-adds per head dimension.
type attendTile struct {
	t0, t1, c0, c1 int
	cost           int
}

// first is the first position row t sees.
func first(b *Batch, window, t int) int {
	if window > 0 {
		return max(0, b.Pos[t]-window+1)
	}
	return 0
}

// span is the part of chunk c that row t sees: positions [s, e), empty
// when s >= e.
func span(b *Batch, window, t, c int) (s, e int) {
	return max(c*attnChunk, first(b, window, t)), min((c+1)*attnChunk, b.Pos[t]+1)
}

// tiles cuts the batch into tiles of rows of a sequence: tileTokens
// rows, or up to maxTileTokens over a deep cache where the sequence has
// rows enough to leave every thread four tiles or more. Each tile reads
// every key and value its rows see; over a deep cache those come from
// memory, not L2, and a larger tile reads them once for more rows. A
// prompt of 512 over 4096 positions (Qwen3-1.7B's shape, f16, Zen 5,
// alternated pairs): one layer's attention on one thread 219 against
// 191 ms (medians of six), on two 113 against 111 (eight; the machine's
// noise was +-20%); `siskin bench -p 512 -d 4096` 96.3 against 102.6
// tok/s (eight). Over a shallow cache, where a tile sees few keys, tiles
// of 32 measured level or a little slower.
func (a *Attention) tiles(b *Batch, window int) []attendTile {
	var tiles []attendTile
	nt := kernels.Threads()
	for t0 := 0; t0 < len(b.Tokens); {
		end := t0 + 1 // end of this sequence's rows
		for end < len(b.Tokens) && b.Row0[end] == b.Row0[t0] {
			end++
		}
		size := tileTokens
		for b.Pos[t0] >= deepKeys && size < maxTileTokens && end-t0 >= 8*nt*size {
			size *= 2
		}
		for ; t0 < end; t0 = min(t0+size, end) {
			t1 := min(t0+size, end)
			keys := b.Pos[t1-1] + 1 - first(b, window, t1-1)
			tiles = append(tiles, attendTile{t0: t0, t1: t1,
				c0: first(b, window, t0) / attnChunk, c1: b.Pos[t1-1]/attnChunk + 1,
				cost: (t1 - t0) * a.Heads * keys})
		}
	}
	return tiles
}

// attendWhole computes a tile, its chunks one after another, each folded
// into out as soon as it is done.
func (a *Attention) attendWhole(b *Batch, li, window int, q []float32, st *stepKV, out []float32, tile attendTile, s *attendScratch) {
	hd, qd := a.HeadDim, a.Heads*a.HeadDim
	if a.pairs(b, li, tile) {
		s.qx = a.pairQueries(s.qx, q, tile)
		s.pq = s.qx
	}
	for c := tile.c0; c < tile.c1; c++ {
		var next kvRows // the next chunk's first keys
		if c+1 < tile.c1 {
			next = a.firstKeys(b, li, window, st, tile, c+1)
		}
		a.attendChunk(b, li, window, q, st, tile, c, 0, a.Heads, s, s.oc, s.mc, s.lc, next)
		for t := tile.t0; t < tile.t1; t++ {
			if s, e := span(b, window, t, c); s >= e {
				continue
			}
			firstChunk := c == first(b, window, t)/attnChunk
			for h := 0; h < a.Heads; h++ {
				i := (t-tile.t0)*a.Heads + h
				fold(out[t*qd+h*hd:t*qd+(h+1)*hd], &s.m[i], &s.l[i],
					s.oc[(t-tile.t0)*qd+h*hd:(t-tile.t0)*qd+(h+1)*hd], s.mc[i], s.lc[i], firstChunk)
			}
		}
	}
	for t := tile.t0; t < tile.t1; t++ {
		for h := 0; h < a.Heads; h++ {
			i := (t-tile.t0)*a.Heads + h
			kernels.Scale(out[t*qd+h*hd:t*qd+(h+1)*hd], float32(1/s.l[i]))
		}
	}
	s.pq = nil // the tile's
}

// pairs reports whether the tile's scores take two heads of a group at
// once: an f16 cache, rows of four and a tier with
// kernels.DotRowsPairedF16 for this head size.
func (a *Attention) pairs(b *Batch, li int, tile attendTile) bool {
	return tile.t1-tile.t0 >= 4 && a.Heads/a.KVHeads >= 2 &&
		b.Cache[tile.t0].Layers[li].Type() == kv.F16 && kernels.PairedF16(a.HeadDim)
}

// pairQueries returns the tile's queries in kernels.PairQueries' layout,
// in buf if it has room: once per tile (attendWhole) or per step
// (attendSplit), not per chunk.
func (a *Attention) pairQueries(buf, q []float32, tile attendTile) []float32 {
	qd := a.Heads * a.HeadDim
	n := 2 * (tile.t1 - tile.t0) * qd
	if cap(buf) < n {
		buf = make([]float32, n)
	}
	buf = buf[:n]
	kernels.PairQueries(buf, q[tile.t0*qd:tile.t1*qd])
	return buf
}

// firstKeys is the key rows of the first position of chunk c that the
// tile's rows see.
func (a *Attention) firstKeys(b *Batch, li, window int, st *stepKV, tile attendTile, c int) kvRows {
	p, _ := span(b, window, tile.t0, c)
	layer := b.Cache[tile.t0].Layers[li]
	if cached := layer.Len(); p >= cached {
		kvd := a.KVHeads * a.HeadDim
		r := b.Row0[tile.t0] + p - cached
		return st.keys(r * kvd)
	}
	switch layer.Type() {
	case kv.F16:
		ks, _, _ := layer.RunF16(p, 1)
		return kvRows{h: ks}
	case kv.Q8_0:
		ks, _, _ := layer.RunQ8(p, 1)
		return kvRows{q: ks}
	}
	ks, _, _ := layer.Run(p, 1)
	return kvRows{f: ks}
}

// fold adds a chunk's partial softmax (maximum mc, sum lc, weighted sum
// of values oc) to a row and head's running maximum m, sum l and output
// o, rescaling both to the larger maximum; the first chunk is copied.
func fold(o []float32, m *float32, l *float64, oc []float32, mc float32, lc float64, first bool) {
	if first {
		copy(o, oc)
		*m, *l = mc, lc
		return
	}
	// One of the two factors is exp(0) = 1: call math.Exp for the other
	// alone (the two exponentials were nearly half of a fold's time).
	mx, ra, rb := *m, float32(1), float32(1)
	if mc > mx {
		mx, ra = mc, float32(math.Exp(float64(*m)-float64(mc)))
	} else {
		rb = float32(math.Exp(float64(mc) - float64(mx)))
	}
	if ra != 1 {
		kernels.Scale(o, ra)
	}
	kernels.VecAxpy(o, oc, rb)
	*l = *l*float64(ra) + lc*float64(rb)
	*m = mx
}

// splitItem is one chunk of a split tile for KV heads [g0, g1); its
// partial results (the tile's rows x heads) start at row-head at.
type splitItem struct {
	tile, c, g0, g1, at int
}

// splitParts is the partial results of a split step: per tile, chunk,
// row and head, the weighted sum of values, the maximum and the sum.
type splitParts struct {
	o  []float32
	m  []float32
	l  []float64
	pq []float32 // the paired queries of the tiles that pair, by row
}

var partsPool = sync.Pool{New: func() any { return new(splitParts) }}

// attendSplit computes every chunk of every tile as its own item, on all
// threads, then folds each row and head's chunks in order.
func (a *Attention) attendSplit(b *Batch, li, window int, q []float32, st *stepKV, out []float32, tiles []attendTile) {
	hd, qd := a.HeadDim, a.Heads*a.HeadDim
	group := a.Heads / a.KVHeads
	chunks, rows := 0, 0
	for _, t := range tiles {
		chunks += t.c1 - t.c0
		rows = max(rows, t.t1-t.t0)
	}
	// Split a chunk's KV heads across items too when there are too few
	// chunks to keep every thread busy (and the step is large enough to
	// run on more than one: a decode step over a few keys, the code
	// predictor's, runs on the caller, and items per KV head cost it more
	// than its arithmetic). Items do not change the bits: each head's
	// scores and sums are computed alone either way.
	per := 1
	cost := 0
	for _, t := range tiles {
		cost += t.cost
	}
	if chunks < 2*kernels.Threads() && kernels.Parallel(2*a.HeadDim*cost) {
		per = a.KVHeads
	}
	items := make([]splitItem, 0, chunks*per)
	rh := 0                       // row-heads of partial results
	at := make([]int, len(tiles)) // where each tile's partial results start
	for i, t := range tiles {
		at[i] = rh
		n := (t.t1 - t.t0) * a.Heads // row-heads per chunk
		for c := t.c0; c < t.c1; c++ {
			for g := 0; g < per; g++ {
				items = append(items, splitItem{tile: i, c: c,
					g0: g * a.KVHeads / per, g1: (g + 1) * a.KVHeads / per, at: rh})
			}
			rh += n
		}
	}
	p := partsPool.Get().(*splitParts)
	if len(p.m) < rh || len(p.o) < rh*hd {
		p.o = make([]float32, rh*hd)
		p.m = make([]float32, rh)
		p.l = make([]float64, rh)
	}
	// Paired queries once for the step (BenchmarkAttendPrefill32Qwen3At4096,
	// Zen 5, four alternated runs: 11.1-11.8 against 12.3-12.7 ms of CPU
	// time unpaired; pairing per item measured level with unpaired).
	for _, t := range tiles {
		if !a.pairs(b, li, t) {
			continue
		}
		if n := 2 * len(b.Tokens) * qd; len(p.pq) < n {
			p.pq = make([]float32, n)
		}
		a.pairQueries(p.pq[2*t.t0*qd:2*t.t1*qd], q, t)
	}
	unit := 2 * hd * cost / len(items)
	kernels.ParallelFor(len(items), unit, 1, func(lo, hi int) {
		s := a.scratch(rows)
		for i := lo; i < hi; i++ {
			it := items[i]
			var next kvRows // the keys of this thread's next item
			if i+1 < hi {
				nt := items[i+1]
				next = a.firstKeys(b, li, window, st, tiles[nt.tile], nt.c)
			}
			tile := tiles[it.tile]
			r, n := it.at, (tile.t1-tile.t0)*a.Heads
			if a.pairs(b, li, tile) {
				s.pq = p.pq[2*tile.t0*qd : 2*tile.t1*qd]
			}
			a.attendChunk(b, li, window, q, st, tile, it.c, it.g0*group, it.g1*group,
				s, p.o[r*hd:(r+n)*hd], p.m[r:r+n], p.l[r:r+n], next)
			s.pq = nil
		}
		scratchPool.Put(s)
	})
	// The folds, a row and head each, on all threads too: on the caller
	// alone they took a tenth of a decode step's attention at depth 2048
	// (each reads partial results another thread wrote), 0.16 against
	// 0.26 ms of the step's 3.2 (Qwen3-1.7B's shape, q8_0, Zen 5, three
	// alternated runs). Each row and head folds its chunks in order, on
	// whichever thread: the bits do not depend on the threads.
	heads := make([]int, len(tiles)+1) // row-heads before each tile
	for i, t := range tiles {
		heads[i+1] = heads[i] + (t.t1-t.t0)*a.Heads
	}
	foldCost := 8 * hd * chunks / len(tiles) // in multiply-adds, as measured
	kernels.ParallelFor(heads[len(tiles)], foldCost, 1, func(lo, hi int) {
		i := 0
		for j := lo; j < hi; j++ {
			for j >= heads[i+1] {
				i++
			}
			tile := tiles[i]
			n := (tile.t1 - tile.t0) * a.Heads
			t, h := tile.t0+(j-heads[i])/a.Heads, (j-heads[i])%a.Heads
			f := first(b, window, t) / attnChunk
			o := out[t*qd+h*hd : t*qd+(h+1)*hd]
			var m float32
			var l float64
			for c := tile.c0; c < tile.c1; c++ {
				if s, e := span(b, window, t, c); s >= e {
					continue
				}
				r := at[i] + (c-tile.c0)*n + j - heads[i]
				fold(o, &m, &l, p.o[r*hd:(r+1)*hd], p.m[r], p.l[r], c == f)
			}
			kernels.Scale(o, float32(1/l))
		}
	})
	partsPool.Put(p)
}

// kvBlock is up to keyBlock (or valueBlock) consecutive positions [p0,
// p0+m) whose key and value rows are kvd elements apart in ks and vs.
type kvBlock struct {
	p0, m  int
	ks, vs kvRows
}

// chunkBlocks appends the blocks of the positions of chunk c that the
// tile's rows see, in order of position: those in the cache (one run, or
// two where a sliding layer's ring wraps), then those of this step.
func (a *Attention) chunkBlocks(dst []kvBlock, b *Batch, li, window int, st *stepKV, tile attendTile, c, size int) []kvBlock {
	kvd := a.KVHeads * a.HeadDim
	layer := b.Cache[tile.t0].Layers[li]
	cached := layer.Len()                // positions before this step
	row0 := b.Row0[tile.t0]              // this sequence's first row in the batch
	lo, _ := span(b, window, tile.t0, c) // rows further down see no less
	_, hi := span(b, window, tile.t1-1, c)
	p := lo
	typ := layer.Type()
	for p < min(hi, cached) {
		var ks, vs kvRows
		var m int
		switch typ {
		case kv.F16:
			ks.h, vs.h, m = layer.RunF16(p, min(hi, cached)-p)
		case kv.Q8_0:
			ks.q, vs.q, m = layer.RunQ8(p, min(hi, cached)-p)
		default:
			ks.f, vs.f, m = layer.Run(p, min(hi, cached)-p)
		}
		for i := 0; i < m; i += size {
			dst = append(dst, kvBlock{p + i, min(size, m-i), ks.from(i * kvd), vs.from(i * kvd)})
		}
		p += m
	}
	for ; p < hi; p += size {
		r := row0 + p - cached
		dst = append(dst, kvBlock{p, min(size, hi-p), st.keys(r * kvd), st.values(r * kvd)})
	}
	return dst
}

// attendChunk computes the partial softmax of chunk c for a tile's rows
// and query heads [h0, h1) (whole groups of a KV head): for row t and
// head h, at i = (t-t0)*Heads + h, the maximum mc[i], the sum lc[i] and
// the weighted sum of values in oc[(t-t0)*Heads*HeadDim+h*HeadDim:]; rows
// that see no position of the chunk are left alone. s.sc holds the
// scores, attnChunk floats per row and head. Every block of keys or
// values prefetches the next one as it is read (the last block of keys
// the first of values, and the last block of values next, the keys the
// thread reads after this chunk, or nothing when nil).
func (a *Attention) attendChunk(b *Batch, li, window int, q []float32, st *stepKV, tile attendTile, c, h0, h1 int,
	s *attendScratch, oc, mc []float32, lc []float64, next kvRows) {
	hd, group := a.HeadDim, a.Heads/a.KVHeads
	qd, kvd := a.Heads*hd, a.KVHeads*hd
	t0, t1 := tile.t0, tile.t1
	cs := c * attnChunk
	sc := s.sc
	kb, vb := keyBlock, valueBlock
	switch {
	case t1-t0 == 1:
		// One row (decode) reads each block once whatever its size: take
		// fewer, larger blocks (the sums are the same; a call per 8 or 16
		// positions cost as much as the products at long contexts), still
		// small enough that each block prefetches the next.
		kb, vb = decodeBlock, decodeBlock
	case b.Cache[t0].Layers[li].Type() == kv.F16:
		kb, vb = kernels.F16AttendRows(kb, vb, hd)
	}
	if typ := b.Cache[t0].Layers[li].Type(); t1-t0 == 1 &&
		(typ == kv.Q8_0 && st.q8q != nil && kernels.HeadsQ8() || typ == kv.F16 && kernels.HeadsF16()) {
		a.decodeChunkHeads(b, li, window, q, st, tile, c, h0, h1, s, oc, mc, lc)
		return
	}
	s.blocks = a.chunkBlocks(s.blocks[:0], b, li, window, st, tile, c, kb)
	blocks := s.blocks
	pq := s.pq
	// Scores, one block of keys at a time for every row and head.
	for j, blk := range blocks {
		nx := blocks[0].vs
		if j+1 < len(blocks) {
			nx = blocks[j+1].ks
		}
		for t := t0; t < t1; {
			s, e := blk.span(b, window, t, c)
			r := 1
			if blk.ks.h != nil {
				// Later rows that see keys of the block from the same
				// first one score with each query head's rows together
				// (each score has the same bits alone or in any group of
				// rows), so a key read serves up to four rows of one head,
				// not the group's two heads of one row; where the queries
				// are paired, four rows of two heads
				// (BenchmarkAttendPrefill512Qwen3At4096, Zen 5, three
				// alternated runs: 169-175 against 188-194 ms of CPU time).
				r, e = blk.scoreRun(b, window, t, t1, c, s, e)
			}
			if s < e {
				for h := h0; h < h1; h += group {
					n := nx.from((h / group) * hd)
					ks := blk.ks.from((s-blk.p0)*kvd + (h/group)*hd)
					out := sc[((t-t0)*a.Heads+h)*attnChunk+s-cs:]
					if r == 1 {
						a.dotRows(out, q, t*qd+h*hd, st.q8q, ks, e-s, n)
						continue
					}
					orow := a.Heads * attnChunk // one row's scores to the next
					pr := 0                     // rows whose pairs of heads score together
					if pq != nil {
						pr = r &^ 3
					}
					for j := 0; j < pr; j += 4 {
						qh := pq[2*((t+j-t0)*qd+h*hd):]
						for g := 0; g+1 < group; g += 2 {
							kernels.DotRowsPairedF16(out[j*orow+g*attnChunk:], orow, attnChunk, qh[2*g*hd:], 2*qd, 2*hd, hd, ks.h, kvd, e-s, a.Scale, n.h)
						}
					}
					for g := range group {
						j := pr
						if g == group-1 && group%2 == 1 {
							j = 0 // the odd head out
						}
						if j < r {
							kernels.DotRowsMultiNextF16(out[j*orow+g*attnChunk:], orow, q[(t+j)*qd+(h+g)*hd:], qd, r-j, hd, ks.h, kvd, e-s, a.Scale, n.h)
						}
					}
				}
				nx = kvRows{} // the tile's other rows read the same block
			}
			t += r
		}
	}
	for t := t0; t < t1; t++ {
		s, e := span(b, window, t, c)
		if s >= e {
			continue
		}
		for h := h0; h < h1; h++ {
			i := (t-t0)*a.Heads + h
			mc[i], lc[i] = kernels.ExpMax(sc[i*attnChunk+s-cs : i*attnChunk+e-cs])
		}
		clear(oc[(t-t0)*qd+h0*hd : (t-t0)*qd+h1*hd])
	}
	// The weighted sums of values, a block of value rows at a time; each
	// output element takes its multiply-adds in order of position.
	s.blocks = a.chunkBlocks(s.blocks[:0], b, li, window, st, tile, c, vb)
	blocks = s.blocks
	for j, blk := range blocks {
		nx := next
		if j+1 < len(blocks) {
			nx = blocks[j+1].vs
		}
		for t := t0; t < t1; {
			s, e := blk.span(b, window, t, c)
			r := 1
			if blk.vs.h != nil {
				r = blk.run(b, window, t, t1, c, s, e) // as for the scores
			}
			if s < e {
				for h := h0; h < h1; h += group {
					n := nx.from((h / group) * hd)
					vs := blk.vs.from((s-blk.p0)*kvd + (h/group)*hd)
					y, p := oc[(t-t0)*qd+h*hd:], sc[((t-t0)*a.Heads+h)*attnChunk+s-cs:]
					if r == 1 {
						a.axpyRows(y, p, vs, e-s, n)
						continue
					}
					for g := range group {
						kernels.AxpyRowsMultiNextF16(y[g*hd:], qd, r, hd, p[g*attnChunk:], a.Heads*attnChunk, e-s, vs.h, kvd, n.h)
					}
				}
				nx = kvRows{}
			}
			t += r
		}
	}
}

// decodeChunkHeads is attendChunk for one row over an f16 or q8_0 cache
// on a tier with kernels over several KV heads at once: each run of
// keys, then of values, is read once for heads [h0, h1), row after row (a
// deep cache streamed in order of address, not a column per head), with
// the bits of the per-head kernels.
func (a *Attention) decodeChunkHeads(b *Batch, li, window int, q []float32, st *stepKV, tile attendTile, c, h0, h1 int,
	s *attendScratch, oc, mc []float32, lc []float64) {
	hd, group := a.HeadDim, a.Heads/a.KVHeads
	qd, kvd := a.Heads*hd, a.KVHeads*hd
	t, cs, heads := tile.t0, c*attnChunk, (h1-h0)/group
	sc, y, off := s.sc[h0*attnChunk:], oc[h0*hd:], t*qd+h0*hd
	s.blocks = a.chunkBlocks(s.blocks[:0], b, li, window, st, tile, c, attnChunk)
	for _, blk := range s.blocks {
		if s, e := blk.span(b, window, t, c); s < e {
			ks := blk.ks.from((s-blk.p0)*kvd + h0/group*hd)
			if ks.q != nil {
				kernels.DotRowsHeadsQ8Query(sc[s-cs:], attnChunk, group*attnChunk, q, st.q8q, off, hd, group*hd,
					group, hd, ks.q, kernels.Q8RowBytes(kvd), hd, e-s, heads, a.Scale)
			} else {
				kernels.DotRowsHeadsF16(sc[s-cs:], attnChunk, group*attnChunk, q[off:], hd, group*hd,
					group, hd, ks.h, kvd, hd, e-s, heads, a.Scale)
			}
		}
	}
	st0, e0 := span(b, window, t, c)
	if st0 >= e0 {
		return
	}
	for h := h0; h < h1; h++ {
		mc[h], lc[h] = kernels.ExpMax(s.sc[h*attnChunk+st0-cs : h*attnChunk+e0-cs])
	}
	clear(oc[h0*hd : h1*hd])
	for _, blk := range s.blocks {
		if s, e := blk.span(b, window, t, c); s < e {
			vs := blk.vs.from((s-blk.p0)*kvd + h0/group*hd)
			if vs.q != nil {
				kernels.AxpyRowsHeadsQ8(y, hd, group*hd, group, hd, sc[s-cs:], attnChunk, group*attnChunk,
					e-s, vs.q, kernels.Q8RowBytes(kvd), hd, heads)
			} else {
				kernels.AxpyRowsHeadsF16(y, hd, group*hd, group, hd, sc[s-cs:], attnChunk, group*attnChunk,
					e-s, vs.h, kvd, hd, heads)
			}
		}
	}
}

// span is the part of the block row t sees in chunk c: [s, e), empty
// when s >= e.
func (blk *kvBlock) span(b *Batch, window, t, c int) (s, e int) {
	s, e = span(b, window, t, c)
	return max(s, blk.p0), min(e, blk.p0+blk.m)
}

// scoreRun is how many rows from t (before t1) see the block's part from
// s, as row t does, and the end of the widest of their parts: their
// scores are taken together up to there. A row whose own part ends
// before gets scores past its end that nothing reads (ExpMax and the
// values take each row's span), so the rows on the causal diagonal, each
// with its own end, no longer score one at a time. Rows that see none of
// the block run together as in run.
func (blk *kvBlock) scoreRun(b *Batch, window, t, t1, c, s, e int) (int, int) {
	if s >= e {
		return blk.run(b, window, t, t1, c, s, e), e
	}
	r := 1
	for ; t+r < t1; r++ {
		s2, e2 := blk.span(b, window, t+r, c)
		if s2 != s || s2 >= e2 {
			break
		}
		e = max(e, e2)
	}
	return r, e
}

// run is how many rows from t (before t1) see the block's part [s, e)
// that row t sees (or, with t, none of it).
func (blk *kvBlock) run(b *Batch, window, t, t1, c, s, e int) int {
	r := 1
	for ; t+r < t1; r++ {
		s2, e2 := blk.span(b, window, t+r, c)
		if !(s2 == s && e2 == e || s2 >= e2 && s >= e) {
			break
		}
	}
	return r
}

// dotRows sets the scores out (attnChunk apart per query head) of a KV
// head's group of query heads q[off:] against n key rows ks of any
// element type, prefetching the rows of next (q8q: q prepared for a q8_0
// cache).
func (a *Attention) dotRows(out, q []float32, off int, q8q *kernels.Q8Query, ks kvRows, n int, next kvRows) {
	hd, group, kvd := a.HeadDim, a.Heads/a.KVHeads, a.KVHeads*a.HeadDim
	qh := q[off:]
	switch {
	case ks.q != nil && q8q != nil:
		kernels.DotRowsMultiNextQ8Query(out, attnChunk, q, q8q, off, hd, group, hd, ks.q, kernels.Q8RowBytes(kvd), n, a.Scale, next.q)
	case ks.h != nil:
		kernels.DotRowsMultiNextF16(out, attnChunk, qh, hd, group, hd, ks.h, kvd, n, a.Scale, next.h)
	case ks.q != nil:
		kernels.DotRowsMultiNextQ8(out, attnChunk, qh, hd, group, hd, ks.q, kernels.Q8RowBytes(kvd), n, a.Scale, next.q)
	default:
		kernels.DotRowsMultiNext(out, attnChunk, qh, hd, group, hd, ks.f, kvd, n, a.Scale, next.f)
	}
}

// axpyRows adds to the outputs y of a KV head's group of query heads the
// n value rows vs weighted by p (attnChunk apart per query head).
func (a *Attention) axpyRows(y, p []float32, vs kvRows, n int, next kvRows) {
	hd, group, kvd := a.HeadDim, a.Heads/a.KVHeads, a.KVHeads*a.HeadDim
	switch {
	case vs.h != nil:
		kernels.AxpyRowsMultiNextF16(y, hd, group, hd, p, attnChunk, n, vs.h, kvd, next.h)
	case vs.q != nil:
		kernels.AxpyRowsMultiNextQ8(y, hd, group, hd, p, attnChunk, n, vs.q, kernels.Q8RowBytes(kvd), next.q)
	default:
		kernels.AxpyRowsMultiNext(y, hd, group, hd, p, attnChunk, n, vs.f, kvd, next.f)
	}
}
