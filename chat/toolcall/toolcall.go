// Package toolcall splits generated text into content, reasoning and tool
// calls, for an OpenAI-compatible chat endpoint. Parser names follow vLLM's
// --tool-call-parser and --reasoning-parser so a deployment can switch
// servers without changing flags.
//
// Tool formats: spark25 (Spark-X2.5's <tool_call>NAME<arg_key>..), hermes
// (Qwen2.5/Qwen3 <tool_call>{json}</tool_call>), llama3_json (Llama 3.1/3.2
// bare JSON, optional <|python_tag|>, ';'-separated) and mistral
// ([TOOL_CALLS][{..}] and [TOOL_CALLS]name[ARGS]{..}). Reasoning formats:
// deepseek_r1 and qwen3 (<think>..</think>).
//
// The same parser serves streaming and non-streaming requests: Feed releases
// only what later text cannot change, so the concatenation of all deltas is
// exactly what Parse returns for the whole text. Choices where vLLM is
// unclear or inconsistent between its own streaming and non-streaming paths:
//
//   - Text after tool calls stays content (vLLM's hermes drops it in
//     non-streaming mode). Whitespace around a call collapses to one run and
//     is dropped at the start and end, so an answer that is only calls has
//     empty content, and "Sure.\n<call>" gives "Sure.".
//   - A tool block that does not parse is released verbatim as content. An
//     unclosed block at the end is content too (vLLM does the same for
//     spark25's format), except for hermes where, like vLLM's regex, a
//     complete call JSON before the end still counts as a call.
//   - llama3_json: text that follows a call is content; vLLM would make the
//     whole output content, but streamed calls cannot be taken back.
//   - Reasoning has its surrounding whitespace trimmed, and so does the start
//     of the content that follows </think>.
//   - Calls are released whole, once complete (no argument deltas), and
//     tool syntax inside reasoning stays reasoning, as in vLLM.
//   - Calls to tools that the request did not declare are dropped; with no
//     declared tools every call is kept.
package toolcall

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Tool is a tool the request declared.
type Tool struct {
	Name       string
	Parameters json.RawMessage // JSON schema of the arguments object
}

// Call is one parsed tool call.
type Call struct {
	ID        string
	Name      string
	Arguments string // compact JSON object text
}

// Result is parsed output: a delta from Feed or Finish, or a whole response.
// It does not record how content and calls interleave within one delta;
// OpenAI's format cannot say so either, so send the content first.
type Result struct {
	Content   string
	Reasoning string
	Calls     []Call
}

// Append adds a later delta to r.
func (r *Result) Append(d Result) {
	r.Content += d.Content
	r.Reasoning += d.Reasoning
	r.Calls = append(r.Calls, d.Calls...)
}

// Empty reports whether r carries nothing, so callers can skip a chunk.
func (r Result) Empty() bool {
	return r.Content == "" && r.Reasoning == "" && len(r.Calls) == 0
}

// Parser parses one generation; make a new one per request (and per choice).
type Parser interface {
	// Feed takes the next chunk of generated text and returns what can be
	// released now: content and reasoning that can no longer become part of
	// a tag (an incomplete UTF-8 sequence at the end is held too), and calls
	// that are complete.
	Feed(text string) Result
	// Finish flushes at the end of generation: held-back text that never
	// became a tag is released as content. Feed and Finish do nothing after
	// Finish.
	Finish() Result
}

// Unclosed says what reasoning that never reaches </think> becomes.
type Unclosed int

const (
	// UnclosedDefault uses the reasoning parser's own rule: reasoning for
	// deepseek_r1, content for qwen3.
	UnclosedDefault Unclosed = iota
	// UnclosedReasoning keeps it reasoning: the output was cut off while
	// thinking (vLLM's deepseek_r1, and its qwen3 since late 2025 when
	// thinking is enabled). Reasoning streams as it is generated.
	UnclosedReasoning
	// UnclosedContent returns the whole text unsplit, as content (vLLM's
	// qwen3 parser up to 2025: no complete <think>..</think>, no split).
	// Since a delta cannot be taken back, reasoning is then held while
	// streaming until </think> arrives.
	UnclosedContent
)

// Options tunes a Parser.
type Options struct {
	// NewID makes call ids; nil means random ids in vLLM's style
	// ("chatcmpl-tool-" and 32 hex digits), or 9 letters and digits for
	// mistral, whose chat templates reject any other tool call id.
	NewID func() string
	// PromptOpenedThink says the prompt ended inside an open <think> (as the
	// generation prompts of Spark-X2.5, DeepSeek-R1 and Qwen3 thinking
	// models do), so the output starts as reasoning and only </think>
	// appears. See PromptOpensThink.
	PromptOpenedThink bool
	// Unclosed overrides what reasoning without </think> becomes.
	Unclosed Unclosed
}

var toolParsers = []string{"hermes", "llama3_json", "mistral", "spark25"}

var reasoningParsers = []string{"deepseek_r1", "qwen3"}

// ToolParsers lists the known tool parser names.
func ToolParsers() []string { return append([]string(nil), toolParsers...) }

// ReasoningParsers lists the known reasoning parser names.
func ReasoningParsers() []string { return append([]string(nil), reasoningParsers...) }

// New makes a parser for one request. An empty name turns that part off; an
// unknown one is an error that lists the known names. tools are the tools the
// request declared.
func New(toolParser, reasoningParser string, tools []Tool, opts Options) (Parser, error) {
	p := &parser{}
	switch reasoningParser {
	case "":
	case "deepseek_r1", "qwen3":
		unclosed := opts.Unclosed
		if unclosed == UnclosedDefault {
			unclosed = UnclosedReasoning
			if reasoningParser == "qwen3" {
				unclosed = UnclosedContent
			}
		}
		p.think = newThinkStage(opts.PromptOpenedThink, unclosed == UnclosedContent)
	default:
		return nil, fmt.Errorf("toolcall: unknown reasoning parser %q (known: %s)", reasoningParser, strings.Join(reasoningParsers, ", "))
	}
	newID := opts.NewID
	var f format
	switch toolParser {
	case "":
	case "spark25":
		f = &tagFormat{open: "<tool_call>", close: "</tool_call>", parse: newSparkParser(tools)}
	case "hermes":
		f = &tagFormat{open: "<tool_call>", close: "</tool_call>", parse: parseHermes}
	case "llama3_json":
		f = &llamaFormat{}
	case "mistral":
		f = &mistralFormat{}
		if newID == nil {
			newID = mistralID
		}
	default:
		return nil, fmt.Errorf("toolcall: unknown tool parser %q (known: %s)", toolParser, strings.Join(toolParsers, ", "))
	}
	if f != nil {
		if newID == nil {
			newID = vllmID
		}
		p.tools = newToolStage(f, tools, newID)
	}
	return p, nil
}

// Parse runs p over a whole generation: Feed(text) then Finish, merged.
func Parse(p Parser, text string) Result {
	r := p.Feed(text)
	r.Append(p.Finish())
	return r
}

// PromptOpensThink reports whether a rendered prompt ends inside an open
// <think> block (trailing whitespace allowed), the case for
// Options.PromptOpenedThink.
func PromptOpensThink(prompt string) bool {
	return strings.HasSuffix(strings.TrimRight(prompt, wsChars), "<think>")
}

// parser chains the reasoning split, then tool parsing of the content, then
// UTF-8 hold-back of both text channels.
type parser struct {
	think   *thinkStage
	tools   *toolStage
	content utf8Hold
	reason  utf8Hold
	done    bool
}

func (p *parser) Feed(text string) Result { return p.step(text, false) }

func (p *parser) Finish() Result {
	r := p.step("", true)
	p.done = true
	return r
}

func (p *parser) step(text string, final bool) Result {
	if p.done {
		return Result{}
	}
	var r Result
	content := text
	if p.think != nil {
		r.Reasoning, content = p.think.feed(text, final)
	}
	if p.tools != nil {
		content, r.Calls = p.tools.feed(content, final)
	}
	r.Content = p.content.take(content, final)
	r.Reasoning = p.reason.take(r.Reasoning, final)
	return r
}

// utf8Hold keeps an incomplete UTF-8 sequence at the end of a delta for the
// next one: chunks may split a character, and a delta that is not valid
// UTF-8 would be mangled (to U+FFFD) when sent as JSON.
type utf8Hold struct{ pend string }

func (h *utf8Hold) take(s string, final bool) string {
	if h.pend != "" {
		s = h.pend + s
		h.pend = ""
	}
	if final {
		return s
	}
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				h.pend = s[i:]
				return s[:i]
			}
			break
		}
	}
	return s
}

const wsChars = " \t\r\n"

func trimWS(s string) string { return strings.Trim(s, wsChars) }

// skipWS returns the index of the first non-whitespace byte of s at or
// after i (len(s) if none).
func skipWS(s string, i int) int {
	for i < len(s) && strings.IndexByte(wsChars, s[i]) >= 0 {
		i++
	}
	return i
}

// partialSuffix returns the length of the longest suffix of s that is a
// proper prefix of tag: text that may still grow into the tag, so it is held.
func partialSuffix(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// isPartial reports whether s is a proper, non-empty prefix of tag.
func isPartial(s, tag string) bool {
	return len(s) < len(tag) && strings.HasPrefix(tag, s)
}

// vllmID makes ids like vLLM's: "chatcmpl-tool-" and a random UUID's hex.
func vllmID() string {
	var b [16]byte
	rand.Read(b[:])
	return "chatcmpl-tool-" + hex.EncodeToString(b[:])
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// mistralID makes a 9-character alphanumeric id: Mistral's chat templates
// raise an error for tool_call_id values of any other shape, so ids in
// vLLM's usual style would break the next turn.
func mistralID() string {
	var b [9]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return string(b[:])
}
