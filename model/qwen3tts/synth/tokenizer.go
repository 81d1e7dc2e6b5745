package synth

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// byteRunes is GPT-2's byte-to-character map of byte-level BPE:
// printable Latin-1 bytes stand for themselves, the others for U+0100 on.
func byteRunes() [256]rune {
	var m [256]rune
	n := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// vocab builds a byte-level BPE vocabulary of exactly n ordinary tokens:
// the 256 byte tokens, then tokens grown breadth-first from a space and
// the letters ("Ġt", "Ġth", ...), each with the merge that forms it from
// tokens made before it (for the real size, n = 151643 gives Qwen's
// 151,387 merges).
func vocab(n int) (tokens []string, merges [][2]string) {
	br := byteRunes()
	for b := range 256 {
		tokens = append(tokens, string(br[b]))
	}
	letters := "etaoinshrdlcumwfgypbvkjxqz"
	queue := []string{string(br[' '])}
	for _, c := range letters {
		queue = append(queue, string(c))
	}
	for q := 0; len(tokens) < n; q++ {
		prefix := queue[q]
		for _, c := range letters {
			if len(tokens) == n {
				break
			}
			tok := prefix + string(c)
			tokens = append(tokens, tok)
			merges = append(merges, [2]string{prefix, string(c)})
			queue = append(queue, tok)
		}
	}
	return tokens, merges
}

// isSpecial says whether transformers marks an added token special
// (Qwen3 leaves the tool, think and fill-in-the-middle tags unmarked).
func isSpecial(tok string) bool {
	switch tok {
	case "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
		"<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>":
		return false
	}
	return true
}

func addedToken(id int, tok string) object {
	return object{{"id", id}, {"content", tok}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
		{"normalized", false}, {"special", isSpecial(tok)}}
}

// vocabJSON renders tokens as a JSON object token -> id, in id order.
func vocabJSON(tokens []string) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, t := range tokens {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(t)
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// qwenSplit is the Qwen2 pre-tokenizer's split pattern.
const qwenSplit = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// writeTokenizer writes vocab.json, merges.txt (the slow tokenizer's
// files, as the official repositories ship) and tokenizer.json.
func writeTokenizer(dir string, s Shape) error {
	tokens, merges := vocab(s.SpecialBase)
	vj := vocabJSON(tokens)
	if err := os.WriteFile(filepath.Join(dir, "vocab.json"), append(vj, '\n'), 0o644); err != nil {
		return err
	}
	var mb strings.Builder
	mb.WriteString("#version: 0.2\n")
	for _, m := range merges {
		mb.WriteString(m[0] + " " + m[1] + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "merges.txt"), []byte(mb.String()), 0o644); err != nil {
		return err
	}
	var added []object
	for i, t := range specialTokens {
		added = append(added, addedToken(s.SpecialBase+i, t))
	}
	byteLevel := object{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}
	tj := object{
		{"version", "1.0"}, {"truncation", nil}, {"padding", nil},
		{"added_tokens", added},
		{"normalizer", object{{"type", "NFC"}}},
		{"pre_tokenizer", object{{"type", "Sequence"}, {"pretokenizers", []object{
			{{"type", "Split"}, {"pattern", object{{"Regex", qwenSplit}}}, {"behavior", "Isolated"}, {"invert", false}},
			byteLevel}}}},
		{"post_processor", byteLevel},
		{"decoder", byteLevel},
		{"model", object{{"type", "BPE"}, {"dropout", nil}, {"unk_token", nil}, {"continuing_subword_prefix", ""},
			{"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
			{"vocab", vj}, {"merges", merges}}},
	}
	b, err := json.Marshal(tj)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokenizer.json"), append(b, '\n'), 0o644)
}

// tokenizerConfig is tokenizer_config.json: a Qwen2Tokenizer with every
// special token, the TTS ones included, in added_tokens_decoder.
func tokenizerConfig(s Shape) object {
	var decoder object
	var extra []string
	for i, t := range specialTokens {
		decoder = append(decoder, field{strconv.Itoa(s.SpecialBase + i), object{{"content", t}, {"lstrip", false},
			{"normalized", false}, {"rstrip", false}, {"single_word", false}, {"special", isSpecial(t)}}})
		if i > 0 && isSpecial(t) {
			extra = append(extra, t)
		}
	}
	return object{
		{"add_bos_token", false}, {"add_prefix_space", false}, {"added_tokens_decoder", decoder},
		{"additional_special_tokens", extra}, {"bos_token", nil}, {"clean_up_tokenization_spaces", false},
		{"eos_token", "<|im_end|>"}, {"errors", "replace"}, {"model_max_length", 131072},
		{"pad_token", "<|endoftext|>"}, {"split_special_tokens", false}, {"tokenizer_class", "Qwen2Tokenizer"},
		{"unk_token", nil},
	}
}
