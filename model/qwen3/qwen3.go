// Package qwen3 implements the Qwen3 dense decoder: grouped-query
// attention with RMSNorm on each query and key head before NeoX RoPE,
// SiLU-gated feed-forward, tied or untied output head.
package qwen3

import (
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// Tensor names in each format; %d is the layer.
var (
	nEmbed    = model.Names{GGUF: "token_embd.weight", HF: "model.embed_tokens.weight"}
	nOutNorm  = model.Names{GGUF: "output_norm.weight", HF: "model.norm.weight"}
	nOutput   = model.Names{GGUF: "output.weight", HF: "lm_head.weight"}
	nAttnNorm = model.Names{GGUF: "blk.%d.attn_norm.weight", HF: "model.layers.%d.input_layernorm.weight"}
	nQ        = model.Names{GGUF: "blk.%d.attn_q.weight", HF: "model.layers.%d.self_attn.q_proj.weight"}
	nK        = model.Names{GGUF: "blk.%d.attn_k.weight", HF: "model.layers.%d.self_attn.k_proj.weight"}
	nV        = model.Names{GGUF: "blk.%d.attn_v.weight", HF: "model.layers.%d.self_attn.v_proj.weight"}
	nQNorm    = model.Names{GGUF: "blk.%d.attn_q_norm.weight", HF: "model.layers.%d.self_attn.q_norm.weight"}
	nKNorm    = model.Names{GGUF: "blk.%d.attn_k_norm.weight", HF: "model.layers.%d.self_attn.k_norm.weight"}
	nAttnOut  = model.Names{GGUF: "blk.%d.attn_output.weight", HF: "model.layers.%d.self_attn.o_proj.weight"}
	nFFNNorm  = model.Names{GGUF: "blk.%d.ffn_norm.weight", HF: "model.layers.%d.post_attention_layernorm.weight"}
	nFFNGate  = model.Names{GGUF: "blk.%d.ffn_gate.weight", HF: "model.layers.%d.mlp.gate_proj.weight"}
	nFFNUp    = model.Names{GGUF: "blk.%d.ffn_up.weight", HF: "model.layers.%d.mlp.up_proj.weight"}
	nFFNDown  = model.Names{GGUF: "blk.%d.ffn_down.weight", HF: "model.layers.%d.mlp.down_proj.weight"}
)

// Model is a loaded Qwen3.
type Model struct {
	cfg           model.Config
	embed, output *tensor.Matrix
	outNorm       []float32
	dec           *Decoder
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
	theta, ok := s.Float(model.Param{GGUF: "rope.freq_base", HF: "rope_theta"})
	if !ok {
		theta = 1e6
	}
	rot, ok := s.Int(model.Param{GGUF: "rope.dimension_count"})
	if !ok {
		rot = c.HeadDim
	}
	if s.Format == model.HF {
		tied, ok := s.HFBool("tie_word_embeddings")
		c.Tied = tied || !ok && !s.Has(nOutput, 0)
	} else {
		c.Tied = !s.Has(nOutput, 0)
	}
	c.LayerSpecs = make([]model.LayerSpec, c.Layers)
	for i := range c.LayerSpecs {
		c.LayerSpecs[i] = model.LayerSpec{RopeDims: rot, RopeTheta: theta}
	}
	return c, c.Validate(s.Path)
}

// Load maps the weights of a Qwen3 model.
func Load(s *model.Source) (*Model, error) {
	c, err := Config(s)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: *c}
	w := &model.Loader{Source: s, Layers: c.Layers, Tied: c.Tied}
	m.embed = w.Matrix(nEmbed, 0, c.Vocab, c.Hidden)
	m.outNorm = w.Vector(nOutNorm, 0, c.Hidden)
	m.output = m.embed
	if !c.Tied {
		m.output = w.Matrix(nOutput, 0, c.Vocab, c.Hidden)
	}
	m.dec = LoadDecoder(w, &m.cfg, "")
	if w.Err != nil {
		return nil, w.Err
	}
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
	n, d := len(b.Tokens), c.Hidden
	bufs, free := model.TakeScratch(n * d)
	defer free()
	x := bufs[0] // the residual stream
	model.Embed(x, m.embed, b.Tokens)
	m.dec.Run(b, x, nil)

	// Logits (or hidden states) only for the rows that need them.
	return b.Head(x, d, m.outNorm, c.Eps, m.output, c.Vocab), nil
}
