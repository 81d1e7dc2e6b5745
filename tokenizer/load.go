package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/siskin-ml/siskin/gguf"
)

// Load reads the tokenizer at path, whatever form it has: a GGUF file
// (a model or a vocabulary-only file), a Hugging Face folder (with
// tokenizer.json, or vocab.json and merges.txt) or a tokenizer.json file (tokenizer_config.json and generation_config.json
// beside it are read too), or a SentencePiece model (a tokenizer.model
// file, or a folder holding one and no tokenizer.json). Errors name the
// file.
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "tokenizer.json")); err == nil {
			t, err := FromHFDir(path)
			return wrapPath(filepath.Join(path, "tokenizer.json"), t, err)
		}
		sp := filepath.Join(path, "tokenizer.model")
		if _, err := os.Stat(sp); err == nil {
			return loadSentencePieceDir(path, sp)
		}
		if _, err := os.Stat(filepath.Join(path, "merges.txt")); err == nil {
			t, err := FromVocabMerges(path)
			return wrapPath(path, t, err)
		}
		return nil, fmt.Errorf("%s: no tokenizer.json or tokenizer.model (or vocab.json and merges.txt) in this folder", path)
	}
	head := make([]byte, 4)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	n, err := io.ReadFull(f, head)
	f.Close()
	if n == 0 {
		return nil, fmt.Errorf("%s: empty file", path)
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case string(head) == "GGUF":
		g, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		defer g.Close()
		t, err := FromGGUF(g)
		return wrapPath(path, t, err)
	case bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("{")):
		t, err := fromJSONFile(path)
		return wrapPath(path, t, err)
	}
	t, err := loadSentencePieceDir(filepath.Dir(path), path)
	if err != nil && !looksLikeSentencePiece(path) {
		return nil, fmt.Errorf("%s: not a GGUF file, tokenizer.json or SentencePiece model", path)
	}
	return t, err
}

// looksLikeSentencePiece reports whether a file starts as a ModelProto
// does: with a piece (field 1, length-delimited).
func looksLikeSentencePiece(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.Read(b)
	return err == nil && b[0] == 0x0a
}

// wrapPath puts the file name in front of an error that lacks it.
func wrapPath(path string, t *Tokenizer, err error) (*Tokenizer, error) {
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// fromJSONFile loads a tokenizer.json file that may have a different name,
// with the tokenizer_config.json beside it if there is one.
func fromJSONFile(path string) (*Tokenizer, error) {
	if filepath.Base(path) == "tokenizer.json" {
		return FromHFDir(filepath.Dir(path))
	}
	tj, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := os.ReadFile(filepath.Join(filepath.Dir(path), "tokenizer_config.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return FromTokenizerJSON(tj, cfg)
}

// loadSentencePieceDir loads a SentencePiece model and applies
// add_bos_token/add_eos_token from the tokenizer_config.json in dir, as
// transformers' Llama tokenizer does.
func loadSentencePieceDir(dir, model string) (*Tokenizer, error) {
	t, err := FromSentencePieceFile(model)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	raw, err := os.ReadFile(cfgPath)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	var cfg hfConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	}
	if cfg.AddBOS != nil {
		t.prefixIDs = nil
		if *cfg.AddBOS && t.bos >= 0 {
			t.prefixIDs = []int{t.bos}
		}
	}
	if cfg.AddEOS != nil {
		t.suffixIDs = nil
		if *cfg.AddEOS && t.eos >= 0 {
			t.suffixIDs = []int{t.eos}
		}
	}
	return t, nil
}
