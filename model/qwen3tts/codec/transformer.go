package codec

import (
	"math"

	"github.com/siskin-ml/siskin/kernels"
)

// transformer runs the sliding-window transformer over n frames of x
// (rows of latent_dim), at positions pos.., writing n rows of latent_dim
// to x itself; h is scratch of n rows of hidden_size.
func (s *Stream) transformer(x, h []float32, n int) {
	d, c := s.d, &s.d.cfg
	hid := c.HiddenSize
	hs := h[:n*hid]
	d.matMul(hs, d.inProj, x[:n*c.LatentDim], n)
	addBias(hs, d.inProjB)
	for i := range d.layers {
		s.attention(i, hs, n)
		s.mlp(i, hs, n)
	}
	nrm := s.ws.m0[:n*hid]
	s.rmsNorm(nrm, hs, d.norm, n)
	out := x[:n*c.LatentDim]
	d.matMul(out, d.outProj, nrm, n)
	addBias(out, d.outProjB)
}

// rmsNorm normalizes each of the n rows of x into dst.
func (s *Stream) rmsNorm(dst, x, w []float32, n int) {
	c := len(w)
	eps := float32(s.d.cfg.RMSNormEps)
	for t := range n {
		kernels.RMSNorm(dst[t*c:(t+1)*c], x[t*c:(t+1)*c], w, eps)
	}
}

// addScaled sets h += scale ⊙ v row by row (LayerScale).
func addScaled(h, v, scale []float32) {
	for o := 0; o < len(h); o += len(scale) {
		hr, vr := h[o:o+len(scale)], v[o:o+len(scale)]
		for i := range hr {
			hr[i] += scale[i] * vr[i]
		}
	}
}

// attention adds layer i's self-attention over the last sliding_window
// positions (the query's own included) to h. Keys and values of earlier
// pushes come from the layer's state, laid out before the new rows so that
// every query reads its keys in the same order however the frames were
// pushed.
func (s *Stream) attention(i int, h []float32, n int) {
	d, c, ws := s.d, &s.d.cfg, &s.ws
	L := &d.layers[i]
	hid, hd, W := c.HiddenSize, c.HeadDim, c.SlidingWindow
	qw, kvw := c.Heads*hd, c.KVHeads*hd
	nrm := ws.m0[:n*hid]
	s.rmsNorm(nrm, h, L.inNorm, n)
	q := ws.m1[:n*qw]
	d.matMul(q, L.q, nrm, n)
	kc, kroom := window(ws.kc, s.state.k[i], n, kvw)
	vc, vroom := window(ws.vc, s.state.v[i], n, kvw)
	d.matMul(kroom, L.k, nrm, n)
	d.matMul(vroom, L.v, nrm, n)
	for t := range n {
		d.rope.NeoXHeads(q[t*qw:(t+1)*qw], hd, s.pos+t)
		d.rope.NeoXHeads(kroom[t*kvw:(t+1)*kvw], hd, s.pos+t)
	}
	o := ws.m2[:n*qw]
	clear(o)
	scale := float32(1 / math.Sqrt(float64(hd)))
	group := c.Heads / c.KVHeads
	for t := range n {
		p := s.pos + t
		first := max(0, p-W+1)
		m := p - first + 1
		row := W - 1 + first - s.pos // window row of position first
		sc := ws.scores[:m]
		for hh := range c.Heads {
			kv := row*kvw + hh/group*hd
			kernels.DotRows(sc, q[t*qw+hh*hd:t*qw+(hh+1)*hd], kc[kv:], kvw, scale)
			kernels.Softmax(sc)
			kernels.AxpyRows(o[t*qw+hh*hd:t*qw+(hh+1)*hd], sc, vc[kv:], kvw)
		}
	}
	slide(s.state.k[i], kc)
	slide(s.state.v[i], vc)
	ao := ws.m0[:n*hid]
	d.matMul(ao, L.o, o, n)
	addScaled(h, ao, L.attnScale)
}

// mlp adds layer i's SwiGLU feed-forward to h.
func (s *Stream) mlp(i int, h []float32, n int) {
	d, c, ws := s.d, &s.d.cfg, &s.ws
	L := &d.layers[i]
	hid, I := c.HiddenSize, c.IntermediateSize
	nrm := ws.m0[:n*hid]
	s.rmsNorm(nrm, h, L.postNorm, n)
	g, u := ws.m1[:n*I], ws.m2[:n*I]
	d.matMul(g, L.gate, nrm, n)
	d.matMul(u, L.up, nrm, n)
	for t := range n {
		kernels.SiLUMul(g[t*I:(t+1)*I], u[t*I:(t+1)*I])
	}
	dn := ws.m0[:n*hid]
	d.matMul(dn, L.down, g, n)
	addScaled(h, dn, L.mlpScale)
}
