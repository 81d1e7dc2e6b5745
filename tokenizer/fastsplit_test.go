package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// splitBoth returns the matches of a pattern's hand-written scanner and of
// regexp2, which is the reference here.
func splitBoth(t testing.TB, pattern, s string) (fast, slow [][2]int) {
	t.Helper()
	rs := refSplits[pattern]
	if rs == nil {
		re, err := compileRegex(pattern)
		if err != nil {
			t.Fatal(err)
		}
		rs = &regexSplit{re: re}
		refSplits[pattern] = rs
	}
	fastScanners[pattern](s, func(a, b int) { fast = append(fast, [2]int{a, b}) })
	rs.regexMatches(s, func(a, b int) { slow = append(slow, [2]int{a, b}) })
	return fast, slow
}

// refSplits holds the compiled reference regexes (tests and fuzz workers
// use one goroutine each).
var refSplits = map[string]*regexSplit{}

// fastSplitSamples are inputs aimed at the matchers' corners: contractions
// in both cases and look-alike letters (ſ, K, İ), lone and mixed line
// breaks, trailing whitespace, digit runs, the Unicode spaces, marks and
// invalid UTF-8.
var fastSplitSamples = []string{
	"", " ", "  ", "\n", "\r\n", " \n ", "a", "'", "''", "'s", "'S", "'LL", "'Ll", "'ve", "'VE", "'re", "'x",
	"'ſ", "'ſA", "'ſt", "'K", "'İ", "don't I'M we'RE they'Ve", "x'dy", " 's", "\t'd",
	"Hello world", " Hello  world ", "hello\tworld\n\nnext\r\nline  \n", "a  \n  b", "a \n\n \t c",
	"12345678", "1 23 456 7890", "x1y22z333", "٣٤٥ ⅷ ½", "$3.50!!", " ...?!", "a...b\n\n", "+-*/\n\r\n",
	"\u00a0x\u2003y\u3000z\u0085w\u200bv", "é", "e\u0301", "नमस्ते", "中文字符 和 English", "😀😀 x 😀",
	"\xff\xfe abc \xc3", "a\x00b", "   \t\t   ", "x   ", "x \t", "\n\n\n", " \r", "\r \n",
}

// TestFastSplitters checks every hand-written scanner against regexp2 on
// the samples and on every text of the tokenizer goldens.
func TestFastSplitters(t *testing.T) {
	texts := slices.Clone(fastSplitSamples)
	texts = append(texts, mixedText)
	inps, _ := filepath.Glob(filepath.Join(testdata.Path(t, "tokenizers", "llamacpp-vocab"), "*.inp"))
	for _, p := range inps {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, strings.Split(string(b), "\n__ggml_vocab_test__\n")...)
	}
	for pattern := range fastScanners {
		for _, s := range texts {
			if fast, slow := splitBoth(t, pattern, s); !slices.Equal(fast, slow) {
				t.Errorf("pattern %.30q… on %q:\n hand-written %v\n      regexp2 %v", pattern, s, fast, slow)
			}
		}
	}
	t.Logf("%d patterns x %d texts", len(fastScanners), len(texts))
}

// FuzzFastSplitters compares the hand-written scanners with regexp2 on
// arbitrary input:
//
//	go test -run NONE -fuzz FuzzFastSplitters -fuzztime 60s -fuzzminimizetime 2s ./tokenizer
func FuzzFastSplitters(f *testing.F) {
	for _, s := range fastSplitSamples {
		f.Add(s)
	}
	patterns := slices.Sorted(func(yield func(string) bool) {
		for p := range fastScanners {
			if !yield(p) {
				return
			}
		}
	})
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range patterns {
			if fast, slow := splitBoth(t, p, s); !slices.Equal(fast, slow) {
				t.Fatalf("pattern %q on %q:\n hand-written %v\n      regexp2 %v", p, s, fast, slow)
			}
		}
	})
}

// scanLiteral finds non-overlapping occurrences left to right (expected
// offsets worked by hand).
func TestScanLiteral(t *testing.T) {
	var got []string
	scanLiteral("ab")("xabab abx", func(a, b int) { got = append(got, fmt.Sprint(a, b)) })
	if strings.Join(got, ",") != "1 3,3 5,6 8" {
		t.Errorf("got %v", got)
	}
}
