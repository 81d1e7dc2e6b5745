package qwen3

import (
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// Layer is one Qwen3 decoder layer's weights.
type Layer struct {
	attnNorm, qNorm, kNorm, ffnNorm []float32
	wq, wk, wv, wo                  *tensor.Matrix
	ffnGate, ffnUp, ffnDown         *tensor.Matrix
}

// Decoder is a stack of Qwen3 decoder layers, what runs between the
// embedding rows and the final norm. Qwen3 itself and models built on its
// layers (the Qwen3-TTS talker and code predictor) share it.
type Decoder struct {
	Cfg    *model.Config
	Layers []Layer
	Rope   *kernels.RoPETable
	Attn   model.Attention
}

// LoadDecoder maps c.Layers decoder layers whose Hugging Face names are
// prefix + "model.layers.N..." (prefix "" for Qwen3 itself); RoPE is
// NeoX over LayerSpecs[0]'s dims and base.
func LoadDecoder(w *model.Loader, c *model.Config, prefix string) *Decoder {
	d := &Decoder{Cfg: c, Attn: model.Attention{Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Scale: model.InvSqrt(c.HeadDim)}}
	name := func(n model.Names) model.Names { return model.Names{GGUF: n.GGUF, HF: prefix + n.HF} }
	qd, kvd := c.QDim(), c.KVDim()
	for i := 0; i < c.Layers; i++ {
		d.Layers = append(d.Layers, Layer{
			attnNorm: w.Vector(name(nAttnNorm), i, c.Hidden),
			wq:       w.Matrix(name(nQ), i, qd, c.Hidden),
			wk:       w.Matrix(name(nK), i, kvd, c.Hidden),
			wv:       w.Matrix(name(nV), i, kvd, c.Hidden),
			qNorm:    w.Vector(name(nQNorm), i, c.HeadDim),
			kNorm:    w.Vector(name(nKNorm), i, c.HeadDim),
			wo:       w.Matrix(name(nAttnOut), i, c.Hidden, qd),
			ffnNorm:  w.Vector(name(nFFNNorm), i, c.Hidden),
			ffnGate:  w.Matrix(name(nFFNGate), i, c.FFN, c.Hidden),
			ffnUp:    w.Matrix(name(nFFNUp), i, c.FFN, c.Hidden),
			ffnDown:  w.Matrix(name(nFFNDown), i, c.Hidden, c.FFN),
		})
	}
	if w.Err == nil {
		d.Rope = kernels.NewRoPETable(c.LayerSpecs[0].RopeDims, c.LayerSpecs[0].RopeTheta)
	}
	return d
}

// Norms are the layers' float32 norm vectors (for the memory ledger).
func (d *Decoder) Norms() [][]float32 {
	var vecs [][]float32
	for _, ly := range d.Layers {
		vecs = append(vecs, ly.attnNorm, ly.qNorm, ly.kNorm, ly.ffnNorm)
	}
	return vecs
}

// Run passes the residual stream x (one row of Hidden per row of b)
// through every layer in place, appending each layer's keys and values to
// the rows' caches. each, if not nil, sees x after every layer.
func (d *Decoder) Run(b *model.Batch, x []float32, each func(layer int, x []float32)) {
	c := d.Cfg
	n, dim, qd, kvd, hd := len(b.Tokens), c.Hidden, c.QDim(), c.KVDim(), c.HeadDim
	buf := model.GetScratch(n * (dim + 2*qd + 2*kvd + 2*c.FFN))
	defer model.PutScratch(buf)
	rest := *buf
	take := func(m int) []float32 {
		s := rest[:m:m]
		rest = rest[m:]
		return s
	}
	h, q, k, v := take(n*dim), take(n*qd), take(n*kvd), take(n*kvd)
	att, up, act := take(n*qd), take(n*c.FFN), take(n*c.FFN)
	for li := range d.Layers {
		l := &d.Layers[li]

		// Attention block: per-head RMSNorm on q and k, then RoPE.
		model.NormLinears(h, x, l.attnNorm, c.Eps, n, []*tensor.Matrix{l.wq, l.wk, l.wv}, q, k, v)
		model.EachRow(n, qd+kvd, func(t int) {
			qt, kt := q[t*qd:(t+1)*qd], k[t*kvd:(t+1)*kvd]
			for j := 0; j < qd; j += hd {
				kernels.RMSNorm(qt[j:j+hd], qt[j:j+hd], l.qNorm, c.Eps)
			}
			for j := 0; j < kvd; j += hd {
				kernels.RMSNorm(kt[j:j+hd], kt[j:j+hd], l.kNorm, c.Eps)
			}
			d.Rope.NeoXHeads(qt, hd, b.Pos[t])
			d.Rope.NeoXHeads(kt, hd, b.Pos[t])
		})
		d.Attn.AttendAppend(b, li, 0, q, k, v, att)
		model.Linear(h, l.wo, att, n)

		// x += h (in GatedFFN), then the feed-forward block: down(silu(gate h2) * up h2).
		model.GatedFFN(x, h, act, up, n, l.ffnNorm, c.Eps, l.ffnGate, l.ffnUp, l.ffnDown, kernels.SiLUMul)
		if each != nil {
			each(li, x)
		}
	}
}
