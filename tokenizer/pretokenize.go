package tokenizer

import (
	"fmt"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// preTokenizer cuts text into words that BPE merges independently.
type preTokenizer interface {
	split(words []string) []string
}

// splitBehavior says what becomes of the pattern matches, after Hugging
// Face's SplitDelimiterBehavior.
type splitBehavior uint8

const (
	splitIsolated           splitBehavior = iota // matches and the text between them are words
	splitRemoved                                 // matches are dropped
	splitMergedWithPrevious                      // a match joins the text before it
	splitMergedWithNext                          // a match joins the text after it
	splitContiguous                              // adjacent matches form one word
)

var splitBehaviors = map[string]splitBehavior{
	"Isolated":           splitIsolated,
	"Removed":            splitRemoved,
	"MergedWithPrevious": splitMergedWithPrevious,
	"MergedWithNext":     splitMergedWithNext,
	"Contiguous":         splitContiguous,
}

// regexSplit splits every word by a regular expression (Hugging Face Split;
// one of llama.cpp's pre-tokenizer regexes).
type regexSplit struct {
	re       *regexp2.Regexp
	scan     scanFunc // a hand-written equivalent of re, if there is one
	behavior splitBehavior
	invert   bool // the pattern matches the words rather than the delimiters
}

// compileRegex compiles a pattern with the Perl/Oniguruma-like semantics
// that Hugging Face (Oniguruma) and llama.cpp (std::regex) give these
// patterns: lookahead, Unicode \p{..} classes, Unicode \s.
func compileRegex(pattern string) (re *regexp2.Regexp, err error) {
	// The parser is not hardened against every malformed pattern that a
	// tokenizer.json may hold; a panic there must not take the server down.
	defer func() {
		if r := recover(); r != nil {
			re, err = nil, fmt.Errorf("regex %q: %v", pattern, r)
		}
	}()
	re, err = regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", pattern, err)
	}
	return re, nil
}

func newRegexSplit(pattern string, b splitBehavior, invert bool) (*regexSplit, error) {
	re, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	return &regexSplit{re: re, scan: fastScanners[pattern], behavior: b, invert: invert}, nil
}

// mustSplits compiles the built-in llama.cpp pattern lists (Isolated).
func mustSplits(patterns ...string) []preTokenizer {
	out := make([]preTokenizer, len(patterns))
	for i, p := range patterns {
		s, err := newRegexSplit(p, splitIsolated, false)
		if err != nil {
			panic(err)
		}
		out[i] = s
	}
	return out
}

type segment struct {
	start, end int
	match      bool
}

func (s *regexSplit) split(words []string) []string {
	var out []string
	for _, w := range words {
		out = s.splitOne(out, w)
	}
	return out
}

func (s *regexSplit) splitOne(out []string, w string) []string {
	if s.scan != nil && s.behavior == splitIsolated {
		// Matches and the text between them are the words: no need to
		// collect segments first.
		prev := 0
		s.scan(w, func(a, b int) {
			if a > prev {
				out = append(out, w[prev:a])
			}
			if b > a {
				out = append(out, w[a:b])
			}
			prev = b
		})
		if prev < len(w) {
			out = append(out, w[prev:])
		}
		return out
	}
	var segs []segment
	prev := 0
	add := func(a, b int) {
		if a > prev {
			segs = append(segs, segment{prev, a, s.invert})
		}
		// An empty match still cuts the text there, as in Hugging Face
		// and llama.cpp; the empty piece itself is dropped below.
		segs = append(segs, segment{a, b, !s.invert})
		prev = b
	}
	if s.scan != nil {
		s.scan(w, add)
	} else {
		s.regexMatches(w, add)
	}
	if prev < len(w) {
		segs = append(segs, segment{prev, len(w), s.invert})
	}
	for _, g := range applyBehavior(segs, s.behavior) {
		if g.end > g.start {
			out = append(out, w[g.start:g.end])
		}
	}
	return out
}

// regexMatches calls add with the byte offsets of every match of the regex.
func (s *regexSplit) regexMatches(w string, add func(a, b int)) {
	// The regex engine works on runes; offs maps rune indices back to bytes
	// so that invalid UTF-8 (decoded as U+FFFD) keeps its original bytes.
	runes := make([]rune, 0, len(w))
	offs := make([]int, 0, len(w)+1)
	for i := 0; i < len(w); {
		r, n := utf8.DecodeRuneInString(w[i:])
		runes = append(runes, r)
		offs = append(offs, i)
		i += n
	}
	offs = append(offs, len(w))
	found, err := s.re.FindAllRunesIndex(runes, -1)
	if err != nil {
		return // only a timeout can fail here; treat as no match
	}
	for _, m := range found {
		add(offs[m[0]], offs[m[1]])
	}
}

// applyBehavior combines match/non-match segments into words, following
// Hugging Face's NormalizedString::split.
func applyBehavior(segs []segment, b splitBehavior) []segment {
	var acc []segment
	prevMatch := false
	switch b {
	case splitIsolated:
		return segs
	case splitRemoved:
		for _, g := range segs {
			if !g.match {
				acc = append(acc, g)
			}
		}
	case splitMergedWithPrevious:
		for _, g := range segs {
			if g.match && !prevMatch && len(acc) > 0 {
				acc[len(acc)-1].end = g.end
			} else {
				acc = append(acc, g)
			}
			prevMatch = g.match
		}
	case splitMergedWithNext:
		for i := len(segs) - 1; i >= 0; i-- {
			g := segs[i]
			if g.match && !prevMatch && len(acc) > 0 {
				acc[len(acc)-1].start = g.start
			} else {
				acc = append(acc, g)
			}
			prevMatch = g.match
		}
		for i, j := 0, len(acc)-1; i < j; i, j = i+1, j-1 {
			acc[i], acc[j] = acc[j], acc[i]
		}
	case splitContiguous:
		for i, g := range segs {
			if i > 0 && g.match == prevMatch {
				acc[len(acc)-1].end = g.end
			} else {
				acc = append(acc, g)
			}
			prevMatch = g.match
		}
	}
	return acc
}

// prefixSpace puts a space before every word that lacks one (Hugging Face
// ByteLevel add_prefix_space, which acts on each piece it is given).
type prefixSpace struct{}

func (prefixSpace) split(words []string) []string {
	for i, w := range words {
		if len(w) == 0 || w[0] != ' ' {
			words[i] = " " + w
		}
	}
	return words
}

// Pre-tokenizer regexes. Facts about the reference tokenizers: llama.cpp
// (llama-vocab.cpp, by tokenizer.ggml.pre) and the published tokenizer.json
// files use these patterns.
const (
	// GPT-2's pattern, as Hugging Face ByteLevel(use_regex=true) has it.
	patGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// llama.cpp's spelling of it, without the final \s+: whitespace that
	// alternative would take is left between matches, which gives the same
	// words.
	patGPT2LlamaCpp = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	// Llama 3 as llama.cpp spells it: ASCII-only case folding of contractions.
	patLlama3 = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Llama 3 and Qwen2 as their tokenizer.json files spell them.
	patLlama3HF = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patQwen2HF  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen2/Qwen3: Llama 3's pattern with single digits.
	patQwen2 = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// CJK ranges of the DeepSeek pre-tokenizers (U+4E00-9FA5, U+0800-4E00, U+AC00-D7FF).
	patCJKDeepSeek = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
	// DeepSeek LLM's letters: Latin, Greek, Cyrillic and other cased scripts.
	// Six code points are written as escapes because Unicode normalization
	// (NFC) would turn them into other characters and break their ranges.
	patDeepSeekLetters = `\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1F7Dᾀ-ᾴᾶ-ᾼ\u1FBEῂ-ῄῆ-ῌῐ-\u1FD3ῖ-\u1FDBῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212A-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+`
	// DeepSeek V3 (and Hunyuan dense): letters with their marks, Han/kana runs.
	patDeepSeek3 = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
	// GPT-4o (o200k): cased words with optional contractions, up to 3 digits.
	patGPT4o = `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Mistral Tekken: GPT-4o's shape without contractions, single digits.
	patTekken = `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen3.5: Qwen2's pattern with combining marks kept in words.
	patQwen35 = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// BLOOM, Poro, GPT-3 Finnish, Viking: words up to a delimiter.
	patBloom = ` ?[^(\s|.,!?…。，、।۔،)]+`
)

// ggufPre describes one tokenizer.ggml.pre value.
type ggufPre struct {
	patterns     []string
	ignoreMerges bool
	addBOS       bool // llama.cpp's default when the file has no add_bos_token
}

var (
	preDefault = ggufPre{patterns: []string{
		`[\p{P}\$\+<=>\^~\|]+`,
		patGPT2LlamaCpp,
		`\p{N}+`,
		`[0-9][0-9][0-9]`,
	}}
	preGPT2   = ggufPre{patterns: []string{patGPT2LlamaCpp}}
	preLlama3 = ggufPre{patterns: []string{patLlama3}, ignoreMerges: true, addBOS: true}
	// DBRX and Smaug use Llama 3's pattern without its merge and BOS rules.
	preLlama3NoBOS = ggufPre{patterns: []string{patLlama3}}
	preQwen2       = ggufPre{patterns: []string{patQwen2}}
	preStarcoder   = ggufPre{patterns: []string{`\p{N}`, patGPT2LlamaCpp}}
)

// ggufPres maps tokenizer.ggml.pre to llama.cpp's pre-tokenizer; names
// llama.cpp does not know get "default", as there. Add vocabularies here
// with a golden test each.
var ggufPres = map[string]ggufPre{
	"default":          preDefault,
	"gpt-2":            preGPT2,
	"phi-2":            preGPT2,
	"mpt":              preGPT2,
	"olmo":             preGPT2,
	"jais":             preGPT2,
	"llama3":           preLlama3,
	"llama-v3":         preLlama3,
	"llama-bpe":        preLlama3,
	"falcon3":          preLlama3,
	"qwen2":            preQwen2,
	"deepseek-r1-qwen": preQwen2,
	"megrez":           preQwen2,
	"stablelm2":        preQwen2,
	"starcoder":        preStarcoder,
	"refact":           preStarcoder,
	"command-r":        preStarcoder,
	"smollm":           preStarcoder,
	"codeshell":        preStarcoder,
	"falcon": {patterns: []string{
		"[\\p{P}\\$\\+<=>\\^~\\|`]+",
		patGPT2LlamaCpp,
		`[0-9][0-9][0-9]`,
	}},
	"dbrx":            preLlama3NoBOS,
	"smaug-bpe":       preLlama3NoBOS,
	"chatglm-bpe":     {patterns: []string{patLlama3}},
	"glm4":            {patterns: []string{patLlama3}},
	"hunyuan":         preQwen2,
	"grok-2":          preQwen2,
	"qwen35":          {patterns: []string{patQwen35}},
	"gpt-4o":          {patterns: []string{patGPT4o}},
	"llama4":          {patterns: []string{patGPT4o}},
	"tekken":          {patterns: []string{patTekken}, ignoreMerges: true, addBOS: true},
	"bloom":           {patterns: []string{patBloom}},
	"poro-chat":       {patterns: []string{patBloom}},
	"gpt3-finnish":    {patterns: []string{patBloom}},
	"viking":          {patterns: []string{patBloom, `\p{N}`}},
	"exaone":          preStarcoder,
	"minerva-7b":      preStarcoder,
	"trillion":        preGPT2,
	"granite-docling": preGPT2,
	"exaone4":         preGPT2,
	"superbpe":        {patterns: []string{`\p{N}+`, `(?=(\d{3})+(?!\d))`}},
	"seed-coder": {patterns: []string{
		`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+`,
	}},
	"bailingmoe": {patterns: []string{
		`'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`,
	}},
	"chameleon": {patterns: []string{
		`<sentinel:[0-9]+>`,
		`(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z`,
		`([\t\n]|    |  )`,
		`\p{N}`,
		"[\\p{P}!-/:-@\\[-`{-~]",
		patGPT2LlamaCpp,
	}, addBOS: true},
	"deepseek-llm": {patterns: []string{
		"[\r\n]",
		patDeepSeekLetters,
		`\s?[!-/:-~！-／：-～‘-‟　-。]+`,
		`\s+\z`, // llama.cpp writes $, which there matches only at the very end
		patCJKDeepSeek,
		`\p{N}+`,
	}},
	"deepseek-v3": {patterns: []string{
		`\p{N}{1,3}`,
		`[一-龥぀-ゟ゠-ヿ]+`,
		patDeepSeek3,
	}},
	"spark2_5": {patterns: []string{
		`\p{N}{1,3}`,
		`[一-龥぀-ゟ゠-ヿ]+`,
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
		`\p{N}`,
	}},
	"hunyuan-dense": {patterns: []string{
		`\p{N}{1,3}`,
		`[一-龥぀-ゟ゠-ヿ]+`,
		patDeepSeek3,
	}},
	"deepseek-coder": {patterns: []string{
		"[\r\n]",
		`\s?\p{L}+`,
		`\s?\p{P}+`,
		patCJKDeepSeek,
		`\p{N}`,
	}},
}
