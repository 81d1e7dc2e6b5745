package codec

import (
	"fmt"

	"github.com/siskin-ml/siskin/kernels"
)

// DefaultChunk is the number of frames a Stream computes at a time: the
// size of its scratch buffers. Longer pushes are cut into such steps,
// which changes no number (every layer is causal and carries its state).
const DefaultChunk = 16

// colRows is the number of output rows a convolution gathers (im2col) per
// matrix product.
const colRows = 256

// Stream decodes one utterance frame by frame. Its state (conv tails,
// transposed-conv carries, the transformer's sliding keys and values) and
// its scratch buffers are allocated once by NewStream, Bytes() in all.
// Push is exact: any partition of the frames into pushes gives the same
// float samples, bit for bit, as Decode. A Stream is not safe for
// concurrent use; streams sharing a Decoder are independent.
type Stream struct {
	d     *Decoder
	chunk int
	pos   int // frames decoded so far
	slab  []float32
	state streamState
	ws    scratch
	// tap, when set (tests), receives each stage's output rows
	// (time-major, cols wide).
	tap func(stage string, rows []float32, cols int)
}

type streamState struct {
	pre, conv0, final []float32
	k, v              [][]float32 // per layer: (sliding_window-1) rows of keys / values
	dw                [][]float32 // per upsampler: ConvNeXt dwconv input tail
	carry             [][]float32 // per block: the transposed conv's carry (carryLen)
	unit              [][3][]float32
}

type scratch struct {
	x0, x1, cat, col, m0, m1, m2, kc, vc, scores []float32
}

// stateLens lists the lengths of the state slices in the order
// carveState takes them.
func (d *Decoder) stateLens() []int {
	c := &d.cfg
	lens := []int{d.preConv.hist() * c.CodebookDim, d.conv0.hist() * c.LatentDim, d.final.hist() * d.final.in}
	kv := (c.SlidingWindow - 1) * c.KVHeads * c.HeadDim
	for range d.layers {
		lens = append(lens, kv, kv)
	}
	for range d.ups {
		lens = append(lens, 6*c.LatentDim)
	}
	for _, b := range d.blocks {
		lens = append(lens, b.up.carryLen())
		for _, u := range b.units {
			lens = append(lens, u.conv1.hist()*u.conv1.in)
		}
	}
	return lens
}

// scratchLens gives the scratch buffer lengths (in scratch's field
// order) for steps of chunk frames, walking the forward pass's buffer uses
// in order.
func (d *Decoder) scratchLens(chunk int) []int {
	const act, cat, col, m0, m1, m2, kc, vc, scores = 0, 2, 3, 4, 5, 6, 7, 8, 9
	n := make([]int, 10) // x0 and x1 both hold act
	use := func(i, v int) { n[i] = max(n[i], v) }
	conv := func(c *conv, rows int) {
		use(cat, (c.hist()+rows)*c.in)
		if c.k > 1 {
			use(col, min(colRows, rows)*c.k*c.in)
		}
		use(act, rows*c.out)
	}
	c := &d.cfg
	F, D, CD := chunk, c.CodebookDim/2, c.CodebookDim
	qw, kvw := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	use(m0, F*max(D, c.HiddenSize))
	use(m1, F*max(D, qw, c.IntermediateSize))
	use(m2, F*max(CD, qw, c.IntermediateSize))
	use(act, F*max(CD, c.HiddenSize, c.LatentDim))
	conv(&d.preConv, F)
	use(kc, (c.SlidingWindow-1+F)*kvw)
	use(vc, (c.SlidingWindow-1+F)*kvw)
	use(scores, c.SlidingWindow)
	R := F
	for _, u := range d.ups {
		use(m0, R*u.tc.k*u.tc.out)
		R *= u.tc.s
		use(act, R*c.LatentDim)
		use(cat, (6+R)*c.LatentDim)
		use(m0, R*c.LatentDim)
		use(m1, R*4*c.LatentDim)
	}
	conv(&d.conv0, R)
	for _, b := range d.blocks {
		use(m0, max(R*b.up.k*b.up.out, b.up.carryLen()+R*b.up.in))
		R *= b.up.s
		use(act, R*b.up.out)
		for _, u := range b.units {
			conv(&u.conv1, R)
			use(m0, R*u.conv1.out)
			use(m1, R*u.conv2.out)
		}
	}
	conv(&d.final, R)
	n[1] = n[act]
	return n
}

// StreamBytes is the memory NewStream(chunk) allocates for one stream:
// its state plus its scratch buffers.
func (d *Decoder) StreamBytes(chunk int) int64 {
	return d.StateBytes() + 4*int64(sum(d.scratchSizes(chunk)))
}

// StateBytes is the part of a stream's memory that carries from push to
// push (the rest is scratch).
func (d *Decoder) StateBytes() int64 { return 4 * int64(sum(d.stateLens())) }

func (d *Decoder) scratchSizes(chunk int) []int { return d.scratchLens(max(chunk, 1)) }

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// NewStream returns a stream at frame 0 that computes chunk frames per
// step (chunk <= 0 means DefaultChunk); all its memory, StreamBytes(chunk)
// bytes, is allocated here.
func (d *Decoder) NewStream(chunk int) *Stream {
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	st, sc := d.stateLens(), d.scratchSizes(chunk)
	s := &Stream{d: d, chunk: chunk, slab: make([]float32, sum(st)+sum(sc))}
	slab := s.slab
	take := func(n int) []float32 {
		b := slab[:n:n]
		slab = slab[n:]
		return b
	}
	s.state.pre, s.state.conv0, s.state.final = take(st[0]), take(st[1]), take(st[2])
	i := 3
	for range d.layers {
		s.state.k = append(s.state.k, take(st[i]))
		s.state.v = append(s.state.v, take(st[i+1]))
		i += 2
	}
	for range d.ups {
		s.state.dw = append(s.state.dw, take(st[i]))
		i++
	}
	s.state.unit = make([][3][]float32, len(d.blocks))
	for b := range d.blocks {
		s.state.carry = append(s.state.carry, take(st[i]))
		for u := range 3 {
			s.state.unit[b][u] = take(st[i+1+u])
		}
		i += 4
	}
	bufs := []*[]float32{&s.ws.x0, &s.ws.x1, &s.ws.cat, &s.ws.col, &s.ws.m0, &s.ws.m1, &s.ws.m2, &s.ws.kc, &s.ws.vc, &s.ws.scores}
	for j, b := range bufs {
		*b = take(sc[j])
	}
	return s
}

// Bytes is the memory the stream holds (StreamBytes of its chunk).
func (s *Stream) Bytes() int64 { return 4 * int64(len(s.slab)) }

// Frames is the number of frames decoded so far.
func (s *Stream) Frames() int { return s.pos }

// Reset returns the stream to frame 0 (a new utterance) without
// allocating. Only the state is cleared: every step writes the scratch
// it reads (which is why any partition of pushes gives the same bits),
// and the state is a few MiB where a chunk's scratch is tens.
func (s *Stream) Reset() {
	clear(s.slab[:sum(s.d.stateLens())])
	s.pos = 0
}

// CheckCodes reports the first code outside [0, codebook_size) in frames
// of num_quantizers codes each (frame-major), numbering frames from
// first.
func (d *Decoder) CheckCodes(codes []int32, first int) error {
	q := d.cfg.Quantizers
	if len(codes)%q != 0 {
		return fmt.Errorf("codec: %d codes is not a whole number of %d-code frames", len(codes), q)
	}
	for i, c := range codes {
		if c < 0 || int(c) >= d.cfg.CodebookSize {
			return fmt.Errorf("codec: frame %d codebook %d: code %d outside [0, %d)", first+i/q, i%q, c, d.cfg.CodebookSize)
		}
	}
	return nil
}

// Push decodes the frames in codes (num_quantizers codes per frame,
// frame-major) and appends exactly frames x SamplesPerFrame samples to
// dst. An out-of-range code is an error naming its frame and codebook,
// and leaves the stream as it was.
func (s *Stream) Push(dst []float32, codes []int32) ([]float32, error) {
	if err := s.d.CheckCodes(codes, s.pos); err != nil {
		return dst, err
	}
	q := s.d.cfg.Quantizers
	for len(codes) > 0 {
		n := min(len(codes)/q, s.chunk)
		dst = s.step(dst, codes[:n*q], n)
		codes = codes[n*q:]
		s.pos += n
	}
	return dst, nil
}

// Decode decodes a whole utterance (frame-major codes) in one pass.
func (d *Decoder) Decode(codes []int32) ([]float32, error) {
	s := d.NewStream(min(DefaultChunk, max(1, len(codes)/d.cfg.Quantizers)))
	return s.Push(make([]float32, 0, len(codes)/d.cfg.Quantizers*d.cfg.SamplesPerFrame()), codes)
}

func (s *Stream) emit(stage string, rows []float32, cols int) {
	if s.tap != nil {
		s.tap(stage, rows, cols)
	}
}

// step decodes n <= chunk validated frames.
func (s *Stream) step(dst []float32, codes []int32, n int) []float32 {
	d, ws := s.d, &s.ws
	x, y := ws.x0, ws.x1
	s.dequantize(x, codes, n)
	s.emit("rvq_latent", x[:n*d.cfg.CodebookDim], d.cfg.CodebookDim)
	all, room := window(ws.cat, s.state.pre, n, d.cfg.CodebookDim)
	copy(room, x[:n*d.cfg.CodebookDim])
	d.preConv.run(y, all, n, ws.col)
	slide(s.state.pre, all)
	s.emit("pre_conv", y[:n*d.cfg.LatentDim], d.cfg.LatentDim)
	s.transformer(y, x, n)
	s.emit("transformer", y[:n*d.cfg.LatentDim], d.cfg.LatentDim)
	x, y = y, x // the data is in x from here on
	R := n
	for j := range d.ups {
		R = s.upsample(j, x, y, R)
		x, y = y, x
		s.emit(fmt.Sprintf("upsample%d", j), x[:R*d.cfg.LatentDim], d.cfg.LatentDim)
	}
	all, room = window(ws.cat, s.state.conv0, R, d.cfg.LatentDim)
	copy(room, x[:R*d.cfg.LatentDim])
	d.conv0.run(y, all, R, ws.col)
	slide(s.state.conv0, all)
	x, y = y, x
	s.emit("decoder0", x[:R*d.conv0.out], d.conv0.out)
	for b := range d.blocks {
		R = s.block(b, x, y, R)
		x, y = y, x
		s.emit(fmt.Sprintf("block%d", b+1), x[:R*d.blocks[b].up.out], d.blocks[b].up.out)
	}
	f := &d.final
	all, room = window(ws.cat, s.state.final, R, f.in)
	d.finalAct.apply(room, x[:R*f.in], f.in)
	f.run(y, all, R, ws.col)
	slide(s.state.final, all)
	wav := y[:R]
	s.emit("wav_preclamp", wav, 1)
	for i, v := range wav {
		wav[i] = min(max(v, -1), 1)
	}
	return append(dst, wav...)
}

// window lays the history hist and room for n rows of w floats end to end
// in buf, returning the whole window and the room.
func window(buf, hist []float32, n, w int) (all, room []float32) {
	all = buf[:len(hist)+n*w]
	copy(all, hist)
	return all, all[len(hist):]
}

// slide keeps the last len(hist) floats of a window as the next history.
func slide(hist, all []float32) { copy(hist, all[len(all)-len(hist):]) }

// dequantize writes the split-RVQ latent of n frames to dst (n rows of
// codebook_dim): W_first·book_0[c_0] + W_rest·Σ_{q≥1} book_q[c_q].
func (s *Stream) dequantize(dst []float32, codes []int32, n int) {
	d, ws := s.d, &s.ws
	q, dim, cd := d.cfg.Quantizers, d.cfg.CodebookDim/2, d.cfg.CodebookDim
	first, rest := ws.m0[:n*dim], ws.m1[:n*dim]
	clear(rest)
	for t := range n {
		c := codes[t*q : (t+1)*q]
		copy(first[t*dim:(t+1)*dim], d.books[0][int(c[0])*dim:])
		r := rest[t*dim : (t+1)*dim]
		for k := 1; k < q; k++ {
			e := d.books[k][int(c[k])*dim:]
			for i := range r {
				r[i] += e[i]
			}
		}
	}
	lat, tmp := dst[:n*cd], ws.m2[:n*cd]
	kernels.MatMul(lat, d.outFirst, first, n)
	kernels.MatMul(tmp, d.outRest, rest, n)
	for i := range lat {
		lat[i] += tmp[i]
	}
}

// addBias adds b to every row of x.
func addBias(x, b []float32) {
	for o := 0; o < len(x); o += len(b) {
		row := x[o : o+len(b)]
		for i := range row {
			row[i] += b[i]
		}
	}
}

// run computes n output rows into dst from a window of hist()+n input
// rows, gathering colRows rows of taps at a time into col.
func (c *conv) run(dst, all []float32, n int, col []float32) {
	out := dst[:n*c.out]
	if c.p != nil {
		kernels.Conv(out, c.p, all, n, c.dil)
		return
	}
	if c.row != nil {
		// Output t reads the k input rows from t on, end to end in the
		// window: one dot product.
		kernels.DotRows(out, c.row, all[:(n+c.k-1)*c.in], c.in, 1)
		addBias(out, c.b)
		return
	}
	if c.k == 1 {
		kernels.MatMul(out, c.w, all[:n*c.in], n)
	} else {
		kin := c.k * c.in
		tile := max(1, len(col)/kin)
		for t0 := 0; t0 < n; t0 += tile {
			t1 := min(n, t0+tile)
			for t := t0; t < t1; t++ {
				row := col[(t-t0)*kin : (t-t0+1)*kin]
				for j := range c.k {
					src := (t + j*c.dil) * c.in
					copy(row[j*c.in:(j+1)*c.in], all[src:src+c.in])
				}
			}
			kernels.MatMul(out[t0*c.out:t1*c.out], c.w, col[:(t1-t0)*kin], t1-t0)
		}
	}
	addBias(out, c.b)
}

// carryLen is the length of the state a stream keeps for the transposed
// conv: the last k/s-1 input rows when packed (a k/s-tap convolution),
// else the last product row's k-s overlapping output taps.
func (t *transConv) carryLen() int {
	if t.p != nil {
		return (t.p.Taps - 1) * t.in
	}
	return (t.k - t.s) * t.out
}

// run computes the n*s output rows of n input rows x into dst, with carry
// (carryLen, updated) the previous input's share; a is scratch of n*k*out
// floats (or carryLen()+n*in when packed).
func (t *transConv) run(dst, x []float32, n int, carry, a []float32) {
	if t.p != nil && len(carry) == 0 {
		t.runPacked(dst, x[:n*t.in], n, nil)
		return
	}
	if t.p != nil {
		all, room := window(a, carry, n, t.in)
		copy(room, x[:n*t.in])
		t.runPacked(dst, all, n, carry)
		return
	}
	kout, so, lap := t.k*t.out, t.s*t.out, (t.k-t.s)*t.out
	a = a[:n*kout]
	kernels.MatMul(a, t.w, x[:n*t.in], n)
	for i := range n {
		cur, out := a[i*kout:(i+1)*kout], dst[i*so:(i+1)*so]
		prev := carry
		if i > 0 {
			prev = a[(i-1)*kout+so : i*kout]
		}
		for j := range so {
			v := cur[j]
			if j < lap {
				v += prev[j]
			}
			out[j] = v + t.b[j%t.out]
		}
	}
	if lap > 0 {
		copy(carry, a[(n-1)*kout+so:n*kout])
	}
}

// apply writes SnakeBeta of x (rows of c channels) to dst, which may be x.
func (s *snake) apply(dst, x []float32, c int) {
	rows := len(x) / c
	kernels.ParallelFor(rows, 8*c, 16, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			kernels.SnakeBeta(dst[r*c:(r+1)*c], x[r*c:(r+1)*c], s.a, s.inv)
		}
	})
}

// runPacked computes the n*s output rows from the window all (the carried
// input rows, then n new ones) as one k/s-tap convolution whose output
// row t is the s output rows t*s..t*s+s-1 end to end (so no overlap-add),
// and keeps the window's last rows as the next carry.
func (t *transConv) runPacked(dst, all []float32, n int, carry []float32) {
	kernels.Conv(dst[:n*t.s*t.out], t.p, all, n, 1)
	slide(carry, all)
}
