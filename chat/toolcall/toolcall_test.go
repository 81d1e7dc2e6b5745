package toolcall

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestNewUnknownNames(t *testing.T) {
	_, err := New("qwen3_xml", "", nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "hermes, llama3_json, mistral, spark25") {
		t.Errorf("unknown tool parser: err = %v", err)
	}
	_, err = New("", "granite", nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "deepseek_r1, qwen3") {
		t.Errorf("unknown reasoning parser: err = %v", err)
	}
	for _, tp := range append(ToolParsers(), "") {
		for _, rp := range append(ReasoningParsers(), "") {
			if _, err := New(tp, rp, nil, Options{}); err != nil {
				t.Errorf("New(%q, %q): %v", tp, rp, err)
			}
		}
	}
}

func TestNoParsersPassesTextThrough(t *testing.T) {
	p, _ := New("", "", nil, Options{})
	in := "<think>a</think><tool_call>x</tool_call> \n"
	if got := Parse(p, in); got.Content != in || got.Reasoning != "" || got.Calls != nil {
		t.Errorf("got %+v", got)
	}
}

func TestPromptOpensThink(t *testing.T) {
	for prompt, want := range map[string]bool{
		"<｜start▁of▁sentence｜><|Bot|><think>":            true,
		"<|im_start|>assistant\n<think>\n":               true,
		"<|im_start|>assistant\n<think>\n\n</think>\n\n": false,
		"<|im_start|>assistant\n":                        false,
	} {
		if got := PromptOpensThink(prompt); got != want {
			t.Errorf("PromptOpensThink(%q) = %v", prompt, got)
		}
	}
}

func TestDefaultIDs(t *testing.T) {
	vllm := regexp.MustCompile(`^chatcmpl-tool-[0-9a-f]{32}$`)
	mistralRe := regexp.MustCompile(`^[A-Za-z0-9]{9}$`)
	for _, tc := range []struct {
		parser, in string
		re         *regexp.Regexp
	}{
		{"spark25", "<tool_call>a</tool_call><tool_call>b</tool_call>", vllm},
		{"hermes", `<tool_call>{"name":"a"}</tool_call><tool_call>{"name":"b"}</tool_call>`, vllm},
		{"llama3_json", `{"name":"a","parameters":{}};{"name":"b","parameters":{}}`, vllm},
		{"mistral", `[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[ARGS]{}`, mistralRe},
	} {
		p, _ := New(tc.parser, "", nil, Options{})
		r := Parse(p, tc.in)
		if len(r.Calls) != 2 {
			t.Fatalf("%s: %+v", tc.parser, r)
		}
		for _, c := range r.Calls {
			if !tc.re.MatchString(c.ID) {
				t.Errorf("%s: id %q does not match %v", tc.parser, c.ID, tc.re)
			}
		}
		if r.Calls[0].ID == r.Calls[1].ID {
			t.Errorf("%s: repeated id %q", tc.parser, r.Calls[0].ID)
		}
	}
}

// TestHoldBack checks what each Feed releases, not just the total.
func TestHoldBack(t *testing.T) {
	type step struct{ feed, content, reasoning string }
	for _, tc := range []struct {
		cfg   config
		steps []step
	}{
		{hermes, []step{
			{"Hello <tool_", "Hello", ""},
			{"x", " <tool_x", ""},
			{" and <tool_call>{\"na", " and", ""}, // whitespace waits: a call may follow
			{"me\": \"get_time\"}</tool_call>", "", ""},
			{"", "", ""},
		}},
		{spark, []step{{"caf\xc3", "caf", ""}, {"\xa9 <", "é", ""}, {"b", " <b", ""}}},
		{config{reason: "deepseek_r1", opened: true}, []step{
			{"a</thi", "", "a"}, {"nk", "", ""}, {">\n\nb", "b", ""},
		}},
		{config{reason: "qwen3"}, []step{
			{"<think>a", "", ""}, {" b</think>c", "c", "a b"},
		}},
		{config{reason: "qwen3", tool: "mistral"}, []step{
			{" ", "", ""}, {"<thi", "", ""}, {"s is not it [TOOL", " <this is not it", ""},
		}},
	} {
		p := tc.cfg.parser(t)
		for i, s := range tc.steps {
			got := p.Feed(s.feed)
			if got.Content != s.content || got.Reasoning != s.reasoning {
				t.Errorf("%v step %d Feed(%q) = %+v, want content %q reasoning %q", tc.cfg, i, s.feed, got, s.content, s.reasoning)
			}
		}
	}
}

func TestCompactJSON(t *testing.T) {
	for in, want := range map[string]string{
		` { "b" : 1 , "a" : [ 1 , 2.50 , -3e+2 ] } `: `{"b":1,"a":[1,2.50,-3e+2]}`,
		`"\u00e9\ud83d\ude00\n\u0001 <&>"`:           `"é😀\n\u0001 <&>"`,
		`{"k\"ey": "a\/b", "x": true, "y": null}`:    `{"k\"ey":"a/b","x":true,"y":null}`,
		`"\u2028"`:          "\"\u2028\"",
		"\"bad \xff utf8\"": "\"bad \ufffd utf8\"",
	} {
		got, ok := compactJSON(in)
		if !ok || got != want {
			t.Errorf("compactJSON(%s) = %s, %v; want %s", in, got, ok, want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("compactJSON(%s) = %s is not valid JSON", in, got)
		}
	}
	for _, in := range []string{``, `{`, `{a:1}`, `[1,]`, `1 2`, `NaN`} {
		if got, ok := compactJSON(in); ok {
			t.Errorf("compactJSON(%s) = %s, want failure", in, got)
		}
	}
}

func TestCoerce(t *testing.T) {
	for _, tc := range []struct {
		val   string
		types []string
		want  string
	}{
		{"Paris", []string{"string"}, `"Paris"`},
		{" 12 ", []string{"string"}, `" 12 "`},
		{"Null", []string{"string"}, `null`},
		{"-0", []string{"integer"}, `0`},
		{"-0012", []string{"integer"}, `-12`},
		{"1.5", []string{"integer"}, `1.5`},
		{"0x10", []string{"integer"}, `"0x10"`},
		{"3.0", []string{"number"}, `3`},
		{"-0.0", []string{"number"}, `0`},
		{"1234567.5", []string{"number"}, `1234567.5`},
		{"1e20", []string{"number"}, `1e+20`},
		{"1e400", []string{"number"}, `1e400`},
		{"inf", []string{"number"}, `"inf"`},
		{"NaN", []string{"number"}, `"NaN"`},
		{".5", []string{"number"}, `0.5`},
		{"FALSE", []string{"boolean"}, `false`},
		{"1", []string{"boolean"}, `true`},
		{"[1, {\"a\": \"b\"}]", []string{"array"}, `[1,{"a":"b"}]`},
		{"{\"a\": 1}", []string{"string"}, `"{\"a\": 1}"`},
		{"{\"a\": 1}", nil, `{"a":1}`},
		{"\"quoted\"", nil, `"quoted"`},
		{"line1\nline2", nil, `"line1\nline2"`},
		{"", []string{"integer"}, `""`},
		{"7", []string{"null", "integer"}, `7`},
		{"a\xffb\x01", []string{"string"}, `"a\ufffdb\u0001"`},
	} {
		if got := coerce(tc.val, tc.types); got != tc.want {
			t.Errorf("coerce(%q, %v) = %s, want %s", tc.val, tc.types, got, tc.want)
		}
	}
}

// TestResultHelpers covers Append and Empty as the chat layer uses them.
func TestResultHelpers(t *testing.T) {
	var r Result
	if !r.Empty() {
		t.Error("zero Result not empty")
	}
	r.Append(Result{Content: "a", Calls: []Call{{Name: "x"}}})
	r.Append(Result{Reasoning: "r", Content: "b"})
	if r.Content != "ab" || r.Reasoning != "r" || len(r.Calls) != 1 || r.Empty() {
		t.Errorf("got %+v", r)
	}
}
