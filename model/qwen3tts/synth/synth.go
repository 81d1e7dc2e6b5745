package synth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/siskin-ml/siskin/tensor"
)

// Options controls Write.
type Options struct {
	Shape string
	Seed  uint64
	// Progress, if set, is called with bytes written so far and the total.
	Progress func(done, total int64)
}

// Report describes a written folder.
type Report struct {
	Shape                       Shape
	TalkerTensors, CodecTensors int
	TalkerParams, CodecParams   int64
	TalkerBytes, CodecBytes     int64
}

// Plan returns the talker and codec tensor lists of a shape (names,
// shapes) without writing anything.
func Plan(shape string) (talker, codec []string, rep Report, err error) {
	s, err := LookupShape(shape)
	if err != nil {
		return nil, nil, Report{}, err
	}
	rep = report(s, talkerSpecs(s), codecSpecs(s.Codec))
	for _, sp := range talkerSpecs(s) {
		talker = append(talker, sp.name)
	}
	for _, sp := range codecSpecs(s.Codec) {
		codec = append(codec, sp.name)
	}
	return talker, codec, rep, nil
}

func report(s Shape, t, c []spec) Report {
	r := Report{Shape: s, TalkerTensors: len(t), CodecTensors: len(c)}
	for i := range t {
		r.TalkerParams += int64(t[i].elements())
	}
	for i := range c {
		r.CodecParams += int64(c[i].elements())
	}
	r.TalkerBytes, r.CodecBytes = 2*r.TalkerParams, 4*r.CodecParams
	return r
}

// Write writes a random-weight Qwen3-TTS folder to dir (created if
// missing). Weights: projections N(0, 1/fan_in), embeddings N(0, 1),
// output heads N(0, 9/fan_in), norm weights 1 + 0.1 N(0, 1), biases
// N(0, 0.05^2), each tensor from its own generator keyed by the seed and
// its name.
func Write(dir string, opt Options) (*Report, error) {
	s, err := LookupShape(opt.Shape)
	if err != nil {
		return nil, err
	}
	tsp, csp := talkerSpecs(s), codecSpecs(s.Codec)
	rep := report(s, tsp, csp)
	st := filepath.Join(dir, "speech_tokenizer")
	if err := os.MkdirAll(st, 0o755); err != nil {
		return nil, err
	}
	files := map[string]any{
		"config.json":                  talkerConfig(s),
		"generation_config.json":       generationConfig(),
		"tokenizer_config.json":        tokenizerConfig(s),
		"speech_tokenizer/config.json": codecConfig(s.Codec),
	}
	for name, v := range files {
		if err := writeJSON(filepath.Join(dir, name), v); err != nil {
			return nil, err
		}
	}
	if err := writeTokenizer(dir, s); err != nil {
		return nil, err
	}
	total, done := rep.TalkerBytes+rep.CodecBytes, int64(0)
	progress := func(n int64) {
		done += n
		if opt.Progress != nil {
			opt.Progress(done, total)
		}
	}
	meta := map[string]string{"format": "pt", "note": fmt.Sprintf("random weights made by siskin synth (seed %d), shape %s", opt.Seed, s.Name)}
	if err := writeSafetensors(filepath.Join(dir, "model.safetensors"), tsp, tensor.BF16, opt.Seed, meta, progress); err != nil {
		return nil, err
	}
	if err := writeSafetensors(filepath.Join(st, "model.safetensors"), csp, tensor.F32, opt.Seed, meta, progress); err != nil {
		return nil, err
	}
	return &rep, nil
}

// WriteCodec writes only a shape's speech tokenizer (config.json and
// model.safetensors with the decoder weights) to dir, as Write does under
// speech_tokenizer/: for codec tests and benchmarks.
func WriteCodec(dir, shape string, seed uint64) error {
	s, err := LookupShape(shape)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), codecConfig(s.Codec)); err != nil {
		return err
	}
	meta := map[string]string{"format": "pt", "note": fmt.Sprintf("random weights made by siskin synth (seed %d), shape %s", seed, s.Name)}
	return writeSafetensors(filepath.Join(dir, "model.safetensors"), codecSpecs(s.Codec), tensor.F32, seed, meta, nil)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// object is a JSON object that keeps its keys in the order given (the
// official files' order), unlike a map.
type object []field

type field struct {
	key   string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(f.key)
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

func stackConfig(m lm) object {
	return object{
		{"attention_bias", false}, {"attention_dropout", 0}, {"head_dim", m.HeadDim}, {"hidden_act", "silu"},
		{"hidden_size", m.Hidden}, {"initializer_range", 0.02}, {"intermediate_size", m.FFN},
	}
}

func talkerConfig(s Shape) object {
	p := s.Predictor
	layerTypes := make([]string, p.Layers)
	for i := range layerTypes {
		layerTypes[i] = "full_attention"
	}
	pred := append(stackConfig(p),
		field{"layer_types", layerTypes}, field{"max_position_embeddings", 65536}, field{"max_window_layers", 28},
		field{"model_type", "qwen3_tts_talker_code_predictor"}, field{"num_attention_heads", p.Heads},
		field{"num_code_groups", 16}, field{"num_hidden_layers", p.Layers}, field{"num_key_value_heads", p.KVHeads},
		field{"rms_norm_eps", 1e-6}, field{"rope_scaling", nil}, field{"rope_theta", 1000000}, field{"sliding_window", nil},
		field{"use_cache", true}, field{"use_sliding_window", false}, field{"vocab_size", 2048})
	t := s.Talker
	talker := object{{"attention_bias", false}, {"attention_dropout", 0}, {"code_predictor_config", pred},
		{"codec_pad_id", 2148}, {"codec_bos_id", 2149}, {"codec_eos_token_id", 2150}, {"codec_think_id", 2154},
		{"codec_nothink_id", 2155}, {"codec_think_bos_id", 2156}, {"codec_think_eos_id", 2157},
		{"codec_language_id", object{{"chinese", 2055}, {"english", 2050}, {"german", 2053}, {"italian", 2070},
			{"portuguese", 2071}, {"spanish", 2054}, {"japanese", 2058}, {"korean", 2064}, {"french", 2061},
			{"russian", 2069}, {"beijing_dialect", 2074}, {"sichuan_dialect", 2062}}},
		{"head_dim", t.HeadDim}, {"hidden_act", "silu"}, {"hidden_size", t.Hidden}, {"initializer_range", 0.02},
		{"intermediate_size", t.FFN}, {"max_position_embeddings", 32768}, {"model_type", "qwen3_tts_talker"},
		{"num_attention_heads", t.Heads}, {"num_code_groups", 16}, {"num_hidden_layers", t.Layers},
		{"num_key_value_heads", t.KVHeads}, {"position_id_per_seconds", 13}, {"rms_norm_eps", 1e-6},
		{"rope_scaling", object{{"interleaved", true}, {"mrope_section", s.MRoPE[:]}, {"rope_type", "default"}}},
		{"rope_theta", 1000000}, {"sliding_window", nil},
		{"spk_id", object{{"serena", 3066}, {"vivian", 3065}, {"uncle_fu", 3010}, {"ryan", 3061}, {"aiden", 2861},
			{"ono_anna", 2873}, {"sohee", 2864}, {"eric", 2875}, {"dylan", 2878}}},
		{"spk_is_dialect", object{{"serena", false}, {"vivian", false}, {"uncle_fu", false}, {"ryan", false},
			{"aiden", false}, {"ono_anna", false}, {"sohee", false}, {"eric", "sichuan_dialect"}, {"dylan", "beijing_dialect"}}},
		{"text_hidden_size", s.TextHidden}, {"text_vocab_size", s.TextVocab}, {"use_cache", true},
		{"use_sliding_window", false}, {"vocab_size", 3072}}
	assistant := 77091
	if s.TextVocab < assistant {
		assistant = 771 // the shared tiny fixture's remapped id
	}
	return object{
		{"architectures", []string{"Qwen3TTSForConditionalGeneration"}},
		{"assistant_token_id", assistant},
		{"im_end_token_id", s.special("<|im_end|>")},
		{"im_start_token_id", s.special("<|im_start|>")},
		{"tts_bos_token_id", s.special("<tts_text_bos>")},
		{"tts_eos_token_id", s.special("<tts_text_eod>")},
		{"tts_pad_token_id", s.special("<tts_pad>")},
		{"model_type", "qwen3_tts"},
		{"tokenizer_type", "qwen3_tts_tokenizer_12hz"},
		{"tts_model_size", s.Size},
		{"tts_model_type", "custom_voice"},
		{"talker_config", talker},
		{"torch_dtype", "bfloat16"},
	}
}

func generationConfig() object {
	return object{{"do_sample", true}, {"repetition_penalty", 1.05}, {"temperature", 0.9}, {"top_p", json.Number("1.0")},
		{"top_k", 50}, {"subtalker_dosample", true}, {"subtalker_temperature", 0.9}, {"subtalker_top_p", json.Number("1.0")},
		{"subtalker_top_k", 50}, {"max_new_tokens", 8192}}
}

func codecConfig(c codecShape) object {
	dec := object{
		{"attention_bias", false}, {"attention_dropout", 0.0}, {"latent_dim", c.Latent}, {"codebook_dim", c.CodebookDim},
		{"codebook_size", c.CodebookSize}, {"decoder_dim", c.DecoderDim}, {"hidden_act", "silu"},
		{"hidden_size", c.Hidden}, {"intermediate_size", c.FFN}, {"layer_scale_initial_scale", 0.01},
		{"max_position_embeddings", 8000}, {"head_dim", c.HeadDim}, {"num_attention_heads", c.Heads},
		{"num_hidden_layers", c.Layers}, {"num_key_value_heads", c.Heads}, {"num_quantizers", 16},
		{"num_semantic_quantizers", 1}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000},
		{"semantic_codebook_size", 4096}, {"sliding_window", c.Window}, {"upsample_rates", []int{8, 5, 4, 3}},
		{"upsampling_ratios", []int{2, 2}}, {"vector_quantization_hidden_dimension", c.CodebookDim},
	}
	return object{
		{"architectures", []string{"Qwen3TTSTokenizerV2Model"}},
		{"model_type", "qwen3_tts_tokenizer_12hz"},
		{"encoder_valid_num_quantizers", 16},
		{"input_sample_rate", 24000}, {"output_sample_rate", 24000},
		{"decode_upsample_rate", 1920}, {"encode_downsample_rate", 1920},
		{"decoder_config", dec},
		{"transformers_version", "4.57.3"},
	}
}
