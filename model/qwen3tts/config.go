package qwen3tts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
)

// Config is what a Qwen3-TTS checkpoint's config.json and
// generation_config.json say (TS §1): the two decoders' shapes, the
// codec and text ids, speakers and languages, and the sampling defaults.
type Config struct {
	ModelType string // tts_model_type: custom_voice, base, voice_design
	ModelSize string // tts_model_size: 0b6, 1b7

	// Talker and Predictor are the decoder stacks' shapes (Vocab is the
	// codec vocabulary of each: 3072 and 2048 in the real models).
	Talker, Predictor model.Config
	TextVocab         int
	TextHidden        int
	CodeGroups        int // codes per frame (16)

	// Text-side special ids (text vocabulary).
	TTSPad, TTSBOS, TTSEOS int
	// Codec-side control ids (talker codec vocabulary).
	CodecPad, CodecBOS, CodecEOS                 int
	CodecThink, CodecNoThink, ThinkBOS, ThinkEOS int

	// Languages maps a language (and the dialect keys) to its codec id;
	// Speakers a speaker to its codec id; Dialects a speaker to the
	// dialect key that overrides Chinese and Auto ("" for none).
	Languages map[string]int
	Speakers  map[string]int
	Dialects  map[string]string

	Gen Generation
}

// Generation is generation_config.json: the official sampling defaults,
// which an explicit request setting overrides.
type Generation struct {
	DoSample          bool
	RepetitionPenalty float64
	Temperature       float64
	TopP              float64
	TopK              int
	SubDoSample       bool
	SubTemperature    float64
	SubTopP           float64
	SubTopK           int
	MaxNewTokens      int
}

// defaultGeneration is the official package's hard defaults (I:287-352),
// used for keys generation_config.json lacks.
func defaultGeneration() Generation {
	return Generation{DoSample: true, RepetitionPenalty: 1.05, Temperature: 0.9, TopP: 1, TopK: 50,
		SubDoSample: true, SubTemperature: 0.9, SubTopP: 1, SubTopK: 50, MaxNewTokens: 2048}
}

type decoderJSON struct {
	Hidden      *int            `json:"hidden_size"`
	Layers      *int            `json:"num_hidden_layers"`
	Heads       *int            `json:"num_attention_heads"`
	KVHeads     *int            `json:"num_key_value_heads"`
	HeadDim     *int            `json:"head_dim"`
	FFN         *int            `json:"intermediate_size"`
	Vocab       *int            `json:"vocab_size"`
	Eps         *float64        `json:"rms_norm_eps"`
	Theta       *float64        `json:"rope_theta"`
	MaxPos      *int            `json:"max_position_embeddings"`
	Act         *string         `json:"hidden_act"`
	Bias        *bool           `json:"attention_bias"`
	Sliding     *bool           `json:"use_sliding_window"`
	RopeScaling json.RawMessage `json:"rope_scaling"`
}

type talkerJSON struct {
	decoderJSON
	TextVocab  *int                       `json:"text_vocab_size"`
	TextHidden *int                       `json:"text_hidden_size"`
	CodeGroups *int                       `json:"num_code_groups"`
	Pad        *int                       `json:"codec_pad_id"`
	BOS        *int                       `json:"codec_bos_id"`
	EOS        *int                       `json:"codec_eos_token_id"`
	Think      *int                       `json:"codec_think_id"`
	NoThink    *int                       `json:"codec_nothink_id"`
	ThinkBOS   *int                       `json:"codec_think_bos_id"`
	ThinkEOS   *int                       `json:"codec_think_eos_id"`
	Languages  map[string]int             `json:"codec_language_id"`
	Speakers   map[string]json.RawMessage `json:"spk_id"`
	Dialects   map[string]json.RawMessage `json:"spk_is_dialect"`
	Predictor  *decoderJSON               `json:"code_predictor_config"`
}

type configJSON struct {
	ModelType  string          `json:"model_type"`
	TTSType    string          `json:"tts_model_type"`
	TTSSize    string          `json:"tts_model_size"`
	TTSPad     *int            `json:"tts_pad_token_id"`
	TTSBOS     *int            `json:"tts_bos_token_id"`
	TTSEOS     *int            `json:"tts_eos_token_id"`
	Talker     *talkerJSON     `json:"talker_config"`
	SpeakerEnc json.RawMessage `json:"speaker_encoder_config"`
}

// limit bounds every size so a hostile config cannot ask for absurd
// allocations before a tensor is read.
const limit = 1 << 24

// ParseConfig reads config.json and generation_config.json (nil: the
// official defaults). Errors name the key that is missing or wrong.
func ParseConfig(cfgRaw, generationJSON []byte) (*Config, error) {
	var j configJSON
	if err := json.Unmarshal(cfgRaw, &j); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	if j.ModelType != "qwen3_tts" {
		return nil, fmt.Errorf("config.json: model_type %q is not qwen3_tts", j.ModelType)
	}
	if j.Talker == nil {
		return nil, fmt.Errorf("config.json: talker_config is missing")
	}
	if j.Talker.Predictor == nil {
		return nil, fmt.Errorf("config.json: talker_config.code_predictor_config is missing")
	}
	c := &Config{ModelType: j.TTSType, ModelSize: j.TTSSize}
	t := j.Talker
	var errs []string
	need := func(key string, p *int, lo, hi int) int {
		switch {
		case p == nil:
			errs = append(errs, key+" is missing")
		case *p < lo || *p >= hi:
			errs = append(errs, fmt.Sprintf("%s %d is out of range [%d, %d)", key, *p, lo, hi))
		default:
			return *p
		}
		return 0
	}
	if err := decoder(&c.Talker, &t.decoderJSON, "talker_config.", need); err != nil {
		return nil, err
	}
	if err := decoder(&c.Predictor, t.Predictor, "talker_config.code_predictor_config.", need); err != nil {
		return nil, err
	}
	c.TextVocab = need("talker_config.text_vocab_size", t.TextVocab, 1, limit)
	c.TextHidden = need("talker_config.text_hidden_size", t.TextHidden, 1, limit)
	c.CodeGroups = need("talker_config.num_code_groups", t.CodeGroups, 2, 257)
	c.TTSPad = need("tts_pad_token_id", j.TTSPad, 0, c.TextVocab)
	c.TTSBOS = need("tts_bos_token_id", j.TTSBOS, 0, c.TextVocab)
	c.TTSEOS = need("tts_eos_token_id", j.TTSEOS, 0, c.TextVocab)
	cv := c.Talker.Vocab
	c.CodecPad = need("talker_config.codec_pad_id", t.Pad, 0, cv)
	c.CodecBOS = need("talker_config.codec_bos_id", t.BOS, 0, cv)
	c.CodecEOS = need("talker_config.codec_eos_token_id", t.EOS, 0, cv)
	c.CodecThink = need("talker_config.codec_think_id", t.Think, 0, cv)
	c.CodecNoThink = need("talker_config.codec_nothink_id", t.NoThink, 0, cv)
	c.ThinkBOS = need("talker_config.codec_think_bos_id", t.ThinkBOS, 0, cv)
	c.ThinkEOS = need("talker_config.codec_think_eos_id", t.ThinkEOS, 0, cv)
	if len(errs) > 0 {
		return nil, fmt.Errorf("config.json: %s", strings.Join(errs, "; "))
	}
	// The talker emits codebook-0 codes below the predictor's vocabulary
	// and the control ids above it (TS §2).
	if c.Predictor.Vocab > cv || c.CodecEOS < c.Predictor.Vocab {
		return nil, fmt.Errorf("config.json: talker vocab %d, code predictor vocab %d and codec_eos_token_id %d do not fit (codes below the predictor's vocabulary, control ids above)", cv, c.Predictor.Vocab, c.CodecEOS)
	}
	if err := c.voices(t); err != nil {
		return nil, err
	}
	g, err := parseGeneration(generationJSON)
	if err != nil {
		return nil, err
	}
	c.Gen = g
	return c, nil
}

// decoder fills a decoder stack's shape from its config.
func decoder(c *model.Config, d *decoderJSON, prefix string, need func(string, *int, int, int) int) error {
	c.Arch = "qwen3_tts"
	c.KVType = kv.F32 // speech computes in float32 (the goldens' precision)
	c.Hidden = need(prefix+"hidden_size", d.Hidden, 1, limit)
	c.Layers = need(prefix+"num_hidden_layers", d.Layers, 1, 1025)
	c.Heads = need(prefix+"num_attention_heads", d.Heads, 1, 4097)
	c.KVHeads = need(prefix+"num_key_value_heads", d.KVHeads, 1, 4097)
	c.HeadDim = need(prefix+"head_dim", d.HeadDim, 2, 4097)
	c.FFN = need(prefix+"intermediate_size", d.FFN, 1, limit)
	c.Vocab = need(prefix+"vocab_size", d.Vocab, 1, limit)
	c.ContextLength = need(prefix+"max_position_embeddings", d.MaxPos, 1, 1<<30)
	switch {
	case d.Eps == nil || !(*d.Eps > 0 && *d.Eps < 1):
		return fmt.Errorf("config.json: %srms_norm_eps is missing or not in (0, 1)", prefix)
	case d.Theta == nil || !(*d.Theta > 0):
		return fmt.Errorf("config.json: %srope_theta is missing or not positive", prefix)
	case d.Act != nil && *d.Act != "silu":
		return fmt.Errorf("config.json: %shidden_act %q is not supported (silu)", prefix, *d.Act)
	case d.Bias != nil && *d.Bias:
		return fmt.Errorf("config.json: %sattention_bias true is not supported", prefix)
	case d.Sliding != nil && *d.Sliding:
		return fmt.Errorf("config.json: %suse_sliding_window true is not supported", prefix)
	}
	if err := ropeScaling(d.RopeScaling, prefix); err != nil {
		return err
	}
	c.Eps = float32(*d.Eps)
	c.Rope = model.RopeNeoX
	c.LayerSpecs = make([]model.LayerSpec, c.Layers)
	for i := range c.LayerSpecs {
		c.LayerSpecs[i] = model.LayerSpec{RopeDims: c.HeadDim, RopeTheta: *d.Theta}
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("config.json: %shead_dim %d must be even", prefix, c.HeadDim)
	}
	return c.Validate("config.json: " + prefix)
}

// ropeScaling accepts none or the talker's M-RoPE, which is the 1-D RoPE
// because all three position streams are equal (TS §5).
func ropeScaling(raw json.RawMessage, prefix string) error {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	var r struct {
		Type     string `json:"rope_type"`
		OldType  string `json:"type"`
		Sections []int  `json:"mrope_section"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("config.json: %srope_scaling: %w", prefix, err)
	}
	if r.Type == "" {
		r.Type = r.OldType
	}
	if r.Type != "default" {
		return fmt.Errorf("config.json: %srope_scaling.rope_type %q is not supported (default)", prefix, r.Type)
	}
	return nil
}

// voices reads languages, speakers and their dialects.
func (c *Config) voices(t *talkerJSON) error {
	cv := c.Talker.Vocab
	c.Languages = map[string]int{}
	for k, v := range t.Languages {
		if v < 0 || v >= cv {
			return fmt.Errorf("config.json: talker_config.codec_language_id[%q] = %d is outside the codec vocabulary %d", k, v, cv)
		}
		c.Languages[strings.ToLower(k)] = v
	}
	c.Speakers, c.Dialects = map[string]int{}, map[string]string{}
	for k, raw := range t.Speakers {
		// A plain int, or a one-element list (M:2095-2101).
		var id int
		if json.Unmarshal(raw, &id) != nil {
			var ids []int
			if json.Unmarshal(raw, &ids) != nil || len(ids) != 1 {
				return fmt.Errorf("config.json: talker_config.spk_id[%q] is not an id", k)
			}
			id = ids[0]
		}
		if id < 0 || id >= cv {
			return fmt.Errorf("config.json: talker_config.spk_id[%q] = %d is outside the codec vocabulary %d", k, id, cv)
		}
		name := strings.ToLower(k)
		c.Speakers[name] = id
		d, ok := t.Dialects[k]
		if !ok {
			return fmt.Errorf("config.json: talker_config.spk_is_dialect has no entry for speaker %q", k)
		}
		var dialect string
		var flag bool
		if json.Unmarshal(d, &dialect) == nil {
			if _, ok := c.Languages[strings.ToLower(dialect)]; !ok {
				return fmt.Errorf("config.json: talker_config.spk_is_dialect[%q] = %q is not in codec_language_id", k, dialect)
			}
			c.Dialects[name] = strings.ToLower(dialect)
		} else if json.Unmarshal(d, &flag) != nil || flag {
			return fmt.Errorf("config.json: talker_config.spk_is_dialect[%q] must be false or a dialect name", k)
		}
	}
	return nil
}

// SupportedLanguages lists the languages a request may name ("auto" and
// every codec language except the dialect keys, which only speakers
// select; M:1831-1834), sorted.
func (c *Config) SupportedLanguages() []string {
	out := []string{"auto"}
	for k := range c.Languages {
		if !strings.HasSuffix(k, "_dialect") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// SupportedSpeakers lists the speaker names, sorted.
func (c *Config) SupportedSpeakers() []string {
	return slices.Sorted(maps.Keys(c.Speakers))
}

// parseGeneration reads generation_config.json over the defaults.
func parseGeneration(raw []byte) (Generation, error) {
	g := defaultGeneration()
	if raw == nil {
		return g, nil
	}
	var j struct {
		DoSample          *bool    `json:"do_sample"`
		RepetitionPenalty *float64 `json:"repetition_penalty"`
		Temperature       *float64 `json:"temperature"`
		TopP              *float64 `json:"top_p"`
		TopK              *int     `json:"top_k"`
		SubDoSample       *bool    `json:"subtalker_dosample"`
		SubTemperature    *float64 `json:"subtalker_temperature"`
		SubTopP           *float64 `json:"subtalker_top_p"`
		SubTopK           *int     `json:"subtalker_top_k"`
		MaxNewTokens      *int     `json:"max_new_tokens"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return g, fmt.Errorf("generation_config.json: %w", err)
	}
	setB := func(dst *bool, p *bool) {
		if p != nil {
			*dst = *p
		}
	}
	setF := func(dst *float64, p *float64) {
		if p != nil {
			*dst = *p
		}
	}
	setI := func(dst *int, p *int) {
		if p != nil {
			*dst = *p
		}
	}
	setB(&g.DoSample, j.DoSample)
	setF(&g.RepetitionPenalty, j.RepetitionPenalty)
	setF(&g.Temperature, j.Temperature)
	setF(&g.TopP, j.TopP)
	setI(&g.TopK, j.TopK)
	setB(&g.SubDoSample, j.SubDoSample)
	setF(&g.SubTemperature, j.SubTemperature)
	setF(&g.SubTopP, j.SubTopP)
	setI(&g.SubTopK, j.SubTopK)
	setI(&g.MaxNewTokens, j.MaxNewTokens)
	if g.MaxNewTokens < 2 {
		return g, fmt.Errorf("generation_config.json: max_new_tokens %d must be at least 2 (one frame)", g.MaxNewTokens)
	}
	return g, nil
}
