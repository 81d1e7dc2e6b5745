// Package synth writes seeded random-weight Qwen3-TTS (12 Hz, CustomVoice)
// model folders in the official layout, for end-to-end tests and
// benchmarks at real size: config.json, generation_config.json, a BF16
// model.safetensors with the official talker and code-predictor tensor
// names, Qwen tokenizer files with the TTS special tokens, and
// speech_tokenizer/ (the codec's config.json and F32 decoder weights at
// the real codebook size). The same options give the same bytes.
package synth

import (
	"fmt"
	"sort"
	"strings"
)

// lm is one transformer stack's shape (talker or code predictor).
type lm struct {
	Hidden, Layers, Heads, KVHeads, HeadDim, FFN int
}

// codecShape is the speech tokenizer decoder's shape.
type codecShape struct {
	CodebookSize, CodebookDim, Latent, Hidden, FFN, Layers, Heads, HeadDim, Window, DecoderDim int
}

// Shape is a Qwen3-TTS model size.
type Shape struct {
	Name       string
	Size       string // tts_model_size
	Talker     lm
	Predictor  lm
	TextVocab  int
	TextHidden int
	// SpecialBase is the id of <|endoftext|>, the first special text
	// token (151643 in the real vocabulary; the tiny model shifts the
	// block down as the shared fixture does).
	SpecialBase int
	MRoPE       [3]int
	Codec       codecShape
}

// realCodec is the released speech tokenizer's decoder
// (../shared/docs/qwen3_tts_codec.md §1).
var realCodec = codecShape{CodebookSize: 2048, CodebookDim: 512, Latent: 1024, Hidden: 512, FFN: 1024, Layers: 8, Heads: 16, HeadDim: 64, Window: 72, DecoderDim: 1536}

// Shapes are the sizes synth writes. tiny is the shared fixture's talker
// (talker/ckpt/tiny-cv-eq) and codec (codec/tiny) with the real codebook
// size, so the talker's codes decode; 0.6b and 1.7b are the published
// CustomVoice models (../shared/docs/qwen3_tts_talker.md §1, §3).
var Shapes = map[string]Shape{
	"tiny": {
		Name: "tiny", Size: "0b6",
		Talker:    lm{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 192},
		Predictor: lm{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 128},
		TextVocab: 1000, TextHidden: 128, SpecialBase: 899, MRoPE: [3]int{6, 5, 5},
		Codec: codecShape{CodebookSize: 2048, CodebookDim: 32, Latent: 64, Hidden: 32, FFN: 64, Layers: 2, Heads: 4, HeadDim: 16, Window: 8, DecoderDim: 48},
	},
	"0.6b": {
		Name: "0.6b", Size: "0b6",
		Talker:    lm{Hidden: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 3072},
		Predictor: lm{Hidden: 1024, Layers: 5, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 3072},
		TextVocab: 151936, TextHidden: 2048, SpecialBase: 151643, MRoPE: [3]int{24, 20, 20},
		Codec: realCodec,
	},
	"1.7b": {
		Name: "1.7b", Size: "1b7",
		Talker:    lm{Hidden: 2048, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 6144},
		Predictor: lm{Hidden: 1024, Layers: 5, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 3072},
		TextVocab: 151936, TextHidden: 2048, SpecialBase: 151643, MRoPE: [3]int{24, 20, 20},
		Codec: realCodec,
	},
}

// LookupShape finds a shape by name.
func LookupShape(name string) (Shape, error) {
	s, ok := Shapes[strings.ToLower(name)]
	if !ok {
		names := make([]string, 0, len(Shapes))
		for n := range Shapes {
			names = append(names, n)
		}
		sort.Strings(names)
		return Shape{}, fmt.Errorf("qwen3_tts has no shape %q (have %s)", name, strings.Join(names, ", "))
	}
	return s, nil
}

// specialTokens are the Qwen special text tokens from <|endoftext|> on, in
// id order: Qwen2.5's list followed by the TTS tokens (<tts_pad> is
// endoftext+28, <tts_text_bos> +29, <tts_text_eod> +30).
var specialTokens = []string{
	"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
	"<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
	"<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
	"</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
	"<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>",
	"</think>", "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>",
	"<tts_text_eod>", "<tts_text_bos_single>", "<|audio_pad|>",
}

// special returns the id of a special token.
func (s Shape) special(tok string) int {
	for i, t := range specialTokens {
		if t == tok {
			return s.SpecialBase + i
		}
	}
	panic("synth: unknown special token " + tok)
}
