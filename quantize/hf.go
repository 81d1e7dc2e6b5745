package quantize

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// inTensor is an input tensor under its GGUF name.
type inTensor struct {
	name string
	typ  tensor.Type
	dims []uint64 // GGML order
	data []byte
	// perm maps an output row to the input row it comes from (nil: same).
	perm func(row int) int
}

// hfNames maps a checkpoint's tensor names to their GGUF names, from the
// architecture's tensor list (the names its loader reads).
func hfNames(arch *model.Arch, c *model.Config) map[string]string {
	global, layer := arch.Tensors(c)
	m := map[string]string{}
	for _, t := range global {
		if t.HF != "" {
			m[t.HF] = t.GGUF
		}
	}
	for i := 0; i < c.Layers; i++ {
		for _, t := range layer {
			if t.HF != "" {
				m[fmt.Sprintf(t.HF, i)] = fmt.Sprintf(t.GGUF, i)
			}
		}
	}
	return m
}

// hfName maps a checkpoint tensor name to its GGUF name; skip reports
// tensors that have no place in the GGUF file.
func hfName(names map[string]string, arch, name string, tied bool) (gguf string, skip bool, err error) {
	if strings.HasSuffix(name, "rotary_emb.inv_freq") {
		return "", true, nil // recomputed from the RoPE parameters
	}
	if name == "lm_head.weight" && tied {
		return "", true, nil // the head is the embedding
	}
	if g, ok := names[name]; ok {
		return g, false, nil
	}
	return "", false, fmt.Errorf("tensor %s has no GGUF name for architecture %s", name, arch)
}

// hfInput maps a Hugging Face folder to GGUF tensors and metadata: the
// hyper-parameters the architecture reads, under llama.cpp's keys, and the
// tokenizer as tokenizer.ggml.* gpt2 keys.
func hfInput(src *model.Source, archs model.Archs) ([]inTensor, []gguf.KV, error) {
	arch, err := archs.LookupKind(src.Arch(), model.Text)
	if err != nil {
		return nil, nil, fmt.Errorf("%s/config.json: %w", src.Path, err)
	}
	if rs, ok := src.HFConfig["rope_scaling"].(map[string]any); ok && len(rs) > 0 {
		return nil, nil, fmt.Errorf("%s/config.json: rope_scaling is not supported (siskin does not run scaled RoPE yet)", src.Path)
	}
	c, err := arch.Config(src)
	if err != nil {
		return nil, nil, err
	}
	kvs := append([]gguf.KV{
		{Key: "general.architecture", Value: arch.Name},
		{Key: "general.name", Value: modelName(src.Path)},
	}, configKVs(c)...)
	tok, err := hfTokenizer(src.Path, arch.PreTokenizer, c.Vocab, src.HFConfig)
	if err != nil {
		return nil, nil, err
	}
	kvs = append(kvs, tok...)
	for i := range kvs {
		kvs[i].Type, _ = valueType(kvs[i].Value)
	}
	names := hfNames(arch, c)
	var ins []inTensor
	for _, name := range src.HF.Names() {
		ti, _ := src.HF.Tensor(name)
		g, skip, err := hfName(names, arch.Name, name, c.Tied)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", src.Path, err)
		}
		if skip {
			continue
		}
		dims := make([]uint64, len(ti.Shape))
		for i, d := range ti.Shape { // torch order is outermost first
			dims[len(dims)-1-i] = uint64(d)
		}
		in := inTensor{name: g, typ: ti.Type, dims: dims, data: ti.Data}
		if arch.GGUFPermutesQK && len(ti.Shape) == 2 {
			switch {
			case strings.HasSuffix(g, ".attn_q.weight"):
				in.perm, err = ropePermutation(ti.Shape[0], c.Heads)
			case strings.HasSuffix(g, ".attn_k.weight"):
				in.perm, err = ropePermutation(ti.Shape[0], c.KVHeads)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: tensor %s: %w", src.Path, name, err)
			}
		}
		ins = append(ins, in)
	}
	return ins, kvs, nil
}

// ropePermutation gives, for each row of a GGUF Llama Q or K projection,
// the Hugging Face row it comes from: within each head of d rows, GGUF row
// 2i+j is HF row j*d/2+i.
func ropePermutation(rows, heads int) (func(int) int, error) {
	if heads <= 0 || rows%(2*heads) != 0 {
		return nil, fmt.Errorf("%d rows do not split into %d heads of pairs", rows, heads)
	}
	d := rows / heads
	return func(r int) int {
		h, rem := r/d, r%d
		return h*d + (rem%2)*(d/2) + rem/2
	}, nil
}

// configKVs writes a Config's hyper-parameters under llama.cpp's
// <arch>.* keys, in the order its converter writes them. Sliding-window
// layers add the *_swa RoPE keys and the layer pattern.
func configKVs(c *model.Config) []gguf.KV {
	var kvs []gguf.KV
	add := func(k string, v any) {
		t, _ := valueType(v)
		kvs = append(kvs, gguf.KV{Key: c.Arch + "." + k, Type: t, Value: v})
	}
	add("context_length", uint32(c.ContextLength))
	add("embedding_length", uint32(c.Hidden))
	add("feed_forward_length", uint32(c.FFN))
	add("block_count", uint32(c.Layers))
	add("attention.head_count", uint32(c.Heads))
	add("attention.head_count_kv", uint32(c.KVHeads))
	add("attention.key_length", uint32(c.HeadDim))
	add("attention.value_length", uint32(c.HeadDim))
	add("attention.layer_norm_rms_epsilon", c.Eps)
	add("vocab_size", uint32(c.Vocab))
	full, swa := c.LayerSpecs[0], c.LayerSpecs[0]
	pattern := make([]bool, c.Layers)
	for i, l := range c.LayerSpecs {
		pattern[i] = l.Sliding
	}
	for i := len(c.LayerSpecs) - 1; i >= 0; i-- {
		if l := c.LayerSpecs[i]; l.Sliding {
			swa = l
		} else {
			full = l
		}
	}
	add("rope.freq_base", float32(full.RopeTheta))
	if c.SlidingWindow == 0 {
		add("rope.dimension_count", uint32(full.RopeDims))
		return kvs
	}
	add("rope.freq_base_swa", float32(swa.RopeTheta))
	add("rope.dimension_count", uint32(full.RopeDims))
	add("rope.dimension_count_swa", uint32(swa.RopeDims))
	add("attention.sliding_window", uint32(c.SlidingWindow))
	add("attention.sliding_window_pattern", pattern)
	return kvs
}

// modelName is the folder's name, or its parent's when the folder is only
// named after a dtype (models/foo/bf16).
func modelName(dir string) string {
	base := filepath.Base(filepath.Clean(dir))
	switch strings.ToLower(base) {
	case "bf16", "f16", "fp16", "f32", "fp32", "hf":
		if p := filepath.Base(filepath.Dir(filepath.Clean(dir))); p != "." && p != "/" {
			return p
		}
	}
	return base
}

// GGUF token types (llama.cpp's LLAMA_TOKEN_TYPE_*).
const (
	tokNormal      int32 = 1
	tokControl     int32 = 3
	tokUserDefined int32 = 4
	tokUnused      int32 = 5
)

// Pre-tokenizer regexes as tokenizer.json files spell them, and the
// tokenizer.ggml.pre names llama.cpp gives those vocabularies.
const hfGPT2Regex = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

var knownPres = []struct {
	name     string
	patterns []string
}{
	{"default", []string{`[\p{P}\$\+<=>\^~\|]+`, hfGPT2Regex, `\p{N}+`, `[0-9][0-9][0-9]`}},
	{"gpt-2", []string{hfGPT2Regex}},
	{"llama-bpe", []string{`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`}},
	{"qwen2", []string{`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`}},
}

type hfPreTok struct {
	Type          string            `json:"type"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Pattern       struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	UseRegex *bool `json:"use_regex"`
}

// splitPatterns lists a pre_tokenizer's split regexes in order; a
// ByteLevel step with use_regex adds GPT-2's.
func splitPatterns(raw json.RawMessage, out *[]string) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var p hfPreTok
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	switch p.Type {
	case "Sequence":
		for _, sub := range p.Pretokenizers {
			if err := splitPatterns(sub, out); err != nil {
				return err
			}
		}
	case "Split":
		if p.Pattern.Regex != nil {
			*out = append(*out, *p.Pattern.Regex)
		} else if p.Pattern.String != nil {
			*out = append(*out, "string:"+*p.Pattern.String)
		}
	case "ByteLevel":
		if p.UseRegex == nil || *p.UseRegex {
			*out = append(*out, hfGPT2Regex)
		}
	default:
		*out = append(*out, "type:"+p.Type)
	}
	return nil
}

type hfAddedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// tokenText reads a special-token entry of tokenizer_config.json: a string
// or an AddedToken object.
func tokenText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		s, _ := x["content"].(string)
		return s
	}
	return ""
}

// hfTokenizer turns tokenizer.json (byte-level BPE) and
// tokenizer_config.json into tokenizer.ggml.* entries, as llama.cpp's
// converter does for gpt2-style vocabularies: ids without a token become
// [PADn] (unused), added tokens are control (special) or user-defined.
func hfTokenizer(dir, familyPre string, vocabSize int, cfg map[string]any) ([]gguf.KV, error) {
	path := filepath.Join(dir, "tokenizer.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: the tokenizer is needed to write a GGUF: %w", dir, err)
	}
	var tj struct {
		AddedTokens  []hfAddedToken  `json:"added_tokens"`
		PreTokenizer json.RawMessage `json:"pre_tokenizer"`
		Model        struct {
			Type   string          `json:"type"`
			Vocab  map[string]int  `json:"vocab"`
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if tj.Model.Type != "BPE" {
		return nil, fmt.Errorf("%s: model type %q is not supported (only byte-level BPE)", path, tj.Model.Type)
	}
	var pats []string
	if err := splitPatterns(tj.PreTokenizer, &pats); err != nil {
		return nil, fmt.Errorf("%s: pre_tokenizer: %w", path, err)
	}
	pre := familyPre
	for _, k := range knownPres {
		if strings.Join(k.patterns, "\x00") == strings.Join(pats, "\x00") {
			pre = k.name
			break
		}
	}

	n := vocabSize
	for _, id := range tj.Model.Vocab {
		n = max(n, id+1)
	}
	for _, at := range tj.AddedTokens {
		n = max(n, at.ID+1)
	}
	tokens := make([]string, n)
	types := make([]int32, n)
	have := make([]bool, n)
	for s, id := range tj.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("%s: token %q has negative id %d", path, s, id)
		}
		tokens[id], types[id], have[id] = s, tokNormal, true
	}
	ids := map[string]int{}
	for s, id := range tj.Model.Vocab {
		ids[s] = id
	}
	for _, at := range tj.AddedTokens {
		if at.ID < 0 {
			return nil, fmt.Errorf("%s: added token %q has negative id %d", path, at.Content, at.ID)
		}
		tokens[at.ID], have[at.ID] = at.Content, true
		types[at.ID] = tokUserDefined
		if at.Special {
			types[at.ID] = tokControl
		}
		ids[at.Content] = at.ID
	}
	for i := range tokens {
		if !have[i] {
			tokens[i], types[i] = fmt.Sprintf("[PAD%d]", i), tokUnused
		}
	}
	var merges []string
	if len(tj.Model.Merges) > 0 {
		var asStrings []string
		if err := json.Unmarshal(tj.Model.Merges, &asStrings); err == nil {
			merges = asStrings
		} else {
			var pairs [][]string
			if err := json.Unmarshal(tj.Model.Merges, &pairs); err != nil {
				return nil, fmt.Errorf("%s: merges are neither strings nor pairs: %w", path, err)
			}
			merges = make([]string, len(pairs))
			for i, p := range pairs {
				if len(p) != 2 {
					return nil, fmt.Errorf("%s: merge %d has %d parts", path, i, len(p))
				}
				merges[i] = p[0] + " " + p[1]
			}
		}
	}

	kvs := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Value: pre},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.merges", Value: merges},
	}
	// Special ids: tokenizer_config.json names them; config.json's
	// *_token_id is the fallback.
	var tc map[string]any
	if raw, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		if err := json.Unmarshal(raw, &tc); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "tokenizer_config.json"), err)
		}
	}
	for _, sp := range []struct{ cfgKey, key string }{
		{"bos", "tokenizer.ggml.bos_token_id"},
		{"eos", "tokenizer.ggml.eos_token_id"},
		{"unk", "tokenizer.ggml.unknown_token_id"},
		{"pad", "tokenizer.ggml.padding_token_id"},
	} {
		id := -1
		if s := tokenText(tc[sp.cfgKey+"_token"]); s != "" {
			if v, ok := ids[s]; ok {
				id = v
			}
		}
		if id < 0 {
			if v, ok := cfg[sp.cfgKey+"_token_id"].(float64); ok {
				id = int(v)
			} else if l, ok := cfg[sp.cfgKey+"_token_id"].([]any); ok && len(l) > 0 {
				if f, ok := l[0].(float64); ok {
					id = int(f)
				}
			}
		}
		if id >= 0 && id < n {
			kvs = append(kvs, gguf.KV{Key: sp.key, Value: uint32(id)})
		}
	}
	// add_bos_token only when the config says (llama.cpp's default
	// depends on the vocabulary); Hugging Face tokenizers do not append
	// EOS unless told to.
	if b, ok := tc["add_bos_token"].(bool); ok {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: b})
	}
	addEOS, _ := tc["add_eos_token"].(bool)
	kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_eos_token", Value: addEOS})
	if s, ok := tc["chat_template"].(string); ok && s != "" {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template", Value: s})
	}
	return kvs, nil
}
