// Package tokenizer turns text into token ids and back exactly as the
// reference implementation of each vocabulary does: llama.cpp for
// vocabularies read from GGUF (tokenizer.ggml.*), Hugging Face tokenizers
// for tokenizer.json, the sentencepiece library for tokenizer.model.
//
// Three models exist: SentencePiece-style merging by score (GGUF
// tokenizer.ggml.model = llama, SentencePiece BPE models), BPE merging by
// rank (byte-level BPE as in GPT-2/Qwen/Llama 3, and BPE with byte
// fallback from tokenizer.json), and WordPiece (GGUF model = bert).
// Load picks the loader for a path. A Tokenizer is immutable after
// loading and safe for concurrent use.
package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenKind is a token's role, after llama.cpp's token types.
type tokenKind uint8

const (
	kindNormal      tokenKind = iota // text, decoded by the model's decoder
	kindUnknown                      // the unknown token
	kindControl                      // special token (BOS, EOS, chat markers)
	kindUserDefined                  // added text token, matched verbatim
	kindUnused                       // reserved hole: decodes to nothing
	kindByte                         // <0xXX> byte-fallback token
)

// modelType selects the merge algorithm.
type modelType uint8

const (
	modelSPM modelType = iota // merge the adjacent pair whose result has the best score
	modelBPE                  // merge the adjacent pair with the lowest merge rank
	modelWPM                  // WordPiece: greedy longest match within each word (BERT)
)

// stripMode says which leading space Decode removes: SentencePiece
// vocabularies put a "▁" before the text, and decoding takes it off again.
type stripMode uint8

const (
	stripNone       stripMode = iota
	stripFirstToken           // llama.cpp, Hugging Face Metaspace decoder: one space off the first token's text
	stripOutput               // Hugging Face Strip decoder after Fuse: one space off the start of the output
)

// EncodeOptions controls Encode.
type EncodeOptions struct {
	// AddSpecial adds the BOS/EOS (or template) tokens the vocabulary asks
	// for (GGUF add_bos_token/add_eos_token, tokenizer_config.json, the
	// tokenizer.json post-processor).
	AddSpecial bool
	// ParseSpecial recognises the text of special (control) tokens such as
	// "<|bos|>" in the input. Non-special added tokens are always recognised,
	// as in llama.cpp and Hugging Face.
	ParseSpecial bool
}

// Tokenizer encodes and decodes text for one vocabulary.
type Tokenizer struct {
	model  modelType
	pieces []string       // raw vocabulary strings by id
	kinds  []tokenKind    // role of each id
	scores []float32      // SentencePiece merge scores by id
	ids    map[string]int // vocabulary string -> id (GGUF: a later duplicate wins, as in llama.cpp; tokenizer.json: added tokens win)
	render []string       // what Decode emits for each id

	bos, eos, unk int
	eog           map[int]bool
	prefixIDs     []int // added before the text when AddSpecial
	suffixIDs     []int // added after the text when AddSpecial

	specials *specialMatcher // added tokens recognised in the input

	spacePrefix bool      // SentencePiece: a space before text that starts the input or follows a special token
	strip       stripMode // the leading space decoding removes

	// sentencePiece selects the sentencepiece library's semantics over
	// llama.cpp's for SPM vocabularies: the space prefix only at the start
	// of the input, merges only into normal/user-defined/unused pieces,
	// unused pieces split back, unknown characters as one unknown token.
	sentencePiece bool

	maxTokenLen int // WordPiece: the longest vocabulary string, in bytes

	// BPE settings.
	normalize    func(string) string // tokenizer.json normalizer; nil if none
	pre          []preTokenizer      // applied in order, each refining the previous pieces
	byteLevel    bool                // words are mapped to GPT-2's byte alphabet before merging
	merges       mergeTable          // (left id, right id) -> rank and result
	ignoreMerges bool                // a word that is itself a token is not merged (Llama 3)
	byteFallback bool                // characters missing from the vocabulary become <0xXX> tokens
	fuseUnk      bool                // consecutive unknown characters give one unknown token
	byteIDs      [256]int            // byte-level: id of each byte's character; byte fallback: id of <0xXX>
	cache        *wordCache
}

// merge is the outcome of merging one pair of tokens.
type merge struct {
	rank int32
	id   int32
}

// mergeTable maps a pair of token ids to its merge: an open-addressing
// hash table, which looks pairs up (the inner loop of BPE) about twice as
// fast as a Go map.
type mergeTable struct {
	slots []mergeSlot // len is a power of two, at most half full
	shift uint        // 64 - log2(len(slots))
	n     int
}

type mergeSlot struct {
	key uint64 // pair key + 1; 0 marks an empty slot
	m   merge
}

func newMergeTable(n int) mergeTable {
	size, shift := 8, uint(61)
	for size < 2*n {
		size *= 2
		shift--
	}
	return mergeTable{slots: make([]mergeSlot, size), shift: shift}
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// slot returns the slot of the pair (a, b), or the empty slot where it
// belongs.
func (t *mergeTable) slot(a, b int32) *mergeSlot {
	k := pairKey(a, b) + 1
	mask := uint64(len(t.slots) - 1)
	for i := (k * 0x9E3779B97F4A7C15) >> t.shift; ; i = (i + 1) & mask {
		if s := &t.slots[i]; s.key == k || s.key == 0 {
			return s
		}
	}
}

func (t *mergeTable) get(a, b int32) (merge, bool) {
	if t.n == 0 {
		return merge{}, false
	}
	s := t.slot(a, b)
	return s.m, s.key != 0
}

// add records the merge of (a, b) unless the pair has one already.
func (t *mergeTable) add(a, b int32, m merge) {
	if s := t.slot(a, b); s.key == 0 {
		s.key = pairKey(a, b) + 1
		s.m = m
		t.n++
	}
}

// VocabSize returns the number of token ids.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// Piece returns the raw vocabulary string of id ("" when out of range).
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// BOS returns the beginning-of-sequence id, or -1.
func (t *Tokenizer) BOS() int { return t.bos }

// EOS returns the end-of-sequence id, or -1.
func (t *Tokenizer) EOS() int { return t.eos }

// IsEOG reports whether id ends generation (EOS, end-of-turn and the like).
func (t *Tokenizer) IsEOG(id int) bool { return t.eog[id] }

// EOGs returns the end-of-generation ids in increasing order.
func (t *Tokenizer) EOGs() []int {
	var out []int
	for id := range t.pieces {
		if t.eog[id] {
			out = append(out, id)
		}
	}
	return out
}

// AddBOS reports whether Encode with AddSpecial puts BOS first.
func (t *Tokenizer) AddBOS() bool {
	return t.bos >= 0 && len(t.prefixIDs) > 0 && t.prefixIDs[0] == t.bos
}

// AddEOS reports whether Encode with AddSpecial puts EOS last.
func (t *Tokenizer) AddEOS() bool {
	return t.eos >= 0 && len(t.suffixIDs) > 0 && t.suffixIDs[len(t.suffixIDs)-1] == t.eos
}

// IsSpecial reports whether id is a control token (rendered as its text
// by Decode, skipped by DecodeOptions.SkipSpecial).
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < len(t.kinds) && (t.kinds[id] == kindControl || t.kinds[id] == kindUnknown)
}

// TokenID returns the id of a vocabulary string or added token text.
func (t *Tokenizer) TokenID(piece string) (int, bool) {
	id, ok := t.ids[piece]
	return id, ok
}

// Encode returns the token ids of text.
func (t *Tokenizer) Encode(text string, opt EncodeOptions) []int {
	var out []int
	if opt.AddSpecial {
		out = append(out, t.prefixIDs...)
	}
	afterSpecial := true // the start of the input counts as following a special token
	atStart := true
	t.specials.split(text, opt.ParseSpecial, func(frag string, id int) {
		if id >= 0 {
			if atStart && t.sentencePiece && t.spacePrefix && !t.IsSpecial(id) {
				// sentencepiece adds the dummy prefix before matching
				// user-defined pieces, so it stands alone before one.
				out = t.spmEncode(out, "▁")
			}
			out = append(out, id)
			afterSpecial, atStart = true, false
			return
		}
		out = t.encodeText(out, frag, afterSpecial, atStart)
		afterSpecial, atStart = false, false
	})
	if opt.AddSpecial {
		out = append(out, t.suffixIDs...)
	}
	return out
}

// encodeText encodes text that holds no added tokens; atStart says it
// begins the input, afterSpecial that it begins it or follows an added token.
func (t *Tokenizer) encodeText(out []int, text string, afterSpecial, atStart bool) []int {
	switch t.model {
	case modelSPM:
		prefix := afterSpecial
		if t.sentencePiece {
			prefix = atStart
			text = replaceInvalidBytes(text)
		}
		if t.spacePrefix && prefix {
			text = " " + text
		}
		return t.spmEncode(out, strings.ReplaceAll(text, " ", "▁"))
	case modelWPM:
		return t.wpmEncode(out, text)
	}
	if t.normalize != nil {
		text = t.normalize(text)
	}
	words := []string{text}
	for _, p := range t.pre {
		words = p.split(words)
	}
	for _, w := range words {
		if w != "" {
			out = t.bpeWord(out, w)
		}
	}
	return out
}

// DecodeOptions controls DecodeWith and stream decoders.
type DecodeOptions struct {
	// SkipSpecial leaves control tokens out instead of rendering their text.
	SkipSpecial bool
	// Continuation decodes ids that continue an earlier sequence (generated
	// text after a prompt): the leading space that SentencePiece decoding
	// drops at the start of a sequence is kept.
	Continuation bool
}

// Decode returns the text of ids with special tokens rendered as their
// text. The result is the exact bytes the tokens stand for, which need not
// be valid UTF-8 (a byte token sequence may be cut off); ids out of range
// render as nothing.
func (t *Tokenizer) Decode(ids []int) string { return t.DecodeWith(ids, DecodeOptions{}) }

// DecodeWith is Decode with options.
func (t *Tokenizer) DecodeWith(ids []int, opt DecodeOptions) string {
	var b strings.Builder
	st := newStripState(t, opt)
	for _, id := range ids {
		b.WriteString(st.piece(id))
	}
	return b.String()
}

// stripState applies the vocabulary's leading-space removal to a token
// stream; Decode and StreamDecoder share it so that they agree.
type stripState struct {
	t     *Tokenizer
	opt   DecodeOptions
	first bool // no token seen yet
	empty bool // nothing emitted yet
}

func newStripState(t *Tokenizer, opt DecodeOptions) stripState {
	return stripState{t: t, opt: opt, first: true, empty: true}
}

// piece returns the text of id in its place in the stream.
func (s *stripState) piece(id int) string {
	t := s.t
	first := s.first
	s.first = false
	if id < 0 || id >= len(t.render) {
		return ""
	}
	if s.opt.SkipSpecial && t.IsSpecial(id) {
		return ""
	}
	p := t.render[id]
	if !s.opt.Continuation {
		switch t.strip {
		case stripFirstToken:
			if first {
				p = strings.TrimPrefix(p, " ")
			}
		case stripOutput:
			if s.empty {
				p = strings.TrimPrefix(p, " ")
			}
		}
	}
	if p != "" {
		s.empty = false
	}
	return p
}

// addedToken is a token matched verbatim in the input before the model
// sees it (llama.cpp: control and user-defined tokens; Hugging Face:
// added_tokens).
type addedToken struct {
	text       string
	id         int
	special    bool // matched only with ParseSpecial
	lstrip     bool // swallows whitespace on its left
	rstrip     bool // swallows whitespace on its right
	singleWord bool // matched only when not inside a word
}

// specialMatcher finds added tokens in text, leftmost first and longest at
// a position (as Hugging Face's added-vocabulary matcher does). It is a
// byte trie kept in one map to stay small for vocabularies with thousands
// of added tokens.
type specialMatcher struct {
	toks  []addedToken
	edges map[uint64]int32 // node<<8 | byte -> child node
	term  []int32          // node -> index into toks, or -1
	first [256]bool        // bytes that can start a token
}

func newSpecialMatcher(toks []addedToken) *specialMatcher {
	m := &specialMatcher{edges: map[uint64]int32{}, term: []int32{-1}}
	for _, tk := range toks {
		if tk.text == "" {
			continue
		}
		node := int32(0)
		for i := 0; i < len(tk.text); i++ {
			k := uint64(node)<<8 | uint64(tk.text[i])
			next, ok := m.edges[k]
			if !ok {
				next = int32(len(m.term))
				m.term = append(m.term, -1)
				m.edges[k] = next
			}
			node = next
		}
		if m.term[node] < 0 {
			m.term[node] = int32(len(m.toks))
			m.toks = append(m.toks, tk)
		} else {
			m.toks[m.term[node]] = tk // the same text listed twice: the later entry wins
		}
		m.first[tk.text[0]] = true
	}
	return m
}

// longest returns the longest usable token starting at text[i:], or -1.
func (m *specialMatcher) longest(text string, i int, parseSpecial bool) (int, int) {
	best, bestLen := -1, 0
	node := int32(0)
	for j := i; j < len(text); j++ {
		next, ok := m.edges[uint64(node)<<8|uint64(text[j])]
		if !ok {
			break
		}
		node = next
		if k := m.term[node]; k >= 0 {
			tk := &m.toks[k]
			if (parseSpecial || !tk.special) && (!tk.singleWord || m.wordBounded(text, i, j+1)) {
				best, bestLen = int(k), j+1-i
			}
		}
	}
	return best, bestLen
}

// wordBounded reports whether text[i:j] is not glued to word characters.
func (m *specialMatcher) wordBounded(text string, i, j int) bool {
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
	if i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:i]); isWord(r) {
			return false
		}
	}
	if j < len(text) {
		if r, _ := utf8.DecodeRuneInString(text[j:]); isWord(r) {
			return false
		}
	}
	return true
}

// split calls emit for each piece of text in order: plain text fragments
// with id -1, and matched added tokens with their id.
func (m *specialMatcher) split(text string, parseSpecial bool, emit func(string, int)) {
	if m == nil || len(m.toks) == 0 {
		if text != "" {
			emit(text, -1)
		}
		return
	}
	start := 0
	for i := 0; i < len(text); {
		if !m.first[text[i]] {
			i++
			continue
		}
		k, n := m.longest(text, i, parseSpecial)
		if k < 0 {
			i++
			continue
		}
		tk := &m.toks[k]
		frag := text[start:i]
		if tk.lstrip {
			frag = strings.TrimRightFunc(frag, unicode.IsSpace)
		}
		if frag != "" {
			emit(frag, -1)
		}
		emit("", tk.id)
		i += n
		if tk.rstrip {
			for i < len(text) {
				r, w := utf8.DecodeRuneInString(text[i:])
				if !unicode.IsSpace(r) {
					break
				}
				i += w
			}
		}
		start = i
	}
	if start < len(text) {
		emit(text[start:], -1)
	}
}

// eogTexts are the end-of-turn markers llama.cpp treats as end of
// generation whatever the metadata says.
var eogTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
	"<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>",
	"<|end_of_text|>", "<end_of_utterance>",
}

// finish builds what all loaders share, once pieces, kinds, ids and
// render are filled in.
func (t *Tokenizer) finish(added []addedToken) {
	t.specials = newSpecialMatcher(added)
	if t.eog == nil {
		t.eog = map[int]bool{}
	}
	for _, s := range eogTexts {
		if id, ok := t.ids[s]; ok && t.kinds[id] == kindControl {
			t.eog[id] = true
		}
	}
	if t.eos >= 0 {
		t.eog[t.eos] = true
	}
	if t.model == modelBPE {
		t.cache = newWordCache()
	}
}

// replaceInvalidBytes replaces every byte that is not part of a valid
// UTF-8 sequence with U+FFFD, as sentencepiece's normalizer does.
func replaceInvalidBytes(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
