package grammar

import (
	"encoding/json"
	"go/parser"
	"math/rand/v2"
	"strings"
	"testing"
)

// Test grammars written for these tests from the GBNF syntax description
// (none taken from llama.cpp's grammars folder).

const arithGBNF = `# integer arithmetic with parentheses
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")"
number ::= [1-9] [0-9]{0,3} | "0"
`

// jsonGBNF is JSON after RFC 8259, with bounded blanks between tokens.
const jsonGBNF = `root   ::= ws value ws
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( member ( ws "," ws member )* )? ws "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
string ::= "\"" (
    [^"\\\x00-\x1F] |
    "\\" ( ["\\/bfnrt] | "u" hex{4} )
  )* "\""
hex    ::= [0-9a-fA-F]
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws     ::= [ \t\n]{0,3}
`

const greetGBNF = `root ::= greeting " " name  # a comment after a rule
# a comment line

greeting ::= "hi"
  | "hello"
  | "\u00e9t\xE9"
name ::= [A-Z] [a-z\u00e9]{1,5} | [^\x00-\x7F]+
`

func TestGBNFAcceptsAndRefuses(t *testing.T) {
	for _, c := range []struct {
		src      string
		good     []string
		bad      []string
		prefixes []string // valid prefixes that cannot end
	}{
		{arithGBNF, []string{"1", "0", "12*(3+4)/5", "((7))", "9999-0"}, []string{"01", "1+", "(1", "1**2", "12345", "-1"}, []string{"(1+", "3*"}},
		{jsonGBNF, []string{`{}`, ` [1, -2.5e3, "a\"b", {"k": [true,null]}]`, `"\u00e9"`, `0`}, []string{`{,}`, `[1,]`, `01`, `"\x"`, "\"a\x01\"", `    1`}, []string{`{"a":`, `[`}},
		{greetGBNF, []string{"hi Bob", "hello Zoé", "été Ann", "hi ééé", "hi 日本"}, []string{"hey Bob", "hi bob", "hi B", "hi Bobbbbb", "hi "}, []string{"hel", "hi B"}},
		{`root ::= ("ab" | [x-z]){2,3} "."?`, []string{"abab", "xyz.", "abyab"}, []string{"ab", "abababab", "xa"}, nil},
		{"root ::= \"a\"+ [^a]\nx ::= \"unused\"", []string{"ab", "aaa-"}, []string{"a", "b"}, nil},
		{`root ::= [\[\]\-\^] . "\t"`, []string{"[x\t", "^\n\t", "-é\t"}, []string{"a.\t"}, nil},
	} {
		g, err := FromGBNF(c.src)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		for _, s := range c.good {
			if m := NewMatcher(g, fuzzVocab); !m.AcceptBytes([]byte(s)) || !m.CanEnd() {
				t.Errorf("%q refused %q", firstLine(c.src), s)
			}
		}
		for _, s := range c.bad {
			if m := NewMatcher(g, fuzzVocab); m.AcceptBytes([]byte(s)) && m.CanEnd() {
				t.Errorf("%q accepted %q", firstLine(c.src), s)
			}
		}
		for _, s := range c.prefixes {
			if m := NewMatcher(g, fuzzVocab); !m.AcceptBytes([]byte(s)) || m.CanEnd() {
				t.Errorf("%q: %q should be an unfinished prefix", firstLine(c.src), s)
			}
		}
	}
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// Random outputs on the Qwen3 vocabulary are checked by independent
// parsers: Go's expression parser and encoding/json.
func TestGBNFRandomOutputs(t *testing.T) {
	v := loadQwenVocab(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		name  string
		src   string
		check func(string) bool
	}{
		{"arith", arithGBNF, func(s string) bool { _, err := parser.ParseExpr(s); return err == nil }},
		{"json", jsonGBNF, func(s string) bool { return json.Valid([]byte(s)) }},
	} {
		g, err := FromGBNF(c.src)
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for range 16 {
			out, ok := randomOutput(t, g, v, rng, 80)
			if !ok {
				continue
			}
			done++
			if !c.check(string(out)) {
				t.Errorf("%s: output %q fails the independent parser", c.name, out)
			}
		}
		if done < 4 {
			t.Errorf("%s: only %d of 16 outputs finished", c.name, done)
		}
	}
}

func TestGBNFErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`root ::= item`, `rule "item" is used but not defined`},
		{`start ::= "a"`, `no rule named root`},
		{`root ::= "abc`, `unterminated string literal`},
		{`root ::= "\q"`, `unknown escape`},
		{`root ::= [z-a]`, `reversed`},
		{`root ::= []`, `matches nothing`},
		{`root ::= root "a" | "a"`, `left-recursive`},
		{`root ::= ("a"?)*`, `left-recursive`},
		{`root ::= <think>`, `token references`},
		{`root ::= "a"{3,2}`, `maximum below its minimum`},
		{`root ::= "a"{2000}`, `above 1000`},
		{"root ::= \"a\"\nroot ::= \"b\"", `defined twice`},
		{`root = "a"`, `expected ::=`},
		{`root ::= ("a"`, `unclosed (`},
		{`root ::= "a" )`, `expected the end of the line`},
		{"root ::= \"\xff\"", `invalid UTF-8`},
		{`root ::= "\u12"`, `hex digits`},
	} {
		_, err := FromGBNF(c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.src, err, c.want)
		}
	}
	// Positions are reported.
	_, err := FromGBNF("root ::= a\na ::= \"x\" b\n")
	if ge, ok := err.(*GBNFError); !ok || ge.Line != 2 || ge.Col != 11 {
		t.Errorf("position of an undefined rule: %v", err)
	}
}

// FuzzGBNF parses arbitrary grammars and walks those that compile: no
// panic, and every allowed token is accepted.
func FuzzGBNF(f *testing.F) {
	for _, s := range []string{arithGBNF, jsonGBNF, greetGBNF, `root ::= ("ab" | [x-z]){2,3} "."?`, `root ::= [^a-c\n]* "\U0001F600"`, "root ::= a\na ::= \"(\" a? \")\""} {
		f.Add(s, uint64(3))
	}
	f.Fuzz(func(t *testing.T, src string, seed uint64) {
		g, err := FromGBNF(src)
		if err != nil {
			return
		}
		walk(t, g, seed)
	})
}
