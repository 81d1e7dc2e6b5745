package chat

import (
	"fmt"
	"strconv"
	"strings"
)

// The expression compiler. It parses each expression with jinja2's grammar
// and re-emits it in the small subset of the library's syntax whose meaning
// the library cannot get wrong: names, literals, list and dict displays,
// calls, and/or/not and conditional expressions. Every other operation
// (attribute and item access, arithmetic, ~, comparisons, filters, tests,
// printing) becomes a call to one of our functions, passed in with the
// render data, which implement Python's semantics. For example
//
//	{{ "x: " + msg.content | trim }}
//
// becomes
//
//	{{ siskin_print(siskin_add('x: ', siskin_f_trim(siskin_getattr(msg, 'content', 'msg')))) }}
//
// Parenthesizing every compound form makes the library's own precedence
// rules irrelevant.

// Names of the runtime functions the emitted code calls.
const (
	fnPrint    = "siskin_print"
	fnGetattr  = "siskin_getattr"
	fnGetitem  = "siskin_getitem"
	fnCallattr = "siskin_callattr"
	fnSlice    = "siskin_slice"
	fnCmp      = "siskin_cmp"
	fnConcat   = "siskin_concat"
	fnTuple    = "siskin_tuple"
	fnFloat    = "siskin_float"
	fnDict     = "siskin_dict"
	fnIter     = "siskin_iter"
	fnNeg      = "siskin_neg"
	fnPos      = "siskin_pos"
	fnEnter    = "siskin_macro_enter"
	fnLeave    = "siskin_macro_leave"
	// Prefixes of the filter and test functions.
	filterPrefix = "siskin_f_"
	testPrefix   = "siskin_is_"
)

// binops maps jinja2's arithmetic operators to runtime functions.
var binops = map[string]string{
	"+": "siskin_add", "-": "siskin_sub", "*": "siskin_mul", "/": "siskin_div",
	"//": "siskin_floordiv", "%": "siskin_mod", "**": "siskin_pow",
}

// cmpops maps comparison operators to the names siskin_cmp takes.
var cmpops = map[string]string{
	"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge",
}

// expr is a compiled expression: the code, and what it was when that
// matters to the caller.
type expr struct {
	code string
	name string // set for a bare name
	call bool   // a call expression
}

type compiler struct {
	toks []token
	pos  int
}

func (c *compiler) peek() token        { return c.toks[c.pos] }
func (c *compiler) peekAt(n int) token { return c.toks[min(c.pos+n, len(c.toks)-1)] }
func (c *compiler) next() token {
	t := c.toks[c.pos]
	if t.kind != tkEOF {
		c.pos++
	}
	return t
}
func (c *compiler) isOp(op string) bool     { t := c.peek(); return t.kind == tkOp && t.text == op }
func (c *compiler) isName(name string) bool { t := c.peek(); return t.kind == tkName && t.text == name }
func (c *compiler) skipOp(op string) bool {
	if c.isOp(op) {
		c.next()
		return true
	}
	return false
}
func (c *compiler) skipName(name string) bool {
	if c.isName(name) {
		c.next()
		return true
	}
	return false
}
func (c *compiler) expectOp(op string) error {
	if !c.skipOp(op) {
		return fmt.Errorf("expected %q, got %s", op, c.describe())
	}
	return nil
}
func (c *compiler) describe() string {
	t := c.peek()
	switch t.kind {
	case tkEOF:
		return "end of tag"
	case tkString:
		return "string " + strconv.Quote(t.text)
	case tkInt, tkFloat:
		return t.num
	}
	return strconv.Quote(t.text)
}

// compileExpression compiles a whole tag body that must be one expression.
func compileExpression(body string) (string, error) {
	toks, err := lex(body)
	if err != nil {
		return "", err
	}
	c := &compiler{toks: toks}
	e, err := c.tuple(false, true, nil)
	if err != nil {
		return "", err
	}
	if c.peek().kind != tkEOF {
		return "", fmt.Errorf("unexpected %s", c.describe())
	}
	return e.code, nil
}

// expression is jinja2's parse_expression.
func (c *compiler) expression(withCond bool) (expr, error) {
	if withCond {
		return c.condexpr()
	}
	return c.or()
}

func (c *compiler) condexpr() (expr, error) {
	e1, err := c.or()
	if err != nil {
		return e1, err
	}
	for c.skipName("if") {
		cond, err := c.or()
		if err != nil {
			return e1, err
		}
		if c.skipName("else") {
			e3, err := c.condexpr()
			if err != nil {
				return e1, err
			}
			e1 = expr{code: "(" + e1.code + " if " + cond.code + " else " + e3.code + ")"}
		} else {
			// The library yields undefined for a missing else, as jinja2 does.
			e1 = expr{code: "(" + e1.code + " if " + cond.code + ")"}
		}
	}
	return e1, nil
}

func (c *compiler) or() (expr, error) {
	l, err := c.and()
	for err == nil && c.skipName("or") {
		var r expr
		if r, err = c.and(); err == nil {
			l = expr{code: "(" + l.code + " or " + r.code + ")"}
		}
	}
	return l, err
}

func (c *compiler) and() (expr, error) {
	l, err := c.not()
	for err == nil && c.skipName("and") {
		var r expr
		if r, err = c.not(); err == nil {
			l = expr{code: "(" + l.code + " and " + r.code + ")"}
		}
	}
	return l, err
}

func (c *compiler) not() (expr, error) {
	if c.skipName("not") {
		e, err := c.not()
		return expr{code: "(not " + e.code + ")"}, err
	}
	return c.compare()
}

func (c *compiler) compare() (expr, error) {
	first, err := c.math1()
	if err != nil {
		return first, err
	}
	args := []string{first.code}
	for {
		var op string
		switch t := c.peek(); {
		case t.kind == tkOp && cmpops[t.text] != "":
			op = cmpops[t.text]
			c.next()
		case c.isName("in"):
			op = "in"
			c.next()
		case c.isName("not") && c.peekAt(1).kind == tkName && c.peekAt(1).text == "in":
			op = "notin"
			c.next()
			c.next()
		}
		if op == "" {
			break
		}
		r, err := c.math1()
		if err != nil {
			return r, err
		}
		args = append(args, quote(op), r.code)
	}
	if len(args) == 1 {
		return first, nil
	}
	return expr{code: fnCmp + "(" + strings.Join(args, ", ") + ")"}, nil
}

func (c *compiler) math1() (expr, error) {
	l, err := c.concat()
	for err == nil && (c.isOp("+") || c.isOp("-")) {
		op := c.next().text
		var r expr
		if r, err = c.concat(); err == nil {
			l = expr{code: binops[op] + "(" + l.code + ", " + r.code + ")"}
		}
	}
	return l, err
}

func (c *compiler) concat() (expr, error) {
	first, err := c.math2()
	if err != nil {
		return first, err
	}
	args := []string{first.code}
	for c.skipOp("~") {
		r, err := c.math2()
		if err != nil {
			return r, err
		}
		args = append(args, r.code)
	}
	if len(args) == 1 {
		return first, nil
	}
	return expr{code: fnConcat + "(" + strings.Join(args, ", ") + ")"}, nil
}

func (c *compiler) math2() (expr, error) {
	l, err := c.pow()
	for err == nil && (c.isOp("*") || c.isOp("/") || c.isOp("//") || c.isOp("%")) {
		op := c.next().text
		var r expr
		if r, err = c.pow(); err == nil {
			l = expr{code: binops[op] + "(" + l.code + ", " + r.code + ")"}
		}
	}
	return l, err
}

func (c *compiler) pow() (expr, error) {
	l, err := c.unary(true)
	for err == nil && c.skipOp("**") {
		var r expr
		if r, err = c.unary(true); err == nil {
			l = expr{code: binops["**"] + "(" + l.code + ", " + r.code + ")"}
		}
	}
	return l, err
}

func (c *compiler) unary(withFilter bool) (expr, error) {
	var e expr
	var err error
	switch {
	case c.skipOp("-"):
		e, err = c.unary(false)
		e = expr{code: fnNeg + "(" + e.code + ")"}
	case c.skipOp("+"):
		e, err = c.unary(false)
		e = expr{code: fnPos + "(" + e.code + ")"}
	default:
		e, err = c.primary()
	}
	if err != nil {
		return e, err
	}
	if e, err = c.postfix(e); err != nil {
		return e, err
	}
	if withFilter {
		return c.filterExpr(e)
	}
	return e, nil
}

func (c *compiler) primary() (expr, error) {
	t := c.peek()
	switch t.kind {
	case tkName:
		c.next()
		switch t.text {
		case "true", "True":
			return expr{code: "true"}, nil
		case "false", "False":
			return expr{code: "false"}, nil
		case "none", "None":
			return expr{code: "none"}, nil
		}
		return expr{code: t.text, name: t.text}, nil
	case tkString:
		// Adjacent string literals concatenate, as in Python.
		var s strings.Builder
		for c.peek().kind == tkString {
			s.WriteString(c.next().text)
		}
		return expr{code: quote(s.String())}, nil
	case tkInt:
		c.next()
		n, err := parseIntLiteral(t.num)
		if err != nil {
			return expr{}, err
		}
		return expr{code: n}, nil
	case tkFloat:
		c.next()
		if !strings.ContainsAny(t.num, "eE") {
			// The library reads digits.digits itself.
			return expr{code: t.num}, nil
		}
		return expr{code: fnFloat + "(" + quote(t.num) + ")"}, nil
	case tkOp:
		switch t.text {
		case "(":
			c.next()
			e, err := c.tuple(true, true, nil)
			if err != nil {
				return e, err
			}
			if err := c.expectOp(")"); err != nil {
				return e, err
			}
			if e.call || e.name != "" {
				return e, nil
			}
			return expr{code: "(" + e.code + ")"}, nil
		case "[":
			c.next()
			var items []string
			for !c.isOp("]") {
				if len(items) > 0 {
					if err := c.expectOp(","); err != nil {
						return expr{}, err
					}
					if c.isOp("]") {
						break
					}
				}
				e, err := c.expression(true)
				if err != nil {
					return e, err
				}
				items = append(items, e.code)
			}
			c.next()
			return expr{code: "[" + strings.Join(items, ", ") + "]"}, nil
		case "{":
			c.next()
			var pairs []string
			for !c.isOp("}") {
				if len(pairs) > 0 {
					if err := c.expectOp(","); err != nil {
						return expr{}, err
					}
					if c.isOp("}") {
						break
					}
				}
				k, err := c.expression(true)
				if err != nil {
					return k, err
				}
				if err := c.expectOp(":"); err != nil {
					return k, err
				}
				v, err := c.expression(true)
				if err != nil {
					return v, err
				}
				pairs = append(pairs, k.code, v.code)
			}
			c.next()
			// A dict display keeps its key order and key types through
			// siskin_dict; the library's would stringify keys.
			return expr{code: fnDict + "(" + strings.Join(pairs, ", ") + ")", call: true}, nil
		}
	}
	return expr{}, fmt.Errorf("unexpected %s", c.describe())
}

// tuple is jinja2's parse_tuple: one expression, or a comma-separated
// tuple. endNames are names that end a bare tuple (for "for ... in x
// recursive").
func (c *compiler) tuple(explicitParens, withCond bool, endNames []string) (expr, error) {
	var items []string
	var first expr
	isTuple := false
	for {
		if len(items) > 0 {
			if err := c.expectOp(","); err != nil {
				return first, err
			}
		}
		if c.tupleEnd(endNames) {
			break
		}
		e, err := c.expression(withCond)
		if err != nil {
			return e, err
		}
		if len(items) == 0 {
			first = e
		}
		items = append(items, e.code)
		if !c.isOp(",") {
			break
		}
		isTuple = true
	}
	if !isTuple {
		if len(items) > 0 {
			return first, nil
		}
		if !explicitParens {
			return first, fmt.Errorf("expected an expression, got %s", c.describe())
		}
	}
	return expr{code: fnTuple + "(" + strings.Join(items, ", ") + ")", call: true}, nil
}

func (c *compiler) tupleEnd(endNames []string) bool {
	t := c.peek()
	if t.kind == tkEOF || t.kind == tkOp && (t.text == ")" || t.text == "]" || t.text == "}") {
		return true
	}
	for _, n := range endNames {
		if c.isName(n) {
			return true
		}
	}
	return false
}

// postfix handles attribute access, subscripts and calls.
func (c *compiler) postfix(e expr) (expr, error) {
	for {
		var err error
		switch {
		case c.isOp("."):
			c.next()
			t := c.next()
			switch {
			case t.kind == tkName && c.isOp("("):
				// A method call, done in one step so that calling a
				// missing method names it in the error as jinja2 does.
				c.next()
				args, kwargs, _, err := c.callArgs()
				if err != nil {
					return e, err
				}
				all := append([]string{e.code, quote(t.text)}, append(args, kwargs...)...)
				e = expr{code: fnCallattr + "(" + strings.Join(all, ", ") + ")", call: true}
			case t.kind == tkName:
				e = expr{code: fnGetattr + "(" + e.code + ", " + quote(t.text) + hint(e) + ")"}
			case t.kind == tkInt:
				e = expr{code: fnGetitem + "(" + e.code + ", " + t.num + hint(e) + ")"}
			default:
				return e, fmt.Errorf("expected a name after '.'")
			}
		case c.isOp("["):
			c.next()
			e, err = c.subscript(e)
		case c.isOp("("):
			c.next()
			e, err = c.call(e)
		default:
			return e, nil
		}
		if err != nil {
			return e, err
		}
	}
}

// hint passes the source name of a looked-up object, for jinja2's
// "'x' is undefined" message.
func hint(e expr) string {
	if e.name == "" {
		return ""
	}
	return ", " + quote(e.name)
}

func (c *compiler) subscript(obj expr) (expr, error) {
	var keys []string
	sliced := false
	for !c.isOp("]") {
		if len(keys) > 0 {
			if err := c.expectOp(","); err != nil {
				return obj, err
			}
			if c.isOp("]") {
				break
			}
		}
		// One subscribed item: an expression or a slice a:b:c.
		parts := []string{"none", "none", "none"}
		isSlice := false
		if !c.isOp(":") {
			e, err := c.expression(true)
			if err != nil {
				return e, err
			}
			parts[0] = e.code
		}
		for i := 1; i < 3 && c.skipOp(":"); i++ {
			isSlice = true
			if !c.isOp(":") && !c.isOp("]") && !c.isOp(",") {
				e, err := c.expression(true)
				if err != nil {
					return e, err
				}
				parts[i] = e.code
			}
		}
		if isSlice {
			sliced = true
			keys = append(keys, strings.Join(parts, ", "))
		} else {
			keys = append(keys, parts[0])
		}
	}
	c.next()
	switch {
	case len(keys) == 0:
		return obj, fmt.Errorf("empty subscript")
	case len(keys) == 1 && sliced:
		return expr{code: fnSlice + "(" + obj.code + ", " + keys[0] + ")"}, nil
	case sliced:
		return obj, fmt.Errorf("tuple of slices is not supported")
	case len(keys) == 1:
		return expr{code: fnGetitem + "(" + obj.code + ", " + keys[0] + hint(obj) + ")"}, nil
	}
	return expr{code: fnGetitem + "(" + obj.code + ", " + fnTuple + "(" + strings.Join(keys, ", ") + ")" + hint(obj) + ")"}, nil
}

// callArgs parses call arguments up to and including ")". It returns the
// positional codes and the keyword ones as "name=code", in order.
func (c *compiler) callArgs() (args, kwargs []string, kwNames []string, err error) {
	for !c.isOp(")") {
		if len(args)+len(kwargs) > 0 {
			if err := c.expectOp(","); err != nil {
				return nil, nil, nil, err
			}
			if c.isOp(")") {
				break
			}
		}
		if c.isOp("*") || c.isOp("**") {
			return nil, nil, nil, fmt.Errorf("*args and **kwargs in calls are not supported")
		}
		if c.peek().kind == tkName && c.peekAt(1).kind == tkOp && c.peekAt(1).text == "=" {
			name := c.next().text
			c.next()
			v, err := c.expression(true)
			if err != nil {
				return nil, nil, nil, err
			}
			kwargs = append(kwargs, name+"="+v.code)
			kwNames = append(kwNames, name)
			continue
		}
		if len(kwargs) > 0 {
			return nil, nil, nil, fmt.Errorf("positional argument after keyword argument")
		}
		v, err := c.expression(true)
		if err != nil {
			return nil, nil, nil, err
		}
		args = append(args, v.code)
	}
	c.next()
	return args, kwargs, kwNames, nil
}

func (c *compiler) call(fn expr) (expr, error) {
	args, kwargs, kwNames, err := c.callArgs()
	if err != nil {
		return fn, err
	}
	if fn.name == "dict" && len(args) == 0 {
		// dict(a=1, b=2): the library passes keywords as a Go map, which
		// loses their order, so pass them as ordered pairs instead.
		var pairs []string
		for i, kw := range kwargs {
			pairs = append(pairs, quote(kwNames[i]), strings.TrimPrefix(kw, kwNames[i]+"="))
		}
		return expr{code: fnDict + "(" + strings.Join(pairs, ", ") + ")", call: true}, nil
	}
	return expr{code: fn.code + "(" + strings.Join(append(args, kwargs...), ", ") + ")", call: true}, nil
}

// filterExpr handles "| filter" and "is test" chains (and calls after
// them), which jinja2 binds tighter than any operator.
func (c *compiler) filterExpr(e expr) (expr, error) {
	for {
		var err error
		switch {
		case c.isOp("|"):
			c.next()
			e, err = c.filter(e)
		case c.isName("is"):
			c.next()
			e, err = c.test(e)
		case c.isOp("("):
			c.next()
			e, err = c.call(e)
		default:
			return e, nil
		}
		if err != nil {
			return e, err
		}
	}
}

func (c *compiler) dottedName() (string, error) {
	t := c.next()
	if t.kind != tkName {
		return "", fmt.Errorf("expected a name, got %q", t.text)
	}
	name := t.text
	for c.isOp(".") {
		c.next()
		t := c.next()
		if t.kind != tkName {
			return "", fmt.Errorf("expected a name after '.'")
		}
		name += "." + t.text
	}
	return name, nil
}

func (c *compiler) filter(e expr) (expr, error) {
	name, err := c.dottedName()
	if err != nil {
		return e, err
	}
	if _, ok := filters[name]; !ok {
		// jinja2 rejects an unknown filter when compiling.
		return e, fmt.Errorf("no filter named %q", name)
	}
	args := []string{e.code}
	if c.skipOp("(") {
		a, kw, _, err := c.callArgs()
		if err != nil {
			return e, err
		}
		args = append(append(args, a...), kw...)
	}
	return expr{code: filterPrefix + name + "(" + strings.Join(args, ", ") + ")", call: true}, nil
}

func (c *compiler) test(e expr) (expr, error) {
	negated := c.skipName("not")
	name, err := c.dottedName()
	if err != nil {
		return e, err
	}
	if _, ok := tests[name]; !ok {
		return e, fmt.Errorf("no test named %q", name)
	}
	args := []string{e.code}
	t := c.peek()
	switch {
	case c.skipOp("("):
		a, kw, _, err := c.callArgs()
		if err != nil {
			return e, err
		}
		args = append(append(args, a...), kw...)
	case (t.kind == tkName || t.kind == tkString || t.kind == tkInt || t.kind == tkFloat ||
		t.kind == tkOp && (t.text == "(" || t.text == "[" || t.text == "{")) &&
		!(t.kind == tkName && (t.text == "else" || t.text == "or" || t.text == "and")):
		// jinja2 takes one argument without parentheses: "is divisibleby 3".
		if c.isName("is") {
			return e, fmt.Errorf("you cannot chain multiple tests with is")
		}
		a, err := c.primary()
		if err != nil {
			return a, err
		}
		if a, err = c.postfix(a); err != nil {
			return a, err
		}
		args = append(args, a.code)
	}
	code := testPrefix + name + "(" + strings.Join(args, ", ") + ")"
	if negated {
		code = "(not " + code + ")"
	}
	return expr{code: code}, nil
}

// quote writes s as a library string literal. The library's lexer only
// decodes \\, \', \", \n and \t, and copies every other byte, so those
// are the only escapes needed.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// parseIntLiteral accepts jinja2's integer forms (decimal, 0b, 0o, 0x) and
// returns decimal text the library can read.
func parseIntLiteral(s string) (string, error) {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		// A leading-zero decimal ("007") is valid in jinja2.
		if n, err = strconv.ParseInt(strings.TrimLeft(s, "0")+"0", 10, 64); err == nil {
			n /= 10
		} else {
			return "", fmt.Errorf("integer literal %s out of range", s)
		}
	}
	return strconv.FormatInt(n, 10), nil
}

// compileStatement rewrites the body of a {% %} tag.
func compileStatement(body string) (string, error) {
	toks, err := lex(body)
	if err != nil {
		return "", err
	}
	c := &compiler{toks: toks}
	kw := c.peek()
	if kw.kind != tkName {
		return body, nil
	}
	switch kw.text {
	case "if", "elif":
		c.next()
		e, err := c.tuple(false, true, nil)
		if err != nil {
			return "", err
		}
		if err := c.end(); err != nil {
			return "", err
		}
		return kw.text + " " + e.code, nil
	case "for":
		return c.forStatement()
	case "set":
		return c.setStatement(body)
	case "call":
		return c.callStatement()
	case "macro":
		return c.macroStatement()
	}
	// Everything else (else, end tags, break, continue, filter, raw, ...)
	// has no expression to compile.
	return body, nil
}

func (c *compiler) end() error {
	if c.peek().kind != tkEOF {
		return fmt.Errorf("unexpected %s", c.describe())
	}
	return nil
}

// target reads an assignment target (names, dots, commas, parentheses)
// up to stop and returns it as source text.
func (c *compiler) target(stop func() bool) (string, error) {
	var parts []string
	for !stop() {
		t := c.next()
		switch t.kind {
		case tkName:
			parts = append(parts, t.text)
		case tkOp:
			if t.text != "," && t.text != "." && t.text != "(" && t.text != ")" {
				return "", fmt.Errorf("unexpected %q in assignment target", t.text)
			}
			parts = append(parts, t.text)
		default:
			return "", fmt.Errorf("unexpected token in assignment target")
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("missing assignment target")
	}
	s := strings.Join(parts, " ")
	s = strings.ReplaceAll(s, " . ", ".")
	return strings.ReplaceAll(s, " ,", ","), nil
}

func (c *compiler) forStatement() (string, error) {
	c.next()
	target, err := c.target(func() bool { return c.isName("in") || c.peek().kind == tkEOF })
	if err != nil {
		return "", err
	}
	if !c.skipName("in") {
		return "", fmt.Errorf("expected 'in' in for loop")
	}
	// The library splits loop variables at commas and knows no parentheses.
	target = strings.NewReplacer("(", "", ")", "").Replace(target)
	iter, err := c.tuple(false, false, []string{"recursive"})
	if err != nil {
		return "", err
	}
	// siskin_iter makes iterating None or a number fail as in Python.
	out := "for " + target + " in " + fnIter + "(" + iter.code + ")"
	if c.skipName("if") {
		cond, err := c.expression(true)
		if err != nil {
			return "", err
		}
		out += " if (" + cond.code + ")"
	}
	if c.skipName("recursive") {
		out += " recursive"
	}
	return out, c.end()
}

func (c *compiler) setStatement(body string) (string, error) {
	c.next()
	target, err := c.target(func() bool { return c.isOp("=") || c.isOp("|") || c.peek().kind == tkEOF })
	if err != nil {
		return "", err
	}
	if !c.skipOp("=") {
		// Block assignment: {% set x %}...{% endset %}.
		return body, nil
	}
	if strings.ContainsAny(target, ",(") {
		// The library would bind the whole text "a, b" as one name.
		return "", fmt.Errorf("tuple assignment is not supported")
	}
	e, err := c.tuple(false, true, nil)
	if err != nil {
		return "", err
	}
	return "set " + target + " = " + e.code, c.end()
}

func (c *compiler) callStatement() (string, error) {
	c.next()
	out := "call"
	if c.skipOp("(") {
		var params []string
		for !c.skipOp(")") {
			t := c.next()
			if t.kind == tkEOF {
				return "", fmt.Errorf("unclosed call parameters")
			}
			if t.kind == tkName {
				params = append(params, t.text)
			}
		}
		out += "(" + strings.Join(params, ", ") + ")"
	}
	e, err := c.expression(true)
	if err != nil {
		return "", err
	}
	return out + " " + e.code, c.end()
}

// macroStatement compiles parameter defaults. The library splits the
// parameter list at commas, so a default is kept only if its code has
// none outside what the library can parse.
func (c *compiler) macroStatement() (string, error) {
	c.next()
	name := c.next()
	if name.kind != tkName {
		return "", fmt.Errorf("expected macro name")
	}
	if err := c.expectOp("("); err != nil {
		return "", err
	}
	var params []string
	for !c.skipOp(")") {
		if len(params) > 0 {
			if err := c.expectOp(","); err != nil {
				return "", err
			}
			if c.skipOp(")") {
				break
			}
		}
		p := c.next()
		if p.kind != tkName {
			return "", fmt.Errorf("expected parameter name")
		}
		if !c.skipOp("=") {
			params = append(params, p.text)
			continue
		}
		d, err := c.expression(true)
		if err != nil {
			return "", err
		}
		if strings.ContainsAny(d.code, ",)") {
			return "", fmt.Errorf("macro %s: default of %s is too complex", name.text, p.text)
		}
		params = append(params, p.text+"="+d.code)
	}
	return "macro " + name.text + "(" + strings.Join(params, ", ") + ")", c.end()
}
