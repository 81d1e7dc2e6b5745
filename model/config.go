package model

import (
	"fmt"
	"strings"

	"github.com/siskin-ml/siskin/kv"
)

// RopeStyle is how RoPE pairs dimensions.
type RopeStyle int

// RoPE styles.
const (
	RopeNeoX        RopeStyle = iota // pairs (i, i+rot/2)
	RopeInterleaved                  // pairs (2i, 2i+1)
)

func (r RopeStyle) String() string {
	if r == RopeNeoX {
		return "neox"
	}
	return "interleaved"
}

// LayerSpec is what differs between layers.
type LayerSpec struct {
	Sliding   bool    // sliding-window attention
	RopeDims  int     // rotated dims per head
	RopeTheta float64 // RoPE base
}

// Config holds a decoder's hyper-parameters, whatever format they came from.
type Config struct {
	Arch          string
	Vocab         int
	Hidden        int
	Layers        int
	Heads         int
	KVHeads       int
	HeadDim       int
	FFN           int
	Eps           float32
	ContextLength int // trained context (max_position_embeddings)
	SlidingWindow int // 0 if no layer slides
	Rope          RopeStyle
	Tied          bool // output head shares the embedding matrix
	LayerSpecs    []LayerSpec
	// KVType is the element type of the caches NewCache makes: f16 for
	// a model read from a file (Common), as llama.cpp's default; set it
	// before making caches (tests against float32 goldens pin F32).
	KVType kv.Type
}

// QDim is the width of all query heads together.
func (c *Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is the width of all key (or value) heads together.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// Validate checks the numbers fit together so the forward pass cannot index
// out of range.
func (c *Config) Validate(path string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"vocab size", c.Vocab}, {"hidden size", c.Hidden}, {"layer count", c.Layers}, {"head count", c.Heads},
		{"kv head count", c.KVHeads}, {"head dim", c.HeadDim}, {"feed-forward size", c.FFN}} {
		if p.v <= 0 || p.v > 1<<24 {
			return bad("%s %d is out of range", p.name, p.v)
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return bad("head count %d is not a multiple of kv head count %d", c.Heads, c.KVHeads)
	}
	if len(c.LayerSpecs) != c.Layers {
		return bad("%d layer specs for %d layers", len(c.LayerSpecs), c.Layers)
	}
	for i, l := range c.LayerSpecs {
		if l.RopeDims < 0 || l.RopeDims > c.HeadDim || l.RopeDims%2 != 0 {
			return bad("layer %d: rotary dims %d must be even and at most head dim %d", i, l.RopeDims, c.HeadDim)
		}
		if l.RopeTheta <= 0 {
			return bad("layer %d: rope theta %g must be positive", i, l.RopeTheta)
		}
		if l.Sliding && c.SlidingWindow <= 0 {
			return bad("layer %d slides but the sliding window is %d", i, c.SlidingWindow)
		}
	}
	if !(c.Eps > 0) {
		return bad("norm epsilon %g must be positive", c.Eps)
	}
	return nil
}

// Param names a hyper-parameter in each format. The GGUF key is relative to
// the architecture ("block_count" means "<arch>.block_count") unless it
// starts with "general." or "tokenizer."; the HF key may be a dotted path
// into config.json.
type Param struct{ GGUF, HF string }

func (s *Source) paramKey(p Param) string {
	if s.Format == HF {
		return p.HF
	}
	if strings.HasPrefix(p.GGUF, "general.") || strings.HasPrefix(p.GGUF, "tokenizer.") {
		return p.GGUF
	}
	return s.Arch() + "." + p.GGUF
}

func (s *Source) hfValue(path string) (any, bool) {
	var cur any = s.HFConfig
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok || cur == nil {
			return nil, false
		}
	}
	return cur, true
}

func (s *Source) where() string {
	if s.Format == HF {
		return s.Path + "/config.json"
	}
	return s.Path
}

// Float reads a numeric hyper-parameter.
func (s *Source) Float(p Param) (float64, bool) {
	if p.GGUF == "" && s.Format == GGUF || p.HF == "" && s.Format == HF {
		return 0, false
	}
	if s.Format == GGUF {
		return s.GGUF.Float(s.paramKey(p))
	}
	v, ok := s.hfValue(p.HF)
	f, ok2 := v.(float64)
	return f, ok && ok2
}

// Int reads an integer hyper-parameter.
func (s *Source) Int(p Param) (int, bool) {
	f, ok := s.Float(p)
	if !ok || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// MustInt reads an integer hyper-parameter, returning an error naming the
// key when it is missing.
func (s *Source) MustInt(p Param) (int, error) {
	v, ok := s.Int(p)
	if !ok {
		return 0, fmt.Errorf("%s: integer %s is missing or invalid", s.where(), s.paramKey(p))
	}
	return v, nil
}

// MustFloat reads a numeric hyper-parameter, returning an error naming
// the key when it is missing.
func (s *Source) MustFloat(p Param) (float64, error) {
	v, ok := s.Float(p)
	if !ok {
		return 0, fmt.Errorf("%s: number %s is missing or invalid", s.where(), s.paramKey(p))
	}
	return v, nil
}

// HFBool reads a boolean from config.json.
func (s *Source) HFBool(path string) (bool, bool) {
	v, ok := s.hfValue(path)
	b, ok2 := v.(bool)
	return b, ok && ok2
}

// HFString reads a string from config.json.
func (s *Source) HFString(path string) (string, bool) {
	v, ok := s.hfValue(path)
	str, ok2 := v.(string)
	return str, ok && ok2
}

// HFStrings reads an array of strings from config.json.
func (s *Source) HFStrings(path string) ([]string, bool) {
	v, ok := s.hfValue(path)
	arr, ok2 := v.([]any)
	if !ok || !ok2 {
		return nil, false
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		if out[i], ok = e.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// Common reads the hyper-parameters every decoder here shares. Each
// architecture then fills LayerSpecs and its own specifics.
func (s *Source) Common() (*Config, error) {
	c := &Config{Arch: s.Arch(), KVType: kv.F16}
	var err error
	ints := []struct {
		dst *int
		p   Param
	}{
		{&c.Hidden, Param{"embedding_length", "hidden_size"}},
		{&c.Layers, Param{"block_count", "num_hidden_layers"}},
		{&c.Heads, Param{"attention.head_count", "num_attention_heads"}},
		{&c.FFN, Param{"feed_forward_length", "intermediate_size"}},
	}
	for _, e := range ints {
		if *e.dst, err = s.MustInt(e.p); err != nil {
			return nil, err
		}
	}
	var ok bool
	if c.KVHeads, ok = s.Int(Param{"attention.head_count_kv", "num_key_value_heads"}); !ok {
		c.KVHeads = c.Heads
	}
	if c.HeadDim, ok = s.Int(Param{"attention.key_length", "head_dim"}); !ok {
		if c.Heads <= 0 || c.Hidden%c.Heads != 0 {
			return nil, fmt.Errorf("%s: head count %d does not divide hidden size %d", s.where(), c.Heads, c.Hidden)
		}
		c.HeadDim = c.Hidden / c.Heads
	}
	if vd, ok := s.Int(Param{"attention.value_length", ""}); ok && vd != c.HeadDim {
		return nil, fmt.Errorf("%s: value head dim %d differs from key head dim %d (not supported)", s.where(), vd, c.HeadDim)
	}
	eps, err := s.MustFloat(Param{"attention.layer_norm_rms_epsilon", "rms_norm_eps"})
	if err != nil {
		return nil, err
	}
	c.Eps = float32(eps)
	c.ContextLength, _ = s.Int(Param{"context_length", "max_position_embeddings"})
	// The vocabulary size comes from the embedding matrix where the
	// metadata is silent.
	if c.Vocab, ok = s.Int(Param{"vocab_size", "vocab_size"}); !ok && s.GGUF != nil {
		if toks, ok := s.GGUF.Strings("tokenizer.ggml.tokens"); ok {
			c.Vocab = len(toks)
		}
	}
	return c, nil
}

// KVBytes is the key/value cache size for a sequence of ctx positions
// with KVType entries: full layers hold every position, sliding layers at
// most the window.
func (c *Config) KVBytes(ctx int) int64 {
	var total int64
	for _, l := range c.LayerSpecs {
		n := ctx
		if l.Sliding && c.SlidingWindow < n {
			n = c.SlidingWindow
		}
		total += int64(n) * 2 * int64(c.KVType.RowBytes(c.KVDim()))
	}
	return total
}
