// Package codec is the decoder half of the Qwen3-TTS speech tokenizer
// ("Qwen3-TTS-Tokenizer-12Hz", code2wav): it turns frames of 16 residual
// codes (12.5 frames a second) into 24 kHz mono audio, 1920 samples a
// frame. The whole network is causal with no look-ahead, so a Stream
// carries each layer's history (conv tails, transposed-conv carries, the
// transformer's sliding keys and values) and decodes frame by frame with
// exactly the numbers of a whole-utterance decode. Spec:
// ../shared/docs/qwen3_tts_codec.md.
package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Config is the decoder_config of a speech tokenizer's config.json, the
// keys the decoder reads.
type Config struct {
	CodebookSize     int     `json:"codebook_size"`
	CodebookDim      int     `json:"codebook_dim"`
	LatentDim        int     `json:"latent_dim"`
	HiddenSize       int     `json:"hidden_size"`
	IntermediateSize int     `json:"intermediate_size"`
	Layers           int     `json:"num_hidden_layers"`
	Heads            int     `json:"num_attention_heads"`
	KVHeads          int     `json:"num_key_value_heads"`
	HeadDim          int     `json:"head_dim"`
	SlidingWindow    int     `json:"sliding_window"`
	RopeTheta        float64 `json:"rope_theta"`
	RMSNormEps       float64 `json:"rms_norm_eps"`
	Quantizers       int     `json:"num_quantizers"`
	DecoderDim       int     `json:"decoder_dim"`
	UpsampleRates    []int   `json:"upsample_rates"`
	UpsamplingRatios []int   `json:"upsampling_ratios"`
	HiddenAct        string  `json:"hidden_act"`
	AttentionBias    bool    `json:"attention_bias"`
}

// requiredKeys are the decoder_config keys without a usable default
// (head_dim defaults to hidden_size/num_attention_heads as in the official
// code; hidden_act to silu).
var requiredKeys = []string{
	"codebook_size", "codebook_dim", "latent_dim", "hidden_size", "intermediate_size",
	"num_hidden_layers", "num_attention_heads", "num_key_value_heads", "sliding_window",
	"rope_theta", "rms_norm_eps", "num_quantizers", "decoder_dim", "upsample_rates", "upsampling_ratios",
}

// SampleRate is the output rate of every released speech tokenizer.
const SampleRate = 24000

// ReadConfig reads and checks the decoder_config of a speech tokenizer's
// config.json.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig parses the top-level config.json of a speech tokenizer.
func ParseConfig(data []byte) (*Config, error) {
	var top struct {
		ModelType     string                     `json:"model_type"`
		OutputRate    *int                       `json:"output_sample_rate"`
		DecoderConfig map[string]json.RawMessage `json:"decoder_config"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON config: %v", err)
	}
	if top.DecoderConfig == nil {
		return nil, fmt.Errorf("missing key \"decoder_config\" (not a Qwen3-TTS speech tokenizer config; model_type %q)", top.ModelType)
	}
	if top.OutputRate != nil && *top.OutputRate != SampleRate {
		return nil, fmt.Errorf("output_sample_rate %d, want %d", *top.OutputRate, SampleRate)
	}
	for _, k := range requiredKeys {
		if _, ok := top.DecoderConfig[k]; !ok {
			return nil, fmt.Errorf("decoder_config: missing key %q", k)
		}
	}
	raw, _ := json.Marshal(top.DecoderConfig)
	c := &Config{HiddenAct: "silu"}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("decoder_config: %v", err)
	}
	if _, ok := top.DecoderConfig["head_dim"]; !ok && c.Heads > 0 {
		c.HeadDim = c.HiddenSize / c.Heads
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("decoder_config: %w", err)
	}
	return c, nil
}

// limit bounds every size so that products of them cannot overflow and a
// hostile config cannot ask for absurd allocations before the weights are
// checked against it.
const limit = 1 << 16

func (c *Config) check() error {
	sizes := []struct {
		key string
		v   int
	}{
		{"codebook_size", c.CodebookSize}, {"codebook_dim", c.CodebookDim}, {"latent_dim", c.LatentDim},
		{"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.Layers}, {"num_attention_heads", c.Heads}, {"num_key_value_heads", c.KVHeads},
		{"head_dim", c.HeadDim}, {"sliding_window", c.SlidingWindow}, {"num_quantizers", c.Quantizers},
		{"decoder_dim", c.DecoderDim},
	}
	for _, s := range sizes {
		if s.v <= 0 || s.v > limit {
			return fmt.Errorf("%s is %d, want 1..%d", s.key, s.v, limit)
		}
	}
	switch {
	case c.CodebookDim%2 != 0:
		return fmt.Errorf("codebook_dim %d is odd (codebook vectors are codebook_dim/2 wide)", c.CodebookDim)
	case c.HeadDim%2 != 0:
		return fmt.Errorf("head_dim %d is odd (RoPE rotates halves)", c.HeadDim)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("num_attention_heads %d is not a multiple of num_key_value_heads %d", c.Heads, c.KVHeads)
	case c.Quantizers < 2:
		return fmt.Errorf("num_quantizers %d, want at least 2 (one semantic codebook and the rest)", c.Quantizers)
	case c.RopeTheta <= 0 || c.RMSNormEps <= 0:
		return fmt.Errorf("rope_theta %v and rms_norm_eps %v must be positive", c.RopeTheta, c.RMSNormEps)
	case c.HiddenAct != "silu":
		return fmt.Errorf("hidden_act %q is not supported (only silu)", c.HiddenAct)
	case c.AttentionBias:
		return fmt.Errorf("attention_bias true is not supported")
	case len(c.UpsamplingRatios) == 0 || len(c.UpsampleRates) == 0:
		return fmt.Errorf("upsample_rates and upsampling_ratios must not be empty")
	}
	if c.DecoderDim>>len(c.UpsampleRates) == 0 || c.DecoderDim%(1<<len(c.UpsampleRates)) != 0 {
		return fmt.Errorf("decoder_dim %d is not divisible by 2^%d (one halving per upsample rate)", c.DecoderDim, len(c.UpsampleRates))
	}
	total := 1
	for _, r := range append(append([]int(nil), c.UpsampleRates...), c.UpsamplingRatios...) {
		if r <= 0 || r > 64 {
			return fmt.Errorf("upsampling factor %d, want 1..64", r)
		}
		total *= r
		if total > 1<<20 {
			return fmt.Errorf("total upsampling exceeds %d", 1<<20)
		}
	}
	return nil
}

// SamplesPerFrame is the product of every upsampling factor: 1920 for the
// released tokenizers (24000 Hz / 12.5 Hz).
func (c Config) SamplesPerFrame() int {
	n := 1
	for _, r := range c.UpsamplingRatios {
		n *= r
	}
	for _, r := range c.UpsampleRates {
		n *= r
	}
	return n
}
