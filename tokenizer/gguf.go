package tokenizer

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/siskin-ml/siskin/gguf"
)

// GGUF token types (tokenizer.ggml.token_type), as llama.cpp defines them.
var ggufKinds = map[int32]tokenKind{
	// 0 (undefined) and unknown values: llama.cpp neither matches such a
	// token in text nor renders it, but merges may still produce it.
	0: kindUnused,
	1: kindNormal,
	2: kindUnknown,
	3: kindControl,
	4: kindUserDefined,
	5: kindUnused,
	6: kindByte,
}

// FromGGUF builds the tokenizer described by a GGUF file's tokenizer.ggml.*
// metadata, with llama.cpp's semantics. Supported: model "llama"
// (SentencePiece scores), "gpt2" (byte-level BPE) with the pre-tokenizers
// listed in ggufPres, and "bert" (WordPiece).
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	t, err := ggufVocab(f)
	if err != nil {
		return nil, err
	}
	model, _ := f.String("tokenizer.ggml.model")
	var d ggufDefaults
	switch model {
	case "llama":
		d = t.ggufSentencePiece(f)
	case "gpt2":
		if d, err = t.ggufByteLevelBPE(f); err != nil {
			return nil, err
		}
	case "bert":
		d = t.ggufWordPiece()
	default:
		return nil, fmt.Errorf("tokenizer: unsupported tokenizer.ggml.model %q", model)
	}
	t.ggufSpecials(f, model == "bert", d)
	t.finish(t.ggufRender(f))
	return t, nil
}

// ggufDefaults is what a tokenizer model adds around a text unless the
// file says otherwise.
type ggufDefaults struct{ addBOS, addSEP bool }

// ggufVocab reads the tokens, their types and scores.
func ggufVocab(f *gguf.File) (*Tokenizer, error) {
	tokens, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(tokens) == 0 {
		return nil, fmt.Errorf("tokenizer: GGUF has no tokenizer.ggml.tokens")
	}
	n := len(tokens)
	tokens = slices.Clone(tokens)
	for i, p := range tokens {
		if p == "" {
			tokens[i] = "[EMPTY_" + strconv.Itoa(i) + "]" // llama.cpp's stand-in
		}
	}
	t := &Tokenizer{
		pieces: tokens,
		kinds:  make([]tokenKind, n),
		scores: make([]float32, n),
		bos:    -1, eos: -1, unk: -1,
	}
	if types, ok := f.Int32s("tokenizer.ggml.token_type"); ok {
		if len(types) != n {
			return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(types), n)
		}
		for i, ty := range types {
			k, ok := ggufKinds[ty]
			if !ok {
				k = kindUnused
			}
			t.kinds[i] = k
		}
	}
	if scores, ok := f.Float32s("tokenizer.ggml.scores"); ok {
		if len(scores) != n {
			return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(scores), n)
		}
		copy(t.scores, scores)
	}
	t.ids = make(map[string]int, n)
	for i, p := range tokens {
		t.ids[p] = i // a later duplicate wins, as in llama.cpp's token_to_id
	}
	for i := range t.byteIDs {
		t.byteIDs[i] = -1
	}
	return t, nil
}

// ggufSentencePiece sets up tokenizer model "llama" with llama.cpp's
// defaults for SentencePiece vocabularies.
func (t *Tokenizer) ggufSentencePiece(f *gguf.File) ggufDefaults {
	t.model = modelSPM
	t.bos, t.eos, t.unk = 1, 2, 0
	t.spacePrefix = true
	if v, ok := f.Bool("tokenizer.ggml.add_space_prefix"); ok {
		t.spacePrefix = v
	}
	if t.spacePrefix {
		t.strip = stripFirstToken
	}
	for b := 0; b < 256; b++ {
		if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			t.byteIDs[b] = id
		} else if id, ok := t.ids[string([]byte{byte(b)})]; ok {
			t.byteIDs[b] = id
		}
	}
	return ggufDefaults{addBOS: true}
}

// ggufByteLevelBPE sets up tokenizer model "gpt2": byte-level BPE with
// the pre-tokenizer tokenizer.ggml.pre names and the merges.
func (t *Tokenizer) ggufByteLevelBPE(f *gguf.File) (ggufDefaults, error) {
	t.model = modelBPE
	t.byteLevel = true
	name, _ := f.String("tokenizer.ggml.pre")
	if name == "" {
		name = "default" // llama.cpp's choice for files that predate the key
	}
	if name == "kimi-k2" || name == "afmoe" {
		// llama.cpp splits these with hand-written code, not regexes.
		return ggufDefaults{}, fmt.Errorf("tokenizer: pre-tokenizer %q is not supported", name)
	}
	pre, ok := ggufPres[name]
	if !ok {
		// llama.cpp warns and uses its default pre-tokenizer.
		pre = preDefault
	}
	t.pre = mustSplits(pre.patterns...)
	t.ignoreMerges = pre.ignoreMerges
	merges, _ := f.Strings("tokenizer.ggml.merges")
	err := t.addMerges(len(merges), func(rank int) (string, string, error) {
		// llama.cpp splits at the first space after the first byte, so
		// that a merge may start with a space character.
		m := merges[rank]
		i := strings.IndexByte(m[min(1, len(m)):], ' ')
		if i < 0 {
			return "", "", fmt.Errorf("tokenizer: malformed merge %q", m)
		}
		i += min(1, len(m))
		return m[:i], m[i+1:], nil
	})
	if err != nil {
		return ggufDefaults{}, err
	}
	for b := 0; b < 256; b++ {
		if id, ok := t.ids[string(byteToRune[b])]; ok {
			t.byteIDs[b] = id
		}
	}
	return ggufDefaults{addBOS: pre.addBOS}, nil
}

// ggufWordPiece sets up tokenizer model "bert" with llama.cpp's defaults
// for WordPiece vocabularies: [CLS] text [SEP].
func (t *Tokenizer) ggufWordPiece() ggufDefaults {
	t.model = modelWPM
	t.bos, t.unk = 101, 100
	for _, p := range t.pieces {
		t.maxTokenLen = max(t.maxTokenLen, len(p))
	}
	return ggufDefaults{addBOS: true, addSEP: true}
}

// ggufSpecials reads the special token ids and whether BOS, EOS and (for
// WordPiece) SEP are added around a text.
func (t *Tokenizer) ggufSpecials(f *gguf.File, bert bool, d ggufDefaults) {
	n := len(t.pieces)
	tokenID := func(key string, def int) int {
		v, ok := f.Uint(key)
		if !ok {
			return def
		}
		if v >= uint64(n) {
			return -1 // llama.cpp writes 0xFFFFFFFF for "none"
		}
		return int(v)
	}
	sep := -1
	if bert {
		// Older BERT conversions name the [CLS] that starts a sequence so.
		t.bos = tokenID("tokenizer.ggml.cls_token_id", t.bos)
		sep = tokenID("tokenizer.ggml.seperator_token_id", 102) // sic: llama.cpp's key
	}
	t.bos = tokenID("tokenizer.ggml.bos_token_id", t.bos)
	t.eos = tokenID("tokenizer.ggml.eos_token_id", t.eos)
	t.unk = tokenID("tokenizer.ggml.unknown_token_id", t.unk)
	t.eog = map[int]bool{}
	for _, key := range []string{"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		if id := tokenID(key, -1); id >= 0 {
			t.eog[id] = true
		}
	}
	addBOS, addEOS, addSEP := d.addBOS, false, d.addSEP
	if v, ok := f.Bool("tokenizer.ggml.add_bos_token"); ok {
		addBOS = v
	}
	if v, ok := f.Bool("tokenizer.ggml.add_eos_token"); ok {
		addEOS = v
	}
	if addBOS && t.bos >= 0 {
		t.prefixIDs = []int{t.bos}
	}
	if v, ok := f.Bool("tokenizer.ggml.add_sep_token"); ok {
		addSEP = v
	}
	if addEOS && t.eos >= 0 {
		t.suffixIDs = []int{t.eos}
	}
	if addSEP && sep >= 0 {
		t.suffixIDs = append(t.suffixIDs, sep)
	}
}

// ggufRender sets each token's rendered text and returns the tokens the
// splitter matches in text (control, unknown and user-defined ones).
func (t *Tokenizer) ggufRender(f *gguf.File) []addedToken {
	// llama.cpp makes Phi-3's special tokens swallow the whitespace after
	// them, by model name (its chat template puts a newline after each).
	name, _ := f.String("general.name")
	name = strings.ToLower(name)
	phi3 := strings.Contains(name, "phi-3") || strings.Contains(name, "phi3")

	t.render = make([]string, len(t.pieces))
	var added []addedToken
	for id, p := range t.pieces {
		switch t.kinds[id] {
		case kindNormal:
			if t.model != modelBPE {
				t.render[id] = strings.ReplaceAll(p, "▁", " ")
			} else {
				t.render[id] = byteLevelDecode(p)
			}
		case kindByte:
			if t.model == modelSPM {
				t.render[id] = byteTokenText(p)
			} else {
				t.render[id] = byteLevelDecode(p)
			}
		case kindControl, kindUnknown, kindUserDefined:
			t.render[id] = p
			rstrip := phi3 && p != "<unk>" && p != "<s>" && p != "<|endoftext|>"
			added = append(added, addedToken{text: p, id: id, special: t.kinds[id] != kindUserDefined, rstrip: rstrip})
		}
	}
	return added
}

// addMerges records n merges, rank by rank, of the vocabulary strings
// pair(rank) returns; merges whose parts or result are not tokens cannot
// apply and are skipped. The first error (by rank) is returned.
//
// Resolving the strings to ids is three lookups in a large map per merge,
// mostly cache misses, and is what a 128k-vocabulary load spends its time
// on; it runs on all cores, and only the table inserts, which decide which
// rank of a pair listed twice wins, run in rank order.
func (t *Tokenizer) addMerges(n int, pair func(rank int) (a, b string, err error)) error {
	t.merges = newMergeTable(n)
	ids := make([][3]int32, n)
	workers := min(runtime.GOMAXPROCS(0), max(1, n/4096))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var buf []byte
			for rank := w * n / workers; rank < (w+1)*n/workers; rank++ {
				a, b, err := pair(rank)
				if err != nil {
					errs[w] = err
					return
				}
				ia, ok1 := t.ids[a]
				ib, ok2 := t.ids[b]
				buf = append(append(buf[:0], a...), b...)
				ir, ok3 := t.ids[string(buf)]
				if !ok1 || !ok2 || !ok3 {
					ids[rank] = [3]int32{-1}
					continue
				}
				ids[rank] = [3]int32{int32(ia), int32(ib), int32(ir)}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // workers hold ranks in order
		}
	}
	for rank, id := range ids {
		if id[0] >= 0 {
			// The first (highest-priority) rank of a pair listed twice wins.
			t.merges.add(id[0], id[1], merge{rank: int32(rank), id: id[2]})
		}
	}
	return nil
}

// byteTokenText decodes a "<0xXX>" piece to its byte; other text is kept.
func byteTokenText(p string) string {
	if len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>' {
		if b, err := strconv.ParseUint(p[3:5], 16, 8); err == nil {
			return string([]byte{byte(b)})
		}
	}
	return p
}
