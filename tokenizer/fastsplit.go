package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hand-written matchers for the pre-tokenizer regexes nearly every
// byte-level BPE vocabulary uses (GPT-2, Llama 3, Qwen2/3). The regex
// engine spends most of encoding's time on them; these give the same
// matches (TestFastSplitters and FuzzFastSplitters compare them with
// regexp2) several times faster.

// scanFunc calls add(start, end) for each match in s, left to right, as
// the regex engine's find-all would.
type scanFunc func(s string, add func(a, b int))

// fastScanners maps a pattern's exact text to its hand-written scanner.
var fastScanners = map[string]scanFunc{
	patGPT2:         scanAll(func(s string, i int) int { return matchGPT2(s, i, true) }),
	patGPT2LlamaCpp: scanAll(func(s string, i int) int { return matchGPT2(s, i, false) }),
	patLlama3:       scanAll(func(s string, i int) int { return matchLlama3(s, i, 3, foldASCII) }),
	patQwen2:        scanAll(func(s string, i int) int { return matchLlama3(s, i, 1, foldASCII) }),
	patLlama3HF:     scanAll(func(s string, i int) int { return matchLlama3(s, i, 3, foldUnicode) }),
	patQwen2HF:      scanAll(func(s string, i int) int { return matchLlama3(s, i, 1, foldUnicode) }),
	// The class runs of llama.cpp's default and Falcon pre-tokenizers and
	// of the Digits pre-tokenizer.
	`[\p{P}\$\+<=>\^~\|]+`:       scanAll(func(s string, i int) int { return runEnd(s, i, 0, isPunctOr("$+<=>^~|")) }),
	"[\\p{P}\\$\\+<=>\\^~\\|`]+": scanAll(func(s string, i int) int { return runEnd(s, i, 0, isPunctOr("$+<=>^~|`")) }),
	`\p{N}+`:                     scanAll(func(s string, i int) int { return runEnd(s, i, 0, isN) }),
	`\p{N}`:                      scanAll(func(s string, i int) int { return runEnd(s, i, 1, isN) }),
	`\p{N}{1,3}`:                 scanAll(func(s string, i int) int { return runEnd(s, i, 3, isN) }),
	`[0-9][0-9][0-9]`:            scanAll(matchThreeDigits),
}

// runEnd matches a run of up to limit (0: any number of) runes with
// property is at s[i:], or returns -1.
func runEnd(s string, i, limit int, is func(rune) bool) int {
	j := i
	for k := 0; j < len(s) && (limit == 0 || k < limit); k++ {
		r, n := runeAt(s, j)
		if !is(r) {
			break
		}
		j += n
	}
	if j == i {
		return -1
	}
	return j
}

// isPunctOr is \p{P} plus the given ASCII characters.
func isPunctOr(extra string) func(rune) bool {
	return func(r rune) bool {
		return unicode.IsPunct(r) || (r < utf8.RuneSelf && strings.IndexByte(extra, byte(r)) >= 0)
	}
}

// matchThreeDigits matches [0-9][0-9][0-9] at s[i:].
func matchThreeDigits(s string, i int) int {
	if i+3 <= len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
		return i + 3
	}
	return -1
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanAll turns a matcher (the end of the match starting at s[i:], or -1
// if none does) into a find-all scan that moves on one character where
// nothing matches.
func scanAll(match func(s string, i int) int) scanFunc {
	return func(s string, add func(a, b int)) {
		for i := 0; i < len(s); {
			if j := match(s, i); j > i {
				add(i, j)
				i = j
				continue
			}
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
	}
}

// scanLiteral finds every occurrence of a non-empty string.
func scanLiteral(lit string) scanFunc {
	return func(s string, add func(a, b int)) {
		for i := 0; ; {
			k := strings.Index(s[i:], lit)
			if k < 0 {
				return
			}
			add(i+k, i+k+len(lit))
			i += k + len(lit)
		}
	}
}

// The character classes, as regexp2 defines them: \s is unicode.IsSpace,
// \p{L} and \p{N} are Go's Unicode categories. Invalid UTF-8 decodes to
// U+FFFD, a symbol, as the rune-based regex path sees it.
func isL(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiClass[r] == classL
	}
	return unicode.IsLetter(r)
}

func isN(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiClass[r] == classN
	}
	return unicode.IsNumber(r)
}

func isS(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiClass[r] == classS
	}
	return unicode.IsSpace(r)
}

func isOther(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiClass[r] == classOther
	}
	return !unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

const (
	classOther = iota
	classL
	classN
	classS
)

// asciiClass classifies ASCII characters without the Unicode tables.
var asciiClass = func() (c [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		switch {
		case unicode.IsLetter(r):
			c[r] = classL
		case unicode.IsNumber(r):
			c[r] = classN
		case unicode.IsSpace(r):
			c[r] = classS
		}
	}
	return c
}()

func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// endRun returns where the run of runes with property is, starting at i, ends.
func endRun(s string, i int, is func(rune) bool) int {
	for i < len(s) {
		r, n := runeAt(s, i)
		if !is(r) {
			break
		}
		i += n
	}
	return i
}

// How contraction compares letters.
const (
	foldNone    = iota // 's only: GPT-2's pattern
	foldASCII          // '[sS]: llama.cpp's spelling of (?i:'s)
	foldUnicode        // (?i:'s) as regexp2 and Oniguruma read it: ſ (U+017F) is an s too
)

// contraction returns the length of 's, 't, 're, 've, 'm, 'll or 'd at the
// start of s, or 0. Of the characters that case-fold to these letters,
// only S and ſ are not ASCII-lowercase.
func contraction(s string, fold int) int {
	if len(s) < 2 || s[0] != '\'' {
		return 0
	}
	if fold == foldUnicode && strings.HasPrefix(s[1:], "ſ") {
		return 1 + len("ſ")
	}
	lower := func(c byte) byte {
		if fold != foldNone && 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	switch lower(s[1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if len(s) > 2 && lower(s[2]) == 'e' {
			return 3
		}
	case 'l':
		if len(s) > 2 && lower(s[2]) == 'l' {
			return 3
		}
	}
	return 0
}

// wsEnd handles the whitespace alternatives \s+(?!\S) and, with final,
// \s+, at a whitespace rune s[i]: the longest run not followed by a
// non-space, else (backtracking) the run less its last rune.
func wsEnd(s string, i int, final bool) int {
	end := endRun(s, i, isS)
	if end == len(s) {
		return end
	}
	_, n := utf8.DecodeLastRuneInString(s[:end])
	if end-n > i {
		return end - n
	}
	if final {
		return end
	}
	return -1
}

// matchGPT2 matches
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// at s[i:] (final: with the last alternative, which llama.cpp leaves out).
func matchGPT2(s string, i int, final bool) int {
	if n := contraction(s[i:], foldNone); n > 0 {
		return i + n
	}
	r, n := runeAt(s, i)
	k := i
	if r == ' ' && i+1 < len(s) {
		// " ?" takes the space when a letter, number or other follows.
		if r1, n1 := runeAt(s, i+1); !isS(r1) {
			k, r, n = i+1, r1, n1
		}
	}
	switch {
	case isL(r):
		return endRun(s, k+n, isL)
	case isN(r):
		return endRun(s, k+n, isN)
	case !isS(r):
		return endRun(s, k+n, isOther)
	}
	return wsEnd(s, i, final)
}

// matchLlama3 matches Llama 3's pattern (digits = 3) or Qwen2's (digits = 1),
// with the contractions compared as fold says,
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// at s[i:].
func matchLlama3(s string, i int, digits, fold int) int {
	if n := contraction(s[i:], fold); n > 0 {
		return i + n
	}
	r, n := runeAt(s, i)
	if isL(r) {
		return endRun(s, i+n, isL)
	}
	if r != '\r' && r != '\n' && !isN(r) && i+n < len(s) {
		// One character that is no letter, number or line break may lead
		// a run of letters.
		if r1, n1 := runeAt(s, i+n); isL(r1) {
			return endRun(s, i+n+n1, isL)
		}
	}
	if isN(r) {
		j := i + n
		for d := 1; d < digits && j < len(s); d++ {
			r1, n1 := runeAt(s, j)
			if !isN(r1) {
				break
			}
			j += n1
		}
		return j
	}
	k, c, cn := i, r, n
	if r == ' ' && i+1 < len(s) {
		k = i + 1
		c, cn = runeAt(s, k)
	}
	if isOther(c) {
		j := endRun(s, k+cn, isOther)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// r is whitespace here: every other character matched above.
	end, lastBreak := i, -1
	for end < len(s) {
		r1, n1 := runeAt(s, end)
		if !isS(r1) {
			break
		}
		end += n1
		if r1 == '\r' || r1 == '\n' {
			lastBreak = end
		}
	}
	if lastBreak > 0 {
		return lastBreak // \s*[\r\n]+ backtracks to the last line break
	}
	return wsEnd(s, i, true)
}
