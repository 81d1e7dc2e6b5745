// Package chat renders a model's chat template (Jinja) into the prompt text
// the model was trained on, matching Python jinja2 as Hugging Face
// transformers' apply_chat_template configures it.
package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Message is one chat message as an OpenAI-style request carries it, so a
// request's messages decode straight into []Message.
type Message struct {
	Role string `json:"role"`
	// Content is nil, a string, or []ContentPart. Nil renders as the
	// empty string: OpenAI clients send null content with tool calls, and
	// templates such as Qwen3's fail on None (vLLM substitutes "" too).
	Content          any        `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	Name             string     `json:"name,omitempty"`
}

// ContentPart is one element of a list-valued message content.
type ContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image reference of an "image_url" content part.
type ImageURL struct {
	URL string `json:"url"`
}

// ToolCall is one function call an assistant message made.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and its arguments. Arguments stay raw
// JSON so an object keeps its key order; OpenAI clients send a string
// holding JSON, which Render decodes (see RenderOptions).
type FunctionCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// UnmarshalJSON decodes content as a string or a list of parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	var raw struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message(raw.plain)
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
		m.Content = nil
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return err
		}
		m.Content = s
	case c[0] == '[':
		var parts []ContentPart
		if err := json.Unmarshal(c, &parts); err != nil {
			return fmt.Errorf("chat: message content: %w", err)
		}
		m.Content = parts
	default:
		return fmt.Errorf("chat: message content must be a string, a list of parts or null")
	}
	return nil
}

// Template is a parsed chat template. It is safe for concurrent use.
type Template struct {
	tmpl *jinja.Template // nil when a model ships only named variants
	// globals are the names of our functions the compiled template
	// calls; Render passes only these, since the library copies every
	// variable into a fresh scope on each render.
	globals []string
	// toolUse, when set, renders requests that carry tools, as
	// transformers picks a model's "tool_use" template then.
	toolUse *Template
	// SpecialTokens are the special tokens a loaded model declares
	// (bos_token, eos_token, ...), for filling RenderOptions; Render does
	// not read them.
	SpecialTokens map[string]string
}

// Parse compiles a chat template source. Like jinja2 it rejects unknown
// filters and tests here rather than at render time.
func Parse(source string) (t *Template, err error) {
	defer func() {
		// The library is not hardened against every malformed template.
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("chat: parse template: internal error: %v", r)
		}
	}()
	src, err := rewriteSource(source)
	if err != nil {
		return nil, fmt.Errorf("chat: parse template: %w", err)
	}
	c, err := jinja.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("chat: parse template: %w", err)
	}
	return &Template{tmpl: c, globals: usedGlobals(src)}, nil
}

// RenderOptions is what a template sees, mirroring apply_chat_template.
type RenderOptions struct {
	// Messages is the conversation. MessagesJSON, when set, replaces it
	// with a raw JSON array handed to the template as is (every key, in
	// order), for callers that carry fields Message does not model.
	Messages     []Message
	MessagesJSON json.RawMessage
	// Tools are the tool schemas, e.g. {"type":"function","function":{...}},
	// kept raw so their key order reaches tojson unchanged.
	Tools []json.RawMessage
	// AddGenerationPrompt appends the opening of an assistant turn.
	AddGenerationPrompt bool
	// ContinueFinalMessage leaves the last message open, so that the
	// model continues it (a prefilled answer): the render stops where that
	// message's text ends, as transformers' continue_final_message does.
	// It excludes AddGenerationPrompt.
	ContinueFinalMessage bool
	// BOSToken and EOSToken are passed as bos_token and eos_token; an
	// empty one is left undefined, as transformers leaves a missing
	// special token out.
	BOSToken, EOSToken string
	// Kwargs are extra template variables (chat_template_kwargs such as
	// enable_thinking, or other special tokens such as pad_token). Values
	// may be Go scalars, slices, maps, or json.RawMessage (see goToValue).
	// They cannot replace messages, tools or add_generation_prompt.
	Kwargs map[string]any
	// Now is the clock strftime_now reads; nil means time.Now.
	Now func() time.Time
}

// reserved are the variables Render sets itself.
var reserved = []string{"messages", "tools", "add_generation_prompt"}

// Render renders the template. A template that calls raise_exception, or
// that jinja2 would reject at run time, returns an error.
func (t *Template) Render(opt RenderOptions) (out string, err error) {
	if len(opt.Tools) > 0 && t.toolUse != nil {
		t = t.toolUse
	}
	if t.tmpl == nil {
		return "", errors.New("chat: the model has named chat templates but no \"default\" one")
	}
	data := map[string]jinja.Value{}
	for k, v := range opt.Kwargs {
		if slices.Contains(reserved, k) {
			return "", fmt.Errorf("chat: kwarg %q is reserved", k)
		}
		data[k], err = goToValue(v)
		if err != nil {
			return "", fmt.Errorf("chat: kwarg %q: %w", k, err)
		}
	}
	if opt.BOSToken != "" {
		data["bos_token"] = jinja.NewString(opt.BOSToken)
	}
	if opt.EOSToken != "" {
		data["eos_token"] = jinja.NewString(opt.EOSToken)
	}
	var msgs jinja.Value
	if opt.MessagesJSON != nil {
		msgs, err = jsonToValue(opt.MessagesJSON)
		if err == nil && !msgs.IsList() {
			err = errors.New("not a JSON array")
		}
	} else {
		msgs, err = messagesValue(opt.Messages)
	}
	if err != nil {
		return "", fmt.Errorf("chat: messages: %w", err)
	}
	normalizeArguments(msgs)
	data["messages"] = msgs
	// Without tools the name stays undefined, as in the reference renders:
	// templates test "tools is defined", and some iterate tools without
	// a None check.
	if len(opt.Tools) > 0 {
		items := make([]jinja.Value, len(opt.Tools))
		for i, raw := range opt.Tools {
			items[i], err = jsonToValue(raw)
			if err != nil {
				return "", fmt.Errorf("chat: tool %d: %w", i, err)
			}
		}
		data["tools"] = jinja.NewList(items)
	}
	data["add_generation_prompt"] = jinja.NewBool(opt.AddGenerationPrompt)
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	addGlobals(data, t.globals, now)

	// The library is not hardened against every hostile template or input
	// (deep recursion aside, a bad index can panic); a server must get an
	// error instead of a crash.
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("chat: render: internal error: %v", r)
		}
	}()
	out, err = t.tmpl.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("chat: render: %w", err)
	}
	if opt.ContinueFinalMessage {
		return openFinal(out, opt.Messages)
	}
	return out, nil
}

// TextOf is a message content's text: the string, or the text parts
// joined by newlines.
func TextOf(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []ContentPart:
		var texts []string
		for _, p := range c {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// openFinal cuts a render after the last occurrence of the final message's
// text (its last text part's, for a list), or of that text trimmed of
// spaces, which templates often trim: what follows closes the message.
func openFinal(out string, msgs []Message) (string, error) {
	if len(msgs) == 0 {
		return "", errors.New("chat: continue_final_message needs the messages as Messages")
	}
	final := ""
	switch c := msgs[len(msgs)-1].Content.(type) {
	case string:
		final = c
	case []ContentPart:
		for _, p := range c {
			if p.Type == "text" {
				final = p.Text
			}
		}
	}
	if strings.TrimSpace(final) == "" {
		return "", errors.New("chat: continue_final_message: the final message has no text to continue")
	}
	for _, text := range []string{final, strings.TrimSpace(final)} {
		if i := strings.LastIndex(out, text); i >= 0 {
			return out[:i+len(text)], nil
		}
	}
	return "", errors.New("chat: continue_final_message: the final message's text does not appear in the rendered chat")
}

// messagesValue converts messages to the dicts transformers would see:
// role and content always, the other fields only when set, so "x is
// defined" and "'x' in message" behave as for a request that omits them.
func messagesValue(msgs []Message) (jinja.Value, error) {
	items := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		d := jinja.NewDict()
		dd := d.AsDict()
		dd.Set("role", jinja.NewString(m.Role))
		switch c := m.Content.(type) {
		case nil:
			dd.Set("content", jinja.NewString(""))
		case string:
			dd.Set("content", jinja.NewString(c))
		case []ContentPart:
			parts := make([]jinja.Value, len(c))
			for j, p := range c {
				pd := jinja.NewDict()
				pd.AsDict().Set("type", jinja.NewString(p.Type))
				if p.Text != "" || p.Type == "text" {
					pd.AsDict().Set("text", jinja.NewString(p.Text))
				}
				if p.ImageURL != nil {
					u := jinja.NewDict()
					u.AsDict().Set("url", jinja.NewString(p.ImageURL.URL))
					pd.AsDict().Set("image_url", u)
				}
				parts[j] = pd
			}
			dd.Set("content", jinja.NewList(parts))
		default:
			return jinja.Undefined(), fmt.Errorf("message %d: content must be a string or []ContentPart, not %T", i, m.Content)
		}
		if m.ReasoningContent != "" {
			dd.Set("reasoning_content", jinja.NewString(m.ReasoningContent))
		}
		if len(m.ToolCalls) > 0 {
			calls := make([]jinja.Value, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				cd := jinja.NewDict()
				if tc.ID != "" {
					cd.AsDict().Set("id", jinja.NewString(tc.ID))
				}
				if tc.Type != "" {
					cd.AsDict().Set("type", jinja.NewString(tc.Type))
				}
				f := jinja.NewDict()
				f.AsDict().Set("name", jinja.NewString(tc.Function.Name))
				args := jinja.NewDict()
				if len(tc.Function.Arguments) > 0 {
					v, err := jsonToValue(tc.Function.Arguments)
					if err != nil {
						return jinja.Undefined(), fmt.Errorf("message %d tool call %d arguments: %w", i, j, err)
					}
					args = v
				}
				f.AsDict().Set("arguments", args)
				cd.AsDict().Set("function", f)
				calls[j] = cd
			}
			dd.Set("tool_calls", jinja.NewList(calls))
		}
		if m.ToolCallID != "" {
			dd.Set("tool_call_id", jinja.NewString(m.ToolCallID))
		}
		if m.Name != "" {
			dd.Set("name", jinja.NewString(m.Name))
		}
		items[i] = d
	}
	return jinja.NewList(items), nil
}

// normalizeArguments replaces a tool call's string arguments holding a JSON
// object by that object. OpenAI clients send arguments as a JSON string
// while templates iterate them or print them with tojson, expecting the
// mapping transformers users pass (vLLM and llama.cpp decode them too).
// A string that is not a JSON object is left alone.
func normalizeArguments(msgs jinja.Value) {
	for _, m := range msgs.AsList().Items {
		if !m.IsDict() {
			continue
		}
		calls, ok := m.AsDict().Get("tool_calls")
		if !ok || !calls.IsList() {
			continue
		}
		for _, c := range calls.AsList().Items {
			if !c.IsDict() {
				continue
			}
			f, ok := c.AsDict().Get("function")
			if !ok || !f.IsDict() {
				continue
			}
			a, ok := f.AsDict().Get("arguments")
			if !ok || !a.IsString() {
				continue
			}
			if v, err := jsonToValue([]byte(a.AsString())); err == nil && v.IsDict() {
				f.AsDict().Set("arguments", v)
			}
		}
	}
}

// goToValue converts a kwarg. Maps are converted with sorted keys, since
// Go maps have no order, and integral float64s become ints; pass
// json.RawMessage to keep key order and number spelling.
func goToValue(v any) (jinja.Value, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return jsonToValue(x)
	case jinja.Value:
		return x, nil
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(x), nil
	case string:
		return jinja.NewString(x), nil
	case int:
		return jinja.NewInt(int64(x)), nil
	case int64:
		return jinja.NewInt(x), nil
	case float64:
		// encoding/json decodes every number of a request's
		// chat_template_kwargs into float64, where Python's json.loads
		// would give an int for 1024; keep those ints.
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return jinja.NewInt(int64(x)), nil
		}
		return jinja.NewFloat(x), nil
	case json.Number:
		return numberValue(x), nil
	case []any:
		items := make([]jinja.Value, len(x))
		for i, it := range x {
			var err error
			if items[i], err = goToValue(it); err != nil {
				return jinja.Undefined(), err
			}
		}
		return jinja.NewList(items), nil
	case map[string]any:
		d := jinja.NewDict()
		for _, k := range slices.Sorted(maps.Keys(x)) {
			it, err := goToValue(x[k])
			if err != nil {
				return jinja.Undefined(), err
			}
			d.AsDict().Set(k, it)
		}
		return d, nil
	}
	// Anything else goes through JSON, which also covers structs.
	b, err := json.Marshal(v)
	if err != nil {
		return jinja.Undefined(), err
	}
	return jsonToValue(b)
}
