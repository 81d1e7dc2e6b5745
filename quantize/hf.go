package quantize

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// Hugging Face to GGUF tensor names, as llama.cpp's convert_hf_to_gguf.py
// maps them (the model packages' name tables hold the same pairs).
var hfGlobalNames = map[string]map[string]string{
	"llama":    {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"},
	"qwen3":    {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"},
	"spark2_5": {"model.embedding.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"},
}

var hfLayerCommon = map[string]string{
	"input_layernorm.weight":          "attn_norm.weight",
	"post_attention_layernorm.weight": "ffn_norm.weight",
	"mlp.gate_proj.weight":            "ffn_gate.weight",
	"mlp.up_proj.weight":              "ffn_up.weight",
	"mlp.down_proj.weight":            "ffn_down.weight",
}

var hfLayerNames = map[string]map[string]string{
	"llama": {
		"self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
		"self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
	},
	"qwen3": {
		"self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
		"self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
		"self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
	},
	"spark2_5": {
		"self_attn.q_k_v_proj.weight": "attn_qkv.weight", "self_attn.g_proj.weight": "attn_gate.weight",
		"self_attn.out_proj.weight": "attn_output.weight",
	},
}

// hfName maps a checkpoint tensor name to its GGUF name; skip reports
// tensors that have no place in the GGUF file.
func hfName(arch, name string, tied bool) (gguf string, skip bool, err error) {
	if strings.HasSuffix(name, "rotary_emb.inv_freq") {
		return "", true, nil // recomputed from the RoPE parameters
	}
	if name == "lm_head.weight" && (tied || arch == "spark2_5") {
		return "", true, nil // Spark's head is always the embedding
	}
	if g, ok := hfGlobalNames[arch][name]; ok {
		return g, false, nil
	}
	if rest, ok := strings.CutPrefix(name, "model.layers."); ok {
		if i := strings.IndexByte(rest, '.'); i > 0 {
			if layer, err := strconv.Atoi(rest[:i]); err == nil && layer >= 0 {
				suffix := rest[i+1:]
				g, ok := hfLayerNames[arch][suffix]
				if !ok {
					g, ok = hfLayerCommon[suffix]
				}
				if ok {
					return fmt.Sprintf("blk.%d.%s", layer, g), false, nil
				}
			}
		}
	}
	return "", false, fmt.Errorf("tensor %s has no GGUF name for architecture %s", name, arch)
}

// hfConfig reads config.json values with the file named in errors.
type hfConfig struct {
	path string
	m    map[string]any
}

func (c hfConfig) num(key string) (float64, bool) {
	var cur any = c.m
	for _, part := range strings.Split(key, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		cur = obj[part]
	}
	f, ok := cur.(float64)
	return f, ok
}

func (c hfConfig) mustInt(key string) (int, error) {
	f, ok := c.num(key)
	if !ok || f != float64(int(f)) || f < 0 {
		return 0, fmt.Errorf("%s: integer %s is missing or invalid", c.path, key)
	}
	return int(f), nil
}

func (c hfConfig) mustNum(key string) (float64, error) {
	f, ok := c.num(key)
	if !ok {
		return 0, fmt.Errorf("%s: number %s is missing or invalid", c.path, key)
	}
	return f, nil
}

// hfInput maps a Hugging Face folder to GGUF tensors and metadata: the
// hyper-parameters under llama.cpp's keys for the architecture, and the
// tokenizer as tokenizer.ggml.* gpt2 keys.
func hfInput(src *model.Source) ([]inTensor, []gguf.KV, error) {
	arch := src.Arch()
	if _, ok := hfLayerNames[arch]; !ok {
		return nil, nil, fmt.Errorf("%s/config.json: model_type %q is not supported (supported: llama, qwen3, spark2_5)", src.Path, arch)
	}
	cfg := hfConfig{filepath.Join(src.Path, "config.json"), src.HFConfig}
	kvs, hp, err := hfMetadata(src.Path, arch, cfg)
	if err != nil {
		return nil, nil, err
	}
	tied, tiedSet := src.HFConfig["tie_word_embeddings"].(bool)
	if !tiedSet {
		_, hasHead := src.HF.Tensor("lm_head.weight")
		tied = !hasHead
	}
	var ins []inTensor
	for _, name := range src.HF.Names() {
		ti, _ := src.HF.Tensor(name)
		g, skip, err := hfName(arch, name, tied)
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
		// Llama GGUF files hold Q and K with each head's rows interleaved
		// for pairwise RoPE (llama.cpp's converter permutes them); Hugging
		// Face rotates halves. Qwen3 and Spark keep NeoX halves in GGUF.
		if arch == "llama" && len(ti.Shape) == 2 {
			switch {
			case strings.HasSuffix(g, ".attn_q.weight"):
				in.perm, err = ropePermutation(ti.Shape[0], hp.heads)
			case strings.HasSuffix(g, ".attn_k.weight"):
				in.perm, err = ropePermutation(ti.Shape[0], hp.kvHeads)
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

type hparams struct{ heads, kvHeads, layers int }

// hfMetadata builds general.*, <arch>.* and tokenizer.* entries in the
// order llama.cpp's converter writes them.
func hfMetadata(dir, arch string, cfg hfConfig) ([]gguf.KV, hparams, error) {
	var hp hparams
	var kvs []gguf.KV
	add := func(k string, v any) {
		t, _ := valueType(v)
		kvs = append(kvs, gguf.KV{Key: k, Type: t, Value: v})
	}
	ints := map[string]int{}
	for _, k := range []string{"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size"} {
		v, err := cfg.mustInt(k)
		if err != nil {
			return nil, hp, err
		}
		ints[k] = v
	}
	heads := ints["num_attention_heads"]
	kvHeads := heads
	if v, ok := cfg.num("num_key_value_heads"); ok {
		kvHeads = int(v)
	}
	headDim := 0
	if v, ok := cfg.num("head_dim"); ok {
		headDim = int(v)
	} else if heads > 0 {
		headDim = ints["hidden_size"] / heads
	}
	eps, err := cfg.mustNum("rms_norm_eps")
	if err != nil {
		return nil, hp, err
	}
	ctx := 0
	if v, ok := cfg.num("max_position_embeddings"); ok {
		ctx = int(v)
	}
	if rs, ok := cfg.m["rope_scaling"].(map[string]any); ok && len(rs) > 0 {
		return nil, hp, fmt.Errorf("%s: rope_scaling is not supported (siskin does not run scaled RoPE yet)", cfg.path)
	}
	hp = hparams{heads: heads, kvHeads: kvHeads, layers: ints["num_hidden_layers"]}

	add("general.architecture", arch)
	add("general.name", modelName(dir))
	a := arch + "."
	add(a+"context_length", uint32(ctx))
	add(a+"embedding_length", uint32(ints["hidden_size"]))
	add(a+"feed_forward_length", uint32(ints["intermediate_size"]))
	add(a+"block_count", uint32(hp.layers))
	add(a+"attention.head_count", uint32(heads))
	add(a+"attention.head_count_kv", uint32(kvHeads))
	add(a+"attention.key_length", uint32(headDim))
	add(a+"attention.value_length", uint32(headDim))
	add(a+"attention.layer_norm_rms_epsilon", float32(eps))
	add(a+"vocab_size", uint32(ints["vocab_size"]))
	if arch == "spark2_5" {
		rope := func(kind string) (float64, float64, error) {
			f, err := cfg.mustNum("rope_parameters." + kind + ".partial_rotary_factor")
			if err != nil {
				return 0, 0, err
			}
			th, err := cfg.mustNum("rope_parameters." + kind + ".rope_theta")
			return f, th, err
		}
		fullF, fullTheta, err := rope("full_attention")
		if err != nil {
			return nil, hp, err
		}
		swaF, swaTheta, err := rope("sliding_attention")
		if err != nil {
			return nil, hp, err
		}
		window, err := cfg.mustInt("sliding_window")
		if err != nil {
			return nil, hp, err
		}
		lt, _ := cfg.m["layer_types"].([]any)
		if len(lt) != hp.layers {
			return nil, hp, fmt.Errorf("%s: layer_types must list %d layer types", cfg.path, hp.layers)
		}
		pattern := make([]bool, hp.layers)
		for i, t := range lt {
			switch t {
			case "sliding_attention":
				pattern[i] = true
			case "full_attention":
			default:
				return nil, hp, fmt.Errorf("%s: layer_types[%d] = %v (want sliding_attention or full_attention)", cfg.path, i, t)
			}
		}
		add(a+"rope.freq_base", float32(fullTheta))
		add(a+"rope.freq_base_swa", float32(swaTheta))
		add(a+"rope.dimension_count", uint32(fullF*float64(headDim)))
		add(a+"rope.dimension_count_swa", uint32(swaF*float64(headDim)))
		add(a+"attention.sliding_window", uint32(window))
		add(a+"attention.sliding_window_pattern", pattern)
	} else {
		theta := 10000.0
		if arch == "qwen3" {
			theta = 1e6
		}
		if v, ok := cfg.num("rope_theta"); ok {
			theta = v
		}
		add(a+"rope.freq_base", float32(theta))
		add(a+"rope.dimension_count", uint32(headDim))
	}
	tok, err := hfTokenizer(dir, arch, ints["vocab_size"], cfg)
	if err != nil {
		return nil, hp, err
	}
	for _, kv := range tok {
		add(kv.Key, kv.Value)
	}
	return kvs, hp, nil
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

// archPre is the name llama.cpp uses for each family's own vocabulary,
// for pre-tokenizers not recognized above.
var archPre = map[string]string{"llama": "llama-bpe", "qwen3": "qwen2", "spark2_5": "spark2_5"}

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
func hfTokenizer(dir, arch string, vocabSize int, cfg hfConfig) ([]gguf.KV, error) {
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
	pre := archPre[arch]
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
			if v, ok := cfg.num(sp.cfgKey + "_token_id"); ok {
				id = int(v)
			} else if l, ok := cfg.m[sp.cfgKey+"_token_id"].([]any); ok && len(l) > 0 {
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
