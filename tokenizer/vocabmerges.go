package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// qwen2Pipeline is what transformers' Qwen2 converter builds around the
// BPE model of vocab.json and merges.txt: NFC, the Qwen2 split regex, then
// byte-level mapping without a prefix space, and the byte-level decoder.
const qwen2Pipeline = `"normalizer": {"type": "NFC"},
"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
  {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false},
  {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
"post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
"decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`

// FromVocabMerges loads a Qwen2-style byte-level BPE tokenizer from the
// vocab.json and merges.txt in dir (the form the official Qwen3-TTS
// repositories ship), with tokenizer_config.json's added tokens (the
// chat and TTS special tokens). tokenizer_config.json's tokenizer_class
// must be a Qwen2 tokenizer: other classes split text differently.
func FromVocabMerges(dir string) (*Tokenizer, error) {
	vocab, err := os.ReadFile(filepath.Join(dir, "vocab.json"))
	if err != nil {
		return nil, err
	}
	mergesPath := filepath.Join(dir, "merges.txt")
	merges, err := os.ReadFile(mergesPath)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("%s: needed beside vocab.json and merges.txt for the special tokens: %w", cfgPath, err)
	}
	return fromVocabMerges(vocab, merges, cfg)
}

func fromVocabMerges(vocab, merges, cfg []byte) (*Tokenizer, error) {
	var c struct {
		Class string `json:"tokenizer_class"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	if c.Class != "Qwen2Tokenizer" && c.Class != "Qwen2TokenizerFast" {
		return nil, fmt.Errorf("tokenizer_config.json: tokenizer_class %q with vocab.json and merges.txt is not supported (Qwen2Tokenizer; or give tokenizer.json)", c.Class)
	}
	pairs, err := readMerges(merges)
	if err != nil {
		return nil, err
	}
	mj, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	if !json.Valid(vocab) {
		return nil, errors.New("vocab.json: not valid JSON")
	}
	var tj bytes.Buffer
	fmt.Fprintf(&tj, `{"model": {"type": "BPE", "unk_token": null, "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "vocab": %s, "merges": %s}, %s}`,
		vocab, mj, qwen2Pipeline)
	t, err := FromTokenizerJSON(tj.Bytes(), cfg)
	if err != nil {
		// The errors name tokenizer.json, which here is vocab.json and merges.txt.
		return nil, fmt.Errorf("vocab.json and merges.txt: %s", strings.TrimPrefix(err.Error(), "tokenizer.json: "))
	}
	return t, nil
}

// readMerges reads merges.txt as transformers does: a "#version:" first
// line and empty lines skipped, every other line two pieces.
func readMerges(data []byte) ([][2]string, error) {
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for i := 0; sc.Scan(); i++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || i == 0 && strings.HasPrefix(line, "#version:") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("merges.txt: line %d: %q is not two pieces", i+1, line)
		}
		out = append(out, [2]string{f[0], f[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("merges.txt: %w", err)
	}
	return out, nil
}
