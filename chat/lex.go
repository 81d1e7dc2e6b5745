package chat

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Lexing of the inside of a {{ }} or {% %} tag, following jinja2's lexer.

type tokKind int

const (
	tkName tokKind = iota
	tkString
	tkInt
	tkFloat
	tkOp
	tkEOF
)

type token struct {
	kind tokKind
	text string // name, operator, or the decoded string value
	num  string // integer or float literal text, underscores removed
}

// operators, longest first so "**" wins over "*".
var operators = []string{
	"//", "**", "==", "!=", "<=", ">=",
	"+", "-", "*", "/", "%", "~", "<", ">", "=", "(", ")", "[", "]", "{", "}",
	",", ".", ":", "|", ";",
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isIdentByte(c byte) bool { return isNameStart(c) || isDigit(c) }

// lex splits a tag body into tokens.
func lex(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string")
			}
			toks = append(toks, token{kind: tkString, text: unescapeString(s[i+1 : j])})
			i = j + 1
		case isDigit(c):
			j, kind := scanNumber(s, i)
			toks = append(toks, token{kind: kind, num: strings.ReplaceAll(s[i:j], "_", "")})
			i = j
		case isNameStart(c):
			j := i
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}
			toks = append(toks, token{kind: tkName, text: s[i:j]})
			i = j
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				r, _ := utf8.DecodeRuneInString(s[i:])
				return nil, fmt.Errorf("unexpected char %q", r)
			}
			toks = append(toks, token{kind: tkOp, text: op})
			i += len(op)
		}
	}
	return append(toks, token{kind: tkEOF}), nil
}

// scanNumber reads an integer or float literal (digits with optional
// underscores, optional fraction, optional exponent) starting at i.
func scanNumber(s string, i int) (int, tokKind) {
	digits := func(j int) int {
		for j < len(s) && (isDigit(s[j]) || s[j] == '_' && j+1 < len(s) && isDigit(s[j+1])) {
			j++
		}
		return j
	}
	j := digits(i)
	kind := tkInt
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		j = digits(j + 1)
		kind = tkFloat
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			j = digits(k)
			kind = tkFloat
		}
	}
	return j, kind
}

// unescapeString decodes a jinja2 string literal body: newlines are
// normalized, then Python's unicode-escape rules apply (unknown escapes
// keep their backslash).
func unescapeString(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(c)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if i+n < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil && v <= utf8.MaxRune {
					b.WriteRune(rune(v))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(c)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 32)
			b.WriteRune(rune(v))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}
