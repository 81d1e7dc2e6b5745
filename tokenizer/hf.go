package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// FromHFDir loads tokenizer.json from a Hugging Face model folder, with
// tokenizer_config.json (BOS/EOS use, special tokens) and
// generation_config.json (end-of-generation ids) when present.
func FromHFDir(dir string) (*Tokenizer, error) {
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	t, err := FromTokenizerJSON(tj, cfg)
	if err != nil {
		return nil, err
	}
	gen, err := os.ReadFile(filepath.Join(dir, "generation_config.json"))
	if err == nil {
		var g struct {
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if json.Unmarshal(gen, &g) == nil {
			for _, id := range intOrList(g.EOS) {
				if id >= 0 && id < t.VocabSize() {
					t.eog[id] = true
				}
			}
		}
	}
	return t, nil
}

// intOrList reads a JSON integer or list of integers.
func intOrList(raw json.RawMessage) []int {
	var one int
	if json.Unmarshal(raw, &one) == nil {
		return []int{one}
	}
	var many []int
	json.Unmarshal(raw, &many)
	return many
}

type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type hfTokenizer struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         hfModel         `json:"model"`
}

type hfModel struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ByteFallback            bool            `json:"byte_fallback"`
	FuseUnk                 bool            `json:"fuse_unk"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
}

type hfConfig struct {
	AddBOS             *bool                   `json:"add_bos_token"`
	AddEOS             *bool                   `json:"add_eos_token"`
	BOS                json.RawMessage         `json:"bos_token"`
	EOS                json.RawMessage         `json:"eos_token"`
	AddedTokensDecoder map[string]hfAddedToken `json:"added_tokens_decoder"`
}

// tokenText reads a tokenizer_config.json token: a string, or an object
// with "content"; "" for null.
func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	json.Unmarshal(raw, &o)
	return o.Content
}

// isNull reports whether an optional JSON member is absent or null.
func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// FromTokenizerJSON builds a tokenizer from the contents of a Hugging Face
// tokenizer.json and, optionally (nil), tokenizer_config.json. Supported:
// BPE models (byte-level or with byte fallback) and the normalizers,
// pre-tokenizers, post-processors and decoders such vocabularies use;
// anything else is an error rather than a silent approximation.
func FromTokenizerJSON(tokenizerJSON, tokenizerConfigJSON []byte) (*Tokenizer, error) {
	hf, cfg, vocab, err := parseHFFiles(tokenizerJSON, tokenizerConfigJSON)
	if err != nil {
		return nil, err
	}
	added, err := hfAddedTokens(hf.AddedTokens, cfg.AddedTokensDecoder)
	if err != nil {
		return nil, err
	}
	t, err := newHFVocab(&hf.Model, vocab, added)
	if err != nil {
		return nil, err
	}
	decode, err := t.hfPipeline(hf)
	if err != nil {
		return nil, err
	}
	addedToks := t.addHFTokens(added, decode)
	if !isNull(hf.PostProcessor) {
		if err := t.parsePostProcessor(hf.PostProcessor); err != nil {
			return nil, err
		}
	}
	t.hfSpecials(cfg)
	t.finish(addedToks)
	return t, nil
}

// parseHFFiles decodes tokenizer.json and tokenizer_config.json (nil:
// none) and the model's vocabulary, refusing models other than BPE.
func parseHFFiles(tokenizerJSON, tokenizerConfigJSON []byte) (*hfTokenizer, *hfConfig, map[string]int, error) {
	var hf hfTokenizer
	if err := json.Unmarshal(tokenizerJSON, &hf); err != nil {
		return nil, nil, nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	var cfg hfConfig
	if len(tokenizerConfigJSON) > 0 {
		if err := json.Unmarshal(tokenizerConfigJSON, &cfg); err != nil {
			return nil, nil, nil, fmt.Errorf("tokenizer_config.json: %w", err)
		}
	}
	m := &hf.Model
	if m.Type == "" && !isNull(m.Merges) {
		m.Type = "BPE" // files written before "type" existed
	}
	if m.Type != "BPE" {
		return nil, nil, nil, fmt.Errorf("tokenizer.json: unsupported model type %q", m.Type)
	}
	if (m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "") ||
		(m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "") {
		return nil, nil, nil, errors.New("tokenizer.json: BPE subword prefixes/suffixes are not supported")
	}
	var vocab map[string]int
	if err := json.Unmarshal(m.Vocab, &vocab); err != nil {
		return nil, nil, nil, fmt.Errorf("tokenizer.json: model.vocab: %w", err)
	}
	return &hf, &cfg, vocab, nil
}

// hfAddedTokens is tokenizer.json's list of added tokens, plus
// tokenizer_config.json's added_tokens_decoder for ids the former lacks.
func hfAddedTokens(added []hfAddedToken, decoder map[string]hfAddedToken) ([]hfAddedToken, error) {
	seen := map[int]bool{}
	for _, a := range added {
		seen[a.ID] = true
	}
	for key, a := range decoder {
		id, err := strconv.Atoi(key)
		if err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: added token id %q", key)
		}
		if !seen[id] {
			a.ID = id
			added = append(added, a)
			seen[id] = true
		}
	}
	return added, nil
}

// newHFVocab makes a BPE tokenizer holding the model's vocabulary, with
// room for the added tokens' ids.
func newHFVocab(m *hfModel, vocab map[string]int, added []hfAddedToken) (*Tokenizer, error) {
	// Ids must be dense enough to index by; this also bounds the memory a
	// malformed file can make us allocate.
	maxID := -1
	for s, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer.json: negative id for %q", s)
		}
		maxID = max(maxID, id)
	}
	for _, a := range added {
		if a.ID < 0 {
			return nil, fmt.Errorf("tokenizer.json: negative id for added token %q", a.Content)
		}
		maxID = max(maxID, a.ID)
	}
	if maxID < 0 {
		return nil, errors.New("tokenizer.json: empty vocabulary")
	}
	if maxID >= 2*(len(vocab)+len(added))+1024 {
		return nil, fmt.Errorf("tokenizer.json: ids up to %d for %d tokens", maxID, len(vocab)+len(added))
	}
	n := maxID + 1
	t := &Tokenizer{
		model:  modelBPE,
		pieces: make([]string, n),
		kinds:  make([]tokenKind, n),
		render: make([]string, n),
		ids:    make(map[string]int, n),
		bos:    -1, eos: -1, unk: -1,
		eog:          map[int]bool{},
		byteFallback: m.ByteFallback,
		fuseUnk:      m.FuseUnk,
		ignoreMerges: m.IgnoreMerges,
	}
	for i := range t.kinds {
		t.kinds[i] = kindUnused // holes stay unused
	}
	for s, id := range vocab {
		// Two strings with one id: keep one, the same one every time.
		if t.kinds[id] == kindNormal && t.pieces[id] < s {
			t.ids[s] = id
			continue
		}
		t.pieces[id] = s
		t.kinds[id] = kindNormal
		t.ids[s] = id
	}
	if m.UnkToken != nil {
		if id, ok := t.ids[*m.UnkToken]; ok {
			t.unk = id
		}
	}
	for i := range t.byteIDs {
		t.byteIDs[i] = -1
	}
	return t, nil
}

// hfPipeline reads the merges, normalizer, pre-tokenizer and decoder,
// finds the byte tokens and renders every vocabulary token; it returns
// the decoder for the added tokens.
func (t *Tokenizer) hfPipeline(hf *hfTokenizer) (func(string) string, error) {
	if m := hf.Model.Merges; !isNull(m) {
		pairs, err := parseMerges(m)
		if err != nil {
			return nil, err
		}
		err = t.addMerges(len(pairs), func(rank int) (string, string, error) { return pairs[rank][0], pairs[rank][1], nil })
		if err != nil {
			return nil, err
		}
	}
	if !isNull(hf.Normalizer) {
		f, err := parseNormalizer(hf.Normalizer)
		if err != nil {
			return nil, err
		}
		t.normalize = f
	}
	if !isNull(hf.PreTokenizer) {
		if err := t.parsePreTokenizer(hf.PreTokenizer); err != nil {
			return nil, err
		}
	}
	if t.byteLevel {
		for b := 0; b < 256; b++ {
			if id, ok := t.ids[string(byteToRune[b])]; ok {
				t.byteIDs[b] = id
			}
		}
	} else if t.byteFallback {
		for b := 0; b < 256; b++ {
			if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.byteIDs[b] = id
				t.kinds[id] = kindByte
			}
		}
	}
	decode, err := t.parseDecoder(hf.Decoder)
	if err != nil {
		return nil, err
	}
	for id, p := range t.pieces {
		if t.kinds[id] != kindUnused {
			t.render[id] = decode(p)
		}
	}
	return decode, nil
}

// addHFTokens enters the added tokens (control when special, else
// user-defined) and returns them for the splitter.
func (t *Tokenizer) addHFTokens(added []hfAddedToken, decode func(string) string) []addedToken {
	var addedToks []addedToken
	for _, a := range added {
		if a.Content == "" {
			continue
		}
		t.pieces[a.ID] = a.Content
		// Hugging Face passes added tokens through the decoder too (it
		// turns Gemma's "▁▁" space tokens into spaces).
		t.render[a.ID] = decode(a.Content)
		t.ids[a.Content] = a.ID
		t.kinds[a.ID] = kindUserDefined
		if a.Special {
			t.kinds[a.ID] = kindControl
		}
		addedToks = append(addedToks, addedToken{
			text: a.Content, id: a.ID, special: a.Special,
			lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord,
		})
	}
	return addedToks
}

// hfSpecials sets BOS and EOS from tokenizer_config.json (else from the
// post-processor's template) and, as transformers does, rebuilds the
// template from add_bos_token/add_eos_token when the config sets them.
func (t *Tokenizer) hfSpecials(cfg *hfConfig) {
	if s := tokenText(cfg.BOS); s != "" {
		if id, ok := t.ids[s]; ok {
			t.bos = id
		}
	} else if len(t.prefixIDs) > 0 {
		t.bos = t.prefixIDs[0]
	}
	if s := tokenText(cfg.EOS); s != "" {
		if id, ok := t.ids[s]; ok {
			t.eos = id
		}
	} else if len(t.suffixIDs) > 0 {
		t.eos = t.suffixIDs[len(t.suffixIDs)-1]
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
}

// parseMerges reads merges as "a b" strings (older files) or [a, b] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	// Peek at the first element rather than trying both forms: a failed
	// decode of 500k merges costs seconds.
	pairForm := false
	if b := strings.TrimLeft(string(raw), " \t\r\n"); strings.HasPrefix(b, "[") {
		pairForm = strings.HasPrefix(strings.TrimLeft(b[1:], " \t\r\n"), "[")
	}
	var strs []string
	if !pairForm && json.Unmarshal(raw, &strs) == nil {
		out := make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("tokenizer.json: malformed merge %q", s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("tokenizer.json: model.merges: %w", err)
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("tokenizer.json: merge %d has %d parts", i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// hfPattern is a Split/Replace pattern: {"String": s} or {"Regex": r}.
type hfPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func (p hfPattern) regex() (string, error) {
	switch {
	case p.Regex != nil:
		return *p.Regex, nil
	case p.String != nil:
		return quoteRegex(*p.String), nil
	}
	return "", errors.New("tokenizer.json: pattern without String or Regex")
}

// quoteRegex escapes a literal for the regex engine.
func quoteRegex(s string) string { return regexp2.Escape(s) }

type hfComponent struct {
	Type string `json:"type"`
}

func componentType(raw json.RawMessage) (string, error) {
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", err
	}
	return c.Type, nil
}

// parseNormalizer returns the text transformation a normalizer describes.
func parseNormalizer(raw json.RawMessage) (func(string) string, error) {
	typ, err := componentType(raw)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: normalizer: %w", err)
	}
	switch typ {
	case "Sequence":
		var s struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		var fs []func(string) string
		for _, r := range s.Normalizers {
			f, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Prepend":
		var p struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		return func(s string) string {
			if s == "" {
				return s
			}
			return p.Prepend + s
		}, nil
	case "Replace":
		return parseReplaceNormalizer(raw)
	case "Strip":
		var p struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		return func(s string) string {
			if p.Left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if p.Right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("tokenizer.json: unsupported normalizer %q", typ)
}

// parseReplaceNormalizer reads a Replace normalizer: a literal or a
// regex pattern and its replacement.
func parseReplaceNormalizer(raw json.RawMessage) (func(string) string, error) {
	var r struct {
		Pattern hfPattern `json:"pattern"`
		Content string    `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Pattern.String != nil {
		old := *r.Pattern.String
		if old == "" {
			return nil, errors.New("tokenizer.json: Replace with an empty pattern")
		}
		return func(s string) string { return strings.ReplaceAll(s, old, r.Content) }, nil
	}
	pat, err := r.Pattern.regex()
	if err != nil {
		return nil, err
	}
	re, err := compileRegex(pat)
	if err != nil {
		return nil, err
	}
	return func(s string) string {
		out, err := re.Replace(s, r.Content, -1, -1)
		if err != nil {
			return s
		}
		return out
	}, nil
}

// parsePreTokenizer appends the pre-tokenizer steps to t.pre.
func (t *Tokenizer) parsePreTokenizer(raw json.RawMessage) error {
	typ, err := componentType(raw)
	if err != nil {
		return fmt.Errorf("tokenizer.json: pre_tokenizer: %w", err)
	}
	if t.byteLevel {
		// The byte mapping is applied once, after all steps; a step after
		// ByteLevel would see mapped text in Hugging Face.
		return errors.New("tokenizer.json: pre-tokenizer steps after ByteLevel are not supported")
	}
	switch typ {
	case "Sequence":
		var s struct {
			Pre []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		for _, r := range s.Pre {
			if err := t.parsePreTokenizer(r); err != nil {
				return err
			}
		}
		return nil
	case "Split":
		return t.parseSplit(raw)
	case "ByteLevel":
		s := struct {
			AddPrefixSpace bool `json:"add_prefix_space"`
			UseRegex       bool `json:"use_regex"`
		}{UseRegex: true} // Hugging Face's default
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		if s.AddPrefixSpace {
			t.pre = append(t.pre, prefixSpace{})
		}
		if s.UseRegex {
			t.pre = append(t.pre, mustSplits(patGPT2)...)
		}
		t.byteLevel = true
		return nil
	case "Digits":
		var s struct {
			Individual bool `json:"individual_digits"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		if s.Individual {
			t.pre = append(t.pre, mustSplits(`\p{N}`)...)
		} else {
			t.pre = append(t.pre, mustSplits(`\p{N}+`)...)
		}
		return nil
	}
	return fmt.Errorf("tokenizer.json: unsupported pre_tokenizer %q", typ)
}

// parseSplit reads a Split pre-tokenizer.
func (t *Tokenizer) parseSplit(raw json.RawMessage) error {
	var s struct {
		Pattern  hfPattern `json:"pattern"`
		Behavior string    `json:"behavior"`
		Invert   bool      `json:"invert"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	b, ok := splitBehaviors[s.Behavior]
	if !ok {
		return fmt.Errorf("tokenizer.json: unknown split behavior %q", s.Behavior)
	}
	pat, err := s.Pattern.regex()
	if err != nil {
		return err
	}
	sp, err := newRegexSplit(pat, b, s.Invert)
	if err != nil {
		return err
	}
	if lit := s.Pattern.String; lit != nil && *lit != "" && s.Pattern.Regex == nil {
		sp.scan = scanLiteral(*lit)
	}
	t.pre = append(t.pre, sp)
	return nil
}

// parsePostProcessor reads the tokens added around a single sequence.
func (t *Tokenizer) parsePostProcessor(raw json.RawMessage) error {
	typ, err := componentType(raw)
	if err != nil {
		return fmt.Errorf("tokenizer.json: post_processor: %w", err)
	}
	switch typ {
	case "ByteLevel":
		return nil // it only adjusts offsets
	case "Sequence":
		var s struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		for _, r := range s.Processors {
			if err := t.parsePostProcessor(r); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		return t.parseTemplateProcessing(raw)
	case "BertProcessing", "RobertaProcessing":
		var s struct {
			Sep []json.RawMessage `json:"sep"`
			Cls []json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		id := func(p []json.RawMessage) (int, error) {
			var v int
			if len(p) != 2 || json.Unmarshal(p[1], &v) != nil || v < 0 || v >= len(t.pieces) {
				return 0, errors.New("tokenizer.json: malformed cls/sep")
			}
			return v, nil
		}
		cls, err := id(s.Cls)
		if err != nil {
			return err
		}
		sep, err := id(s.Sep)
		if err != nil {
			return err
		}
		t.prefixIDs = append(t.prefixIDs, cls)
		t.suffixIDs = append(t.suffixIDs, sep)
		return nil
	}
	return fmt.Errorf("tokenizer.json: unsupported post_processor %q", typ)
}

// parseTemplateProcessing reads a TemplateProcessing post-processor's
// single-sequence template: the special tokens before the sequence go
// first, those after it last.
func (t *Tokenizer) parseTemplateProcessing(raw json.RawMessage) error {
	var s struct {
		Single []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID string `json:"id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	seenSeq := false
	for _, it := range s.Single {
		switch {
		case it.Sequence != nil:
			seenSeq = true
		case it.SpecialToken != nil:
			st, ok := s.SpecialTokens[it.SpecialToken.ID]
			if !ok {
				return fmt.Errorf("tokenizer.json: template token %q undefined", it.SpecialToken.ID)
			}
			for _, id := range st.IDs {
				if id < 0 || id >= len(t.pieces) {
					return fmt.Errorf("tokenizer.json: template id %d out of range", id)
				}
			}
			if seenSeq {
				t.suffixIDs = append(t.suffixIDs, st.IDs...)
			} else {
				t.prefixIDs = append(t.prefixIDs, st.IDs...)
			}
		}
	}
	return nil
}

// parseDecoder returns how one model token renders. Hugging Face decoders
// work on the token list, but the supported ones act on each token alone,
// apart from stripping the first space, which sets t.strip.
func (t *Tokenizer) parseDecoder(raw json.RawMessage) (func(string) string, error) {
	if isNull(raw) {
		return nil, errors.New("tokenizer.json: no decoder")
	}
	var steps []func(string) string
	fused := false
	var add func(raw json.RawMessage) error
	add = func(raw json.RawMessage) error {
		typ, err := componentType(raw)
		if err != nil {
			return fmt.Errorf("tokenizer.json: decoder: %w", err)
		}
		switch typ {
		case "Sequence":
			var s struct {
				Decoders []json.RawMessage `json:"decoders"`
			}
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			for _, r := range s.Decoders {
				if err := add(r); err != nil {
					return err
				}
			}
		case "ByteLevel":
			steps = append(steps, byteLevelDecode)
		case "ByteFallback":
			steps = append(steps, byteTokenText)
		case "Fuse":
			fused = true // joining tokens changes nothing for concatenation
		case "Replace":
			step, err := replaceDecoder(raw, fused)
			if err != nil {
				return err
			}
			steps = append(steps, step)
		case "Strip":
			var s struct {
				Content string `json:"content"`
				Start   int    `json:"start"`
				Stop    int    `json:"stop"`
			}
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			if !fused || s.Content != " " || s.Start != 1 || s.Stop != 0 {
				return errors.New("tokenizer.json: only Strip(' ', 1, 0) after Fuse is supported")
			}
			t.strip = stripOutput
		case "Metaspace":
			step, err := t.parseMetaspace(raw)
			if err != nil {
				return err
			}
			steps = append(steps, step)
		default:
			return fmt.Errorf("tokenizer.json: unsupported decoder %q", typ)
		}
		return nil
	}
	if err := add(raw); err != nil {
		return nil, err
	}
	return func(s string) string {
		for _, f := range steps {
			s = f(s)
		}
		return s
	}, nil
}

// replaceDecoder reads a Replace decoder, which must replace a literal
// (one character after Fuse).
func replaceDecoder(raw json.RawMessage, fused bool) (func(string) string, error) {
	var r struct {
		Pattern hfPattern `json:"pattern"`
		Content string    `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Pattern.String == nil || *r.Pattern.String == "" {
		return nil, errors.New("tokenizer.json: decoder Replace needs a String pattern")
	}
	old := *r.Pattern.String
	if fused && len([]rune(old)) != 1 {
		// On the fused text a longer pattern could span tokens.
		return nil, errors.New("tokenizer.json: decoder Replace after Fuse needs a one-character pattern")
	}
	return func(s string) string { return strings.ReplaceAll(s, old, r.Content) }, nil
}

// parseMetaspace reads a Metaspace decoder: its replacement character
// becomes a space, and the first token loses its leading space unless the
// prepend scheme is "never".
func (t *Tokenizer) parseMetaspace(raw json.RawMessage) (func(string) string, error) {
	var s struct {
		Replacement    string  `json:"replacement"`
		PrependScheme  *string `json:"prepend_scheme"`
		AddPrefixSpace *bool   `json:"add_prefix_space"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s.Replacement == "" {
		s.Replacement = "▁"
	}
	rep := s.Replacement
	strip := true
	if s.PrependScheme != nil {
		strip = *s.PrependScheme != "never"
	} else if s.AddPrefixSpace != nil {
		strip = *s.AddPrefixSpace
	}
	if strip {
		t.strip = stripFirstToken
	}
	return func(p string) string { return strings.ReplaceAll(p, rep, " ") }, nil
}
