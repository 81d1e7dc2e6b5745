package chat

import (
	"fmt"
	"strings"
)

// rewriteSource compiles every {{ }} and {% %} tag of a template (see
// compile.go), leaving text, comments and {% raw %} blocks alone. Errors
// name the line of the offending tag.
func rewriteSource(src string) (string, error) {
	var b strings.Builder
	b.Grow(len(src) * 2)
	i := 0
	inRaw := false
	for i < len(src) {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			b.WriteString(src[i:])
			break
		}
		j += i
		var closer string
		switch src[j+1] {
		case '{':
			closer = "}}"
		case '%':
			closer = "%}"
		case '#':
			closer = "#}"
		default:
			b.WriteString(src[i : j+1])
			i = j + 1
			continue
		}
		b.WriteString(src[i:j])
		end := tagEnd(src, j+2, closer)
		if end < 0 {
			return "", fmt.Errorf("line %d: unclosed tag", lineOf(src, j))
		}
		tag := src[j:end]
		i = end
		if closer == "#}" {
			b.WriteString(tag)
			continue
		}
		open, body, close := splitTag(tag)
		kw := firstWord(body)
		if inRaw {
			if closer == "%}" && kw == "endraw" {
				inRaw = false
			}
			b.WriteString(tag)
			continue
		}
		if closer == "%}" && kw == "raw" {
			inRaw = true
			b.WriteString(tag)
			continue
		}
		var code string
		var err error
		if closer == "}}" {
			code, err = compileExpression(body)
			code = " " + fnPrint + "(" + code + ") "
		} else {
			code, err = compileStatement(body)
			code = " " + code + " "
		}
		if err != nil {
			return "", fmt.Errorf("line %d: %s: %w", lineOf(src, j), strings.TrimSpace(tag), err)
		}
		if closer == "%}" && kw == "endmacro" {
			b.WriteString("{{ " + fnLeave + "() }}")
		}
		b.WriteString(open + code + close)
		if closer == "%}" && kw == "macro" {
			// Count macro nesting so runaway recursion fails the render
			// instead of overflowing the Go stack (jinja2 stops at
			// Python's recursion limit). An expression tag right after
			// the block tag adds no text, and the library applies block
			// trimming to the next text segment past it, so whitespace
			// is unchanged.
			b.WriteString("{{ " + fnEnter + "() }}")
		}
	}
	return b.String(), nil
}

// tagEnd returns the index just past the closer of a tag whose body starts
// at i, skipping quoted strings the way the library's scanner does so both
// agree on where each tag ends. It returns -1 for an unclosed tag.
func tagEnd(src string, i int, closer string) int {
	for i < len(src) {
		c := src[i]
		if closer != "#}" && (c == '\'' || c == '"') {
			i++
			for i < len(src) && src[i] != c {
				if src[i] == '\\' && i+1 < len(src) {
					i++
				}
				i++
			}
			i++
			continue
		}
		if c == closer[0] && i+1 < len(src) && src[i+1] == closer[1] {
			return i + 2
		}
		i++
	}
	return -1
}

// splitTag separates a tag into its opening delimiter (with any "-"), its
// body, and its closing delimiter.
func splitTag(tag string) (open, body, close string) {
	open, close = tag[:2], tag[len(tag)-2:]
	body = tag[2 : len(tag)-2]
	if strings.HasPrefix(body, "-") {
		open += "-"
		body = body[1:]
	}
	if strings.HasSuffix(body, "-") {
		close = "-" + close
		body = body[:len(body)-1]
	}
	return open, body, close
}

func firstWord(body string) string {
	s := strings.TrimLeft(body, " \t\r\n")
	n := 0
	for n < len(s) && isIdentByte(s[n]) {
		n++
	}
	return s[:n]
}

func lineOf(src string, i int) int { return strings.Count(src[:i], "\n") + 1 }
