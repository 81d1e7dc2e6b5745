package tokenizer

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// WordPiece (BERT) vocabularies as llama.cpp stores them in GGUF: a token
// that starts a word carries a "▁" prefix, a continuation token ("##ing"
// in BERT's own files) is stored bare.

// wpmEncode appends the ids of text the way llama.cpp's WPM tokenizer
// does: split into lowercased, accent-stripped words (BERT's basic
// tokenizer), then cover "▁"+word by greedy longest matches; a word that
// cannot be covered entirely becomes one unknown token.
func (t *Tokenizer) wpmEncode(out []int, text string) []int {
	for _, w := range wpmWords(text) {
		word := "▁" + w
		start := len(out)
		for i := 0; i < len(word); {
			j := min(len(word), i+t.maxTokenLen)
			for ; j > i; j-- {
				if id, ok := t.ids[word[i:j]]; ok {
					out = append(out, id)
					break
				}
			}
			if j == i {
				out = out[:start]
				break
			}
			i = j
		}
		if len(out) == start && t.unk >= 0 {
			out = append(out, t.unk)
		}
	}
	return out
}

// wpmWords is BERT's basic tokenization: NFD with combining marks removed,
// lowercase, control characters dropped, split at whitespace, and every
// punctuation mark, ASCII symbol and CJK ideograph a word of its own.
func wpmWords(text string) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range norm.NFD.String(text) {
		switch {
		case unicode.Is(unicode.White_Space, r):
			flush()
		case r == 0 || r == unicode.ReplacementChar || unicode.Is(unicode.C, r) || unicode.Is(unicode.Mn, r):
			// dropped
		case unicode.IsPunct(r) || (r < 0x7F && unicode.IsSymbol(r)) || isCJKIdeograph(r):
			flush()
			words = append(words, string(unicode.ToLower(r)))
		default:
			cur.WriteRune(unicode.ToLower(r))
		}
	}
	flush()
	return words
}

// isCJKIdeograph reports the code points BERT treats as Chinese
// characters. The fifth range starts at U+2B920 rather than U+2B820, as in
// Hugging Face's implementation that llama.cpp follows.
func isCJKIdeograph(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
