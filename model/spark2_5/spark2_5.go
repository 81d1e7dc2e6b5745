// Package spark2_5 implements Spark-X2.5 (model_type spark2_5): three
// sliding-window layers per full layer, RoPE theta and rotary width per
// layer type, a head-wise sigmoid gate on the attention output, a fused
// QKV projection, erf GELU and tied embeddings. Semantics follow the
// Hugging Face reference; see docs/spark2_5.md in the shared folder.
package spark2_5

import (
	"fmt"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// Tensor names in each format; %d is the layer.
var (
	nEmbed    = model.Names{GGUF: "token_embd.weight", HF: "model.embedding.weight"}
	nOutNorm  = model.Names{GGUF: "output_norm.weight", HF: "model.norm.weight"}
	nOutput   = model.Names{GGUF: "output.weight"} // tied when absent; HF lm_head is ignored (always tied)
	nAttnNorm = model.Names{GGUF: "blk.%d.attn_norm.weight", HF: "model.layers.%d.input_layernorm.weight"}
	nQKV      = model.Names{GGUF: "blk.%d.attn_qkv.weight", HF: "model.layers.%d.self_attn.q_k_v_proj.weight"}
	nQ        = model.Names{GGUF: "blk.%d.attn_q.weight"}
	nK        = model.Names{GGUF: "blk.%d.attn_k.weight"}
	nV        = model.Names{GGUF: "blk.%d.attn_v.weight"}
	nGate     = model.Names{GGUF: "blk.%d.attn_gate.weight", HF: "model.layers.%d.self_attn.g_proj.weight"}
	nAttnOut  = model.Names{GGUF: "blk.%d.attn_output.weight", HF: "model.layers.%d.self_attn.out_proj.weight"}
	nFFNNorm  = model.Names{GGUF: "blk.%d.ffn_norm.weight", HF: "model.layers.%d.post_attention_layernorm.weight"}
	nFFNGate  = model.Names{GGUF: "blk.%d.ffn_gate.weight", HF: "model.layers.%d.mlp.gate_proj.weight"}
	nFFNUp    = model.Names{GGUF: "blk.%d.ffn_up.weight", HF: "model.layers.%d.mlp.up_proj.weight"}
	nFFNDown  = model.Names{GGUF: "blk.%d.ffn_down.weight", HF: "model.layers.%d.mlp.down_proj.weight"}
)

type layer struct {
	attnNorm, ffnNorm       []float32
	wq, wk, wv, wg, wo      *tensor.Matrix // wq, wk, wv nil when fused
	wqkv                    *tensor.Matrix // the fused projection, when the file has one
	ffnGate, ffnUp, ffnDown *tensor.Matrix
	rope                    *kernels.RoPETable
	window                  int // sliding window, 0 on full layers
}

// Model is a loaded Spark-X2.5.
type Model struct {
	cfg           model.Config
	embed, output *tensor.Matrix
	outNorm       []float32
	layers        []layer
	attn          model.Attention
	weightBytes   int64 // read per token
	heldBytes     int64 // held in memory
}

// Config reads the hyper-parameters.
func Config(s *model.Source) (*model.Config, error) {
	c, err := s.Common()
	if err != nil {
		return nil, err
	}
	c.Rope = model.RopeNeoX
	c.Tied = !s.Has(nOutput, 0)
	c.SlidingWindow, err = s.MustInt(model.Param{GGUF: "attention.sliding_window", HF: "sliding_window"})
	if err != nil {
		return nil, err
	}
	sliding := make([]bool, c.Layers)
	var fullRot, swaRot int
	var fullTheta, swaTheta float64
	if s.Format == model.GGUF {
		pat, ok := s.GGUF.Bools(c.Arch + ".attention.sliding_window_pattern")
		if !ok || len(pat) != c.Layers {
			return nil, fmt.Errorf("%s: %s.attention.sliding_window_pattern must be %d bools", s.Path, c.Arch, c.Layers)
		}
		copy(sliding, pat)
		if fullTheta, err = s.MustFloat(model.Param{GGUF: "rope.freq_base"}); err != nil {
			return nil, err
		}
		if swaTheta, err = s.MustFloat(model.Param{GGUF: "rope.freq_base_swa"}); err != nil {
			return nil, err
		}
		if fullRot, err = s.MustInt(model.Param{GGUF: "rope.dimension_count"}); err != nil {
			return nil, err
		}
		if swaRot, err = s.MustInt(model.Param{GGUF: "rope.dimension_count_swa"}); err != nil {
			return nil, err
		}
	} else {
		types, ok := s.HFStrings("layer_types")
		if !ok || len(types) != c.Layers {
			return nil, fmt.Errorf("%s/config.json: layer_types must list %d layer types", s.Path, c.Layers)
		}
		for i, t := range types {
			switch t {
			case "sliding_attention":
				sliding[i] = true
			case "full_attention":
			default:
				return nil, fmt.Errorf("%s/config.json: layer_types[%d] = %q (want sliding_attention or full_attention)", s.Path, i, t)
			}
		}
		if g, ok := s.HFBool("headwise_attn_output_gate"); !ok || !g {
			return nil, fmt.Errorf("%s/config.json: headwise_attn_output_gate must be true", s.Path)
		}
		if m, ok := s.HFString("gate_attn_act_mode"); ok && m != "sigmoid" {
			return nil, fmt.Errorf("%s/config.json: gate_attn_act_mode %q is not supported (only sigmoid)", s.Path, m)
		}
		if a, ok := s.HFString("hidden_act"); ok && a != "gelu" {
			return nil, fmt.Errorf("%s/config.json: hidden_act %q is not supported (spark2_5 uses erf gelu)", s.Path, a)
		}
		rot := func(kind string) (int, float64, error) {
			f, err := s.MustFloat(model.Param{HF: "rope_parameters." + kind + ".partial_rotary_factor"})
			if err != nil {
				return 0, 0, err
			}
			th, err := s.MustFloat(model.Param{HF: "rope_parameters." + kind + ".rope_theta"})
			return int(f * float64(c.HeadDim)), th, err
		}
		if fullRot, fullTheta, err = rot("full_attention"); err != nil {
			return nil, err
		}
		if swaRot, swaTheta, err = rot("sliding_attention"); err != nil {
			return nil, err
		}
	}
	c.LayerSpecs = make([]model.LayerSpec, c.Layers)
	for i := range c.LayerSpecs {
		c.LayerSpecs[i] = model.LayerSpec{Sliding: false, RopeDims: fullRot, RopeTheta: fullTheta}
		if sliding[i] {
			c.LayerSpecs[i] = model.LayerSpec{Sliding: true, RopeDims: swaRot, RopeTheta: swaTheta}
		}
	}
	return c, c.Validate(s.Path)
}

// Load maps the weights of a Spark-X2.5 model. A fused QKV projection
// stays one matrix (its output rows are split after each product).
func Load(s *model.Source) (*Model, error) {
	c, err := Config(s)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: *c, attn: model.Attention{Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Scale: model.InvSqrt(c.HeadDim)}}
	w := &model.Loader{Source: s, Layers: c.Layers, Tied: c.Tied}
	m.embed = w.Matrix(nEmbed, 0, c.Vocab, c.Hidden)
	m.outNorm = w.Vector(nOutNorm, 0, c.Hidden)
	m.output = m.embed
	if !c.Tied {
		m.output = w.Matrix(nOutput, 0, c.Vocab, c.Hidden)
	}
	ropes := map[model.LayerSpec]*kernels.RoPETable{}
	qd, kvd := c.QDim(), c.KVDim()
	for i := 0; i < c.Layers; i++ {
		var l layer
		l.attnNorm = w.Vector(nAttnNorm, i, c.Hidden)
		if s.Has(nQKV, i) {
			l.wqkv = w.Matrix(nQKV, i, qd+2*kvd, c.Hidden)
		} else {
			l.wq = w.Matrix(nQ, i, qd, c.Hidden)
			l.wk = w.Matrix(nK, i, kvd, c.Hidden)
			l.wv = w.Matrix(nV, i, kvd, c.Hidden)
		}
		l.wg = w.Matrix(nGate, i, c.Heads, c.Hidden)
		l.wo = w.Matrix(nAttnOut, i, c.Hidden, qd)
		l.ffnNorm = w.Vector(nFFNNorm, i, c.Hidden)
		l.ffnGate = w.Matrix(nFFNGate, i, c.FFN, c.Hidden)
		l.ffnUp = w.Matrix(nFFNUp, i, c.FFN, c.Hidden)
		l.ffnDown = w.Matrix(nFFNDown, i, c.Hidden, c.FFN)
		spec := c.LayerSpecs[i]
		if ropes[spec] == nil {
			ropes[spec] = kernels.NewRoPETable(spec.RopeDims, spec.RopeTheta)
		}
		l.rope = ropes[spec]
		if spec.Sliding {
			l.window = c.SlidingWindow
		}
		m.layers = append(m.layers, l)
	}
	if w.Err != nil {
		return nil, w.Err
	}
	m.weightBytes, m.heldBytes = w.Read, w.Bytes
	return m, nil
}

// Config returns the hyper-parameters.
func (m *Model) Config() *model.Config { return &m.cfg }

// NewCache returns an empty cache: rings for sliding layers.
func (m *Model) NewCache() *kv.Cache { return m.cfg.NewCache() }

// WeightBytes is the size of the weights read per token.
func (m *Model) WeightBytes() int64 { return m.weightBytes }

// HeldBytes is the size of the weights held.
func (m *Model) HeldBytes() int64 { return m.heldBytes }

// Forward runs one sequence's tokens; see model.Model.
func (m *Model) Forward(cache *kv.Cache, tokens []int, all bool) ([]float32, error) {
	return model.Forward(m, cache, tokens, all)
}

// ForwardBatch runs one step for several sequences; see model.Model.
func (m *Model) ForwardBatch(seqs []model.Seq) ([][]float32, error) {
	c := &m.cfg
	b, err := c.NewBatch(seqs)
	if err != nil {
		return nil, err
	}
	n, d, qd, kvd, hd := len(b.Tokens), c.Hidden, c.QDim(), c.KVDim(), c.HeadDim

	bufs, free := model.TakeScratch(n*d, n*d, n*qd, n*kvd, n*kvd, n*c.Heads, n*(qd+2*kvd), n*qd, n*c.FFN, n*c.FFN)
	defer free()
	x, h, q, k, v := bufs[0], bufs[1], bufs[2], bufs[3], bufs[4] // x: the residual stream
	g, qkv, att, up, act := bufs[5], bufs[6], bufs[7], bufs[8], bufs[9]

	model.Embed(x, m.embed, b.Tokens)
	for li := range m.layers {
		l := &m.layers[li]

		// Attention block.
		if l.wqkv != nil {
			// One pass over the fused weight (one fan-out), then the rows
			// are split into q, k and v.
			model.NormLinears(h, x, l.attnNorm, c.Eps, n, []*tensor.Matrix{l.wqkv, l.wg}, qkv, g)
			w := qd + 2*kvd
			for t := 0; t < n; t++ {
				copy(q[t*qd:(t+1)*qd], qkv[t*w:t*w+qd])
				copy(k[t*kvd:(t+1)*kvd], qkv[t*w+qd:t*w+qd+kvd])
				copy(v[t*kvd:(t+1)*kvd], qkv[t*w+qd+kvd:(t+1)*w])
			}
		} else {
			model.NormLinears(h, x, l.attnNorm, c.Eps, n, []*tensor.Matrix{l.wq, l.wk, l.wv, l.wg}, q, k, v, g)
		}
		model.EachRow(n, qd+kvd, func(t int) {
			qt, kt := q[t*qd:(t+1)*qd], k[t*kvd:(t+1)*kvd]
			l.rope.NeoXHeads(qt, hd, b.Pos[t])
			l.rope.NeoXHeads(kt, hd, b.Pos[t])
		})
		m.attn.AttendAppend(b, li, l.window, q, k, v, att)
		// Head-wise sigmoid gate, before the output projection.
		kernels.Sigmoid(g)
		for t := 0; t < n; t++ {
			for j := 0; j < c.Heads; j++ {
				kernels.Scale(att[t*qd+j*hd:t*qd+(j+1)*hd], g[t*c.Heads+j])
			}
		}
		model.Linear(h, l.wo, att, n)

		// x += h (in GatedFFN), then the feed-forward block: down(gelu_erf(gate h2) * up h2).
		model.GatedFFN(x, h, act, up, n, l.ffnNorm, c.Eps, l.ffnGate, l.ffnUp, l.ffnDown, kernels.GELUErfMul)
	}

	// Logits (or hidden states) only for the rows that need them.
	return b.Head(x, d, m.outNorm, c.Eps, m.output, c.Vocab), nil
}
