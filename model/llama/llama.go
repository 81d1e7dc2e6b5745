// Package llama implements the Llama decoder (Llama 2 style, including
// llama2.c's TinyStories models): grouped-query attention with RoPE,
// SiLU-gated feed-forward, untied output head unless the file ties it.
package llama

import (
	"fmt"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// Tensor names in each format; %d is the layer.
var (
	nEmbed    = model.Names{GGUF: "token_embd.weight", HF: "model.embed_tokens.weight"}
	nOutNorm  = model.Names{GGUF: "output_norm.weight", HF: "model.norm.weight"}
	nOutput   = model.Names{GGUF: "output.weight", HF: "lm_head.weight"}
	nRopeFreq = model.Names{GGUF: "rope_freqs.weight"}
	nAttnNorm = model.Names{GGUF: "blk.%d.attn_norm.weight", HF: "model.layers.%d.input_layernorm.weight"}
	nQ        = model.Names{GGUF: "blk.%d.attn_q.weight", HF: "model.layers.%d.self_attn.q_proj.weight"}
	nK        = model.Names{GGUF: "blk.%d.attn_k.weight", HF: "model.layers.%d.self_attn.k_proj.weight"}
	nV        = model.Names{GGUF: "blk.%d.attn_v.weight", HF: "model.layers.%d.self_attn.v_proj.weight"}
	nAttnOut  = model.Names{GGUF: "blk.%d.attn_output.weight", HF: "model.layers.%d.self_attn.o_proj.weight"}
	nFFNNorm  = model.Names{GGUF: "blk.%d.ffn_norm.weight", HF: "model.layers.%d.post_attention_layernorm.weight"}
	nFFNGate  = model.Names{GGUF: "blk.%d.ffn_gate.weight", HF: "model.layers.%d.mlp.gate_proj.weight"}
	nFFNUp    = model.Names{GGUF: "blk.%d.ffn_up.weight", HF: "model.layers.%d.mlp.up_proj.weight"}
	nFFNDown  = model.Names{GGUF: "blk.%d.ffn_down.weight", HF: "model.layers.%d.mlp.down_proj.weight"}
)

type layer struct {
	attnNorm, ffnNorm       []float32
	wq, wk, wv, wo          *tensor.Matrix
	ffnGate, ffnUp, ffnDown *tensor.Matrix
}

// Model is a loaded Llama.
type Model struct {
	cfg           model.Config
	embed, output *tensor.Matrix
	outNorm       []float32
	layers        []layer
	rope          *kernels.RoPETable
	attn          model.Attention
	weightBytes   int64 // read per token
	heldBytes     int64 // held in memory
}

// Config reads the hyper-parameters. GGUF files store Q and K permuted
// for interleaved-pair RoPE; Hugging Face checkpoints rotate halves (NeoX),
// which is the same computation on unpermuted weights.
func Config(s *model.Source) (*model.Config, error) {
	c, err := s.Common()
	if err != nil {
		return nil, err
	}
	c.Rope = model.RopeInterleaved
	if s.Format == model.HF {
		c.Rope = model.RopeNeoX
		if _, ok := s.HFConfig["rope_scaling"].(map[string]any); ok {
			return nil, fmt.Errorf("%s/config.json: rope_scaling is not supported yet", s.Path)
		}
		tied, ok := s.HFBool("tie_word_embeddings")
		c.Tied = tied || !ok && !s.Has(nOutput, 0)
	} else {
		if s.Has(nRopeFreq, 0) {
			return nil, fmt.Errorf("%s: rope_freqs.weight (Llama 3 RoPE scaling) is not supported yet", s.Path)
		}
		c.Tied = !s.Has(nOutput, 0)
	}
	theta, ok := s.Float(model.Param{GGUF: "rope.freq_base", HF: "rope_theta"})
	if !ok {
		theta = 10000
	}
	rot, ok := s.Int(model.Param{GGUF: "rope.dimension_count"})
	if !ok {
		rot = c.HeadDim
	}
	c.LayerSpecs = make([]model.LayerSpec, c.Layers)
	for i := range c.LayerSpecs {
		c.LayerSpecs[i] = model.LayerSpec{RopeDims: rot, RopeTheta: theta}
	}
	return c, c.Validate(s.Path)
}

// Load maps the weights of a Llama model.
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
	qd, kvd := c.QDim(), c.KVDim()
	for i := 0; i < c.Layers; i++ {
		m.layers = append(m.layers, layer{
			attnNorm: w.Vector(nAttnNorm, i, c.Hidden),
			wq:       w.Matrix(nQ, i, qd, c.Hidden),
			wk:       w.Matrix(nK, i, kvd, c.Hidden),
			wv:       w.Matrix(nV, i, kvd, c.Hidden),
			wo:       w.Matrix(nAttnOut, i, c.Hidden, qd),
			ffnNorm:  w.Vector(nFFNNorm, i, c.Hidden),
			ffnGate:  w.Matrix(nFFNGate, i, c.FFN, c.Hidden),
			ffnUp:    w.Matrix(nFFNUp, i, c.FFN, c.Hidden),
			ffnDown:  w.Matrix(nFFNDown, i, c.Hidden, c.FFN),
		})
	}
	if w.Err != nil {
		return nil, w.Err
	}
	m.rope = kernels.NewRoPETable(c.LayerSpecs[0].RopeDims, c.LayerSpecs[0].RopeTheta)
	m.weightBytes, m.heldBytes = w.Read, w.Bytes
	return m, nil
}

// Config returns the hyper-parameters.
func (m *Model) Config() *model.Config { return &m.cfg }

// NewCache returns an empty cache.
func (m *Model) NewCache() *kv.Cache { return m.cfg.NewCache() }

// WeightBytes is the size of the weights read per token.
func (m *Model) WeightBytes() int64 { return m.weightBytes }

// HeldBytes is the size of the weights held.
func (m *Model) HeldBytes() int64 { return m.heldBytes }

func (m *Model) applyRope(head []float32, pos int) {
	if m.cfg.Rope == model.RopeInterleaved {
		m.rope.Interleaved(head, pos)
	} else {
		m.rope.NeoX(head, pos)
	}
}

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

	bufs, free := model.TakeScratch(n*d, n*d, n*qd, n*kvd, n*kvd, n*qd, n*c.FFN, n*c.FFN)
	defer free()
	x, h, q, k, v := bufs[0], bufs[1], bufs[2], bufs[3], bufs[4] // x: the residual stream
	att, up, act := bufs[5], bufs[6], bufs[7]

	model.Embed(x, m.embed, b.Tokens)
	for li := range m.layers {
		l := &m.layers[li]

		// Attention block.
		model.NormLinears(h, x, l.attnNorm, c.Eps, n, []*tensor.Matrix{l.wq, l.wk, l.wv}, q, k, v)
		model.EachRow(n, qd+kvd, func(t int) {
			qt, kt := q[t*qd:(t+1)*qd], k[t*kvd:(t+1)*kvd]
			for j := 0; j < c.Heads; j++ {
				m.applyRope(qt[j*hd:(j+1)*hd], b.Pos[t])
			}
			for j := 0; j < c.KVHeads; j++ {
				m.applyRope(kt[j*hd:(j+1)*hd], b.Pos[t])
			}
		})
		m.attn.AttendAppend(b, li, 0, q, k, v, att)
		model.Linear(h, l.wo, att, n)

		// x += h (in GatedFFN), then the feed-forward block: down(silu(gate h2) * up h2).
		model.GatedFFN(x, h, act, up, n, l.ffnNorm, c.Eps, l.ffnGate, l.ffnUp, l.ffnDown, kernels.SiLUMul)
	}

	// Logits (or hidden states) only for the rows that need them.
	return b.Head(x, d, m.outNorm, c.Eps, m.output, c.Vocab), nil
}
