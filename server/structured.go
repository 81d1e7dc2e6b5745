package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/siskin-ml/siskin/chat/toolcall"
	"github.com/siskin-ml/siskin/grammar"
	"github.com/siskin-ml/siskin/sample"
)

// structuredFields are the request fields that constrain the output to a
// grammar: OpenAI's response_format (in samplingFields), vLLM's
// structured_outputs (and its older guided_* fields), llama-server's
// json_schema and grammar.
type structuredFields struct {
	StructuredOutputs json.RawMessage `json:"structured_outputs"`
	GuidedJSON        json.RawMessage `json:"guided_json"`
	GuidedRegex       *string         `json:"guided_regex"`
	GuidedChoice      []string        `json:"guided_choice"`
	GuidedGrammar     *string         `json:"guided_grammar"`
	GuidedWhitespace  *string         `json:"guided_whitespace_pattern"`
	JSONSchema        json.RawMessage `json:"json_schema"`
	Grammar           *string         `json:"grammar"`

	// What the fields asked for, set by parseStructured (or by a forced
	// tool call): the grammar, and text the prompt already holds that
	// each choice's matcher consumes first.
	constraint *grammar.Grammar
	forced     string
	lazy       *grammar.LazyOptions // set: constraint switches on at lazy.Trigger
}

func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && string(t) != "null"
}

// parseStructured compiles the constraint the request asks for; at most
// one field may ask.
func (s *Server) parseStructured(f *samplingFields) *apiError {
	var asks []ask
	if present(f.ResponseFormat) {
		g, err := parseResponseFormat(f.ResponseFormat)
		if err != nil {
			return err
		}
		if g != nil {
			asks = append(asks, ask{"response_format", func() (*grammar.Grammar, error) { return g, nil }})
		}
	}
	if present(f.StructuredOutputs) {
		var so struct {
			JSON       json.RawMessage `json:"json"`
			Regex      *string         `json:"regex"`
			Choice     []string        `json:"choice"`
			Grammar    *string         `json:"grammar"`
			JSONObject bool            `json:"json_object"`
			Whitespace *string         `json:"whitespace_pattern"`
		}
		if err := json.Unmarshal(f.StructuredOutputs, &so); err != nil {
			return badRequest("structured_outputs", "structured_outputs must be an object: %v", err)
		}
		if err := checkWhitespace("structured_outputs.whitespace_pattern", so.Whitespace); err != nil {
			return err
		}
		asks = appendAsks(asks, "structured_outputs.", so.JSON, so.Regex, so.Choice, so.Grammar)
		if so.JSONObject {
			asks = append(asks, ask{"structured_outputs.json_object", func() (*grammar.Grammar, error) { return grammar.JSONObject(), nil }})
		}
	}
	if err := checkWhitespace("guided_whitespace_pattern", f.GuidedWhitespace); err != nil {
		return err
	}
	asks = appendAsks(asks, "guided_", f.GuidedJSON, f.GuidedRegex, f.GuidedChoice, f.GuidedGrammar)
	if present(f.JSONSchema) {
		asks = append(asks, ask{"json_schema", func() (*grammar.Grammar, error) { return grammar.FromJSONSchema(schemaBytes(f.JSONSchema)) }})
	}
	if f.Grammar != nil && *f.Grammar != "" {
		asks = append(asks, ask{"grammar", func() (*grammar.Grammar, error) { return grammar.FromGBNF(*f.Grammar) }})
	}
	switch len(asks) {
	case 0:
		return nil
	case 1:
	default:
		return badRequest(asks[1].field, "only one of response_format, structured_outputs, guided_*, json_schema and grammar may be set (got %s and %s)", asks[0].field, asks[1].field)
	}
	g, err := asks[0].make()
	if err != nil {
		return grammarError(asks[0].field, err)
	}
	f.constraint = g
	return nil
}

// checkWhitespace accepts vLLM's whitespace_pattern (the whitespace
// allowed between JSON tokens) when it matches the empty string: siskin
// writes JSON compactly, with no whitespace, so its outputs then follow
// the pattern. One that demands whitespace is refused, never ignored.
// (disable_any_whitespace needs no check: the output never has any.)
func checkWhitespace(field string, pattern *string) *apiError {
	if pattern == nil {
		return nil
	}
	re, err := regexp.Compile(`^(?:` + *pattern + `)$`)
	if err != nil {
		return badRequest(field, "%s is not a valid regular expression: %v", field, err)
	}
	if !re.MatchString("") {
		return badRequest(field, "%s %q must allow no whitespace: siskin writes JSON compactly", field, *pattern)
	}
	return nil
}

// ask is one field asking for a grammar, compiled on demand.
type ask struct {
	field string
	make  func() (*grammar.Grammar, error)
}

// appendAsks adds vLLM's json / regex / choice / grammar fields under prefix.
func appendAsks(asks []ask, prefix string, js json.RawMessage, regex *string, choice []string, gbnf *string) []ask {
	if present(js) {
		asks = append(asks, ask{prefix + "json", func() (*grammar.Grammar, error) { return grammar.FromJSONSchema(schemaBytes(js)) }})
	}
	if regex != nil {
		asks = append(asks, ask{prefix + "regex", func() (*grammar.Grammar, error) { return grammar.FromRegex(*regex) }})
	}
	if choice != nil {
		asks = append(asks, ask{prefix + "choice", func() (*grammar.Grammar, error) { return grammar.Choice(choice) }})
	}
	if gbnf != nil {
		asks = append(asks, ask{prefix + "grammar", func() (*grammar.Grammar, error) { return grammar.FromGBNF(*gbnf) }})
	}
	return asks
}

// schemaBytes is a schema given as an object, or as a string holding one
// (vLLM accepts both).
func schemaBytes(raw json.RawMessage) []byte {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	return raw
}

// parseResponseFormat reads OpenAI's response_format: text (no grammar),
// json_object, or json_schema {name, schema, strict}.
func parseResponseFormat(raw json.RawMessage) (*grammar.Grammar, *apiError) {
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, badRequest("response_format", "response_format must be an object with a type: %v", err)
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return grammar.JSONObject(), nil
	case "json_schema":
		if rf.JSONSchema == nil || !present(rf.JSONSchema.Schema) {
			return nil, badRequest("response_format.json_schema.schema", "response_format json_schema needs json_schema.schema")
		}
		g, err := grammar.FromJSONSchema(rf.JSONSchema.Schema)
		if err != nil {
			return nil, grammarError("response_format.json_schema.schema", err)
		}
		return g, nil
	}
	return nil, badRequest("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\", got %q", rf.Type)
}

// grammarError is a 400 naming the field and, for a schema, the keyword.
func grammarError(field string, err error) *apiError {
	var se *grammar.SchemaError
	if errors.As(err, &se) {
		return badRequest(field, "%s: unsupported or invalid keyword %q at %s: %s", field, se.Keyword, se.Path, se.Msg)
	}
	return badRequest(field, "%s: %v", field, err)
}

// constrainTools sets the tool-call grammar of a turn whose tool_choice is
// "required" or a named tool: the output is then only calls, in the
// model's format, with arguments that match each tool's schema.
func (s *Server) constrainTools(t *turn, f *samplingFields) *apiError {
	if len(t.callTools) == 0 {
		s.constrainLazily(t, f)
		return nil
	}
	if f.constraint != nil {
		return badRequest("tool_choice", "tool_choice %q cannot be combined with response_format or another output constraint", "required")
	}
	var tools []grammar.Tool
	for _, tl := range t.callTools {
		tools = append(tools, grammar.Tool{Name: tl.Name, Parameters: tl.Parameters})
	}
	g, err := grammar.ToolCalls(grammar.ToolCallSpec{Format: t.toolParser, Tools: tools, Parallel: !t.single})
	if err != nil {
		return grammarError("tools", err)
	}
	f.constraint = g
	f.forced = strings.TrimPrefix(t.forced, "</think>")
	return nil
}

// lazyTriggers is the text that opens a tool call, per tool format whose
// calls open with plain text: with tool_choice "auto" the tool-call
// grammar switches on there (llama.cpp's lazy grammars).
var lazyTriggers = map[string]string{"hermes": "<tool_call>", "spark25": "<tool_call>"}

// constrainLazily sets the lazy tool-call grammar of a turn whose
// tool_choice is "auto": free text (and reasoning) until the model opens a
// call, then only calls with arguments that match their tools' schemas.
// Tools whose schemas the grammar cannot honour leave the output free, as
// it was before (the request asked for no constraint).
func (s *Server) constrainLazily(t *turn, f *samplingFields) {
	trigger := lazyTriggers[t.toolParser]
	if !t.autoTools || trigger == "" || len(t.tools) == 0 || f.constraint != nil {
		return
	}
	var tools []grammar.Tool
	for _, tl := range t.tools {
		tools = append(tools, grammar.Tool{Name: tl.Name, Parameters: tl.Parameters})
	}
	g, err := grammar.ToolCalls(grammar.ToolCallSpec{Format: t.toolParser, Tools: tools, Parallel: !t.single})
	if err != nil {
		s.cfg.Logger.Info("tool_choice auto: the tool calls stay unconstrained", "reason", err.Error())
		return
	}
	opt := &grammar.LazyOptions{Trigger: trigger}
	if s.cfg.ReasoningParser != "" {
		opt.SkipOpen, opt.SkipClose = "<think>", "</think>"
		opt.InSkip = toolcall.PromptOpensThink(t.prompt)
	}
	f.constraint, f.lazy = g, opt
}

// withConstraint gives p a fresh matcher of f's grammar (one per choice).
func (s *Server) withConstraint(p sample.Params, f *samplingFields) (sample.Params, error) {
	if f.constraint == nil {
		return p, nil
	}
	if f.lazy != nil {
		l, err := grammar.NewLazy(f.constraint, grammar.VocabFromTokenizer(s.tok), *f.lazy)
		p.Constraint = l
		return p, err
	}
	m := grammar.NewMatcher(f.constraint, grammar.VocabFromTokenizer(s.tok))
	if f.forced != "" && !m.AcceptBytes([]byte(f.forced)) {
		return p, fmt.Errorf("the forced tool-call prefix %q does not fit the tool-call grammar", f.forced)
	}
	p.Constraint = m
	return p, nil
}

// namedTools is the tools a required or named tool_choice may call.
func namedTools(tc toolChoice, tools []toolcall.Tool) []toolcall.Tool {
	switch tc.mode {
	case "required":
		return tools
	case "named":
		for _, t := range tools {
			if t.Name == tc.name {
				return []toolcall.Tool{t}
			}
		}
	}
	return nil
}
