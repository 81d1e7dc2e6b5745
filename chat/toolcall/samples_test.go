package toolcall

import (
	"encoding/json"
	"testing"
)

// testTools are the declared tools used by most samples.
var testTools = []Tool{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{
		"city":{"type":"string"},"days":{"type":"integer"},"unit":{"type":"string","enum":["c","f"]}},
		"required":["city"]}`)},
	{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{
		"query":{"type":"string"},"limit":{"type":"integer"},"score":{"type":"number"},
		"exact":{"type":"boolean"},"filters":{"type":"object"},"tags":{"type":"array"},
		"note":{"type":["string","null"]},"n":{"type":["integer","string"]}}}`)},
	{Name: "get_time"}, // no schema at all
}

type sample struct {
	name string
	cfg  config
	in   string
	want Result
}

func call(id, name, args string) Call { return Call{ID: id, Name: name, Arguments: args} }

func calls(c ...Call) []Call { return c }

var (
	spark   = config{tool: "spark25", tools: testTools}
	hermes  = config{tool: "hermes", tools: testTools}
	llama   = config{tool: "llama3_json", tools: testTools}
	mistral = config{tool: "mistral", tools: testTools}
)

func with(c config, f func(*config)) config {
	f(&c)
	return c
}

var noTools = func(c *config) { c.tools = nil }

var samples = []sample{
	// spark25
	{"spark/doc example", with(spark, func(c *config) {
		c.tools = []Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"properties":{"days":{"type":"integer"}}}`)}}
	}),
		"Let me check.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
		Result{Content: "Let me check.", Calls: calls(call("call_1", "get_weather", `{"city":"Paris","days":3}`))}},
	{"spark/glm newlines and text after", spark,
		"Checking both.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>東京</arg_value>\n<arg_key>unit</arg_key>\n<arg_value>c</arg_value>\n</tool_call>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Zürich</arg_value>\n</tool_call>\nDone, 🌦️.",
		Result{Content: "Checking both.\nDone, 🌦️.", Calls: calls(
			call("call_1", "get_weather", `{"city":"東京","unit":"c"}`),
			call("call_2", "get_weather", `{"city":"Zürich"}`))}},
	{"spark/typed coercion", spark,
		"<tool_call>search" +
			"<arg_key>query</arg_key><arg_value>  say \"hi\"\n\tnow  </arg_value>" +
			"<arg_key>limit</arg_key><arg_value> +007 </arg_value>" +
			"<arg_key>score</arg_key><arg_value>2.50</arg_value>" +
			"<arg_key>exact</arg_key><arg_value>True</arg_value>" +
			"<arg_key>filters</arg_key><arg_value>{\"lang\": \"fr\", \"years\": [2020, 2021], \"a\": \"\\u00e9\"}</arg_value>" +
			"<arg_key>tags</arg_key><arg_value>[\"x\", 1]</arg_value>" +
			"<arg_key>note</arg_key><arg_value>NULL</arg_value>" +
			"<arg_key>n</arg_key><arg_value>many</arg_value>" +
			"<arg_key>extra</arg_key><arg_value>5</arg_value>" +
			"<arg_key>words</arg_key><arg_value>hello world</arg_value>" +
			"</tool_call>",
		Result{Calls: calls(call("call_1", "search",
			`{"query":"  say \"hi\"\n\tnow  ","limit":7,"score":2.5,"exact":true,"filters":{"lang":"fr","years":[2020,2021],"a":"é"},"tags":["x",1],"note":null,"n":"many","extra":5,"words":"hello world"}`))}},
	{"spark/failed conversions", spark,
		"<tool_call>search" +
			"<arg_key>limit</arg_key><arg_value>3.0</arg_value>" +
			"<arg_key>score</arg_key><arg_value>1e3</arg_value>" +
			"<arg_key>exact</arg_key><arg_value>0</arg_value>" +
			"<arg_key>filters</arg_key><arg_value>{lang: fr}</arg_value>" +
			"<arg_key>n</arg_key><arg_value>12345678901234567890123</arg_value>" +
			"<arg_key>query</arg_key><arg_value>null</arg_value>" +
			"</tool_call>" +
			"<tool_call>search" +
			"<arg_key>limit</arg_key><arg_value>lots</arg_value>" +
			"<arg_key>score</arg_key><arg_value>0.1e-6</arg_value>" +
			"<arg_key>exact</arg_key><arg_value>yes</arg_value>" +
			"<arg_key>tags</arg_key><arg_value>not json</arg_value>" +
			"</tool_call>",
		Result{Calls: calls(
			call("call_1", "search", `{"limit":3.0,"score":1000,"exact":false,"filters":"{lang: fr}","n":12345678901234567890123,"query":null}`),
			call("call_2", "search", `{"limit":"lots","score":1e-07,"exact":"yes","tags":"not json"}`))}},
	{"spark/keys: empty skipped, duplicate keeps first place and last value, no value skipped", spark,
		"<tool_call> get_weather <arg_key>city</arg_key><arg_value>Lyon</arg_value><arg_key> </arg_key><arg_value>x</arg_value>" +
			"<arg_key>days</arg_key>oops<arg_key>unit</arg_key><arg_value>f</arg_value><arg_key>city</arg_key><arg_value>Nice</arg_value></tool_call>",
		Result{Calls: calls(call("call_1", "get_weather", `{"city":"Nice","unit":"f"}`))}},
	{"spark/no arguments", spark, "<tool_call>get_time</tool_call>",
		Result{Calls: calls(call("call_1", "get_time", `{}`))}},
	{"spark/undeclared tool dropped", spark,
		"A<tool_call>rm_rf<arg_key>path</arg_key><arg_value>/</arg_value></tool_call> B<tool_call>get_time</tool_call>",
		Result{Content: "A B", Calls: calls(call("call_1", "get_time", `{}`))}},
	{"spark/no tools declared keeps every call", with(spark, noTools),
		"<tool_call>anything<arg_key>k</arg_key><arg_value>[1, 2]</arg_value><arg_key>s</arg_key><arg_value>text</arg_value></tool_call>",
		Result{Calls: calls(call("call_1", "anything", `{"k":[1,2],"s":"text"}`))}},
	{"spark/empty name is content", spark, "x <tool_call> <arg_key>a</arg_key><arg_value>1</arg_value></tool_call> y",
		Result{Content: "x <tool_call> <arg_key>a</arg_key><arg_value>1</arg_value></tool_call> y"}},
	{"spark/unclosed call at end is content", spark, "Sure.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Par",
		Result{Content: "Sure.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Par"}},
	{"spark/near-tags are content", spark, "a <tool_cal> b <tool_call c <", Result{Content: "a <tool_cal> b <tool_call c <"}},

	// hermes
	{"hermes/qwen call", hermes,
		"I'll check the weather.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
		Result{Content: "I'll check the weather.", Calls: calls(call("call_1", "get_weather", `{"city":"Paris","days":3}`))}},
	{"hermes/two calls, nested, unicode escapes, key order", hermes,
		"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"caf\\u00e9 \\\"best\\\"\", \"filters\": {\"z\": [1, {\"y\": null}], \"a\": \"<b>&\"}}}\n</tool_call>\n" +
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Москва\"}}\n</tool_call>",
		Result{Calls: calls(
			call("call_1", "search", `{"query":"café \"best\"","filters":{"z":[1,{"y":null}],"a":"<b>&"}}`),
			call("call_2", "get_weather", `{"city":"Москва"}`))}},
	{"hermes/content after, string arguments, missing arguments", hermes,
		"<tool_call>{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}</tool_call>\n\n" +
			"<tool_call>{\"name\": \"get_time\"}</tool_call>\n\nBoth requested.",
		Result{Content: "Both requested.", Calls: calls(
			call("call_1", "get_weather", `{"city":"Oslo"}`),
			call("call_2", "get_time", `{}`))}},
	{"hermes/invalid JSON is content", hermes,
		"Hm <tool_call>{\"name\": get_weather}</tool_call> ok",
		Result{Content: "Hm <tool_call>{\"name\": get_weather}</tool_call> ok"}},
	{"hermes/undeclared dropped", hermes,
		"<tool_call>{\"name\": \"shell\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"get_time\", \"arguments\": null}</tool_call>",
		Result{Calls: calls(call("call_1", "get_time", `{}`))}},
	{"hermes/unclosed complete JSON is a call", hermes,
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n",
		Result{Calls: calls(call("call_1", "get_weather", `{"city":"Rome"}`))}},
	{"hermes/unclosed incomplete JSON is content", hermes,
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": ",
		Result{Content: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "}},
	{"hermes/array arguments refused", hermes,
		"<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}</tool_call>",
		Result{Content: "<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}</tool_call>"}},

	// llama3_json
	{"llama/parameters", llama,
		"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco\", \"days\": 2}}",
		Result{Calls: calls(call("call_1", "get_weather", `{"city":"San Francisco","days":2}`))}},
	{"llama/python tag, two calls, arguments key", llama,
		"<|python_tag|>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Kraków\"}}; {\"name\": \"search\", \"parameters\": {\"query\": \"a;b }{\", \"filters\": {\"n\": [1, 2]}}}",
		Result{Calls: calls(
			call("call_1", "get_weather", `{"city":"Kraków"}`),
			call("call_2", "search", `{"query":"a;b }{","filters":{"n":[1,2]}}`))}},
	{"llama/leading whitespace, newline separated, text after", llama,
		"\n\n{\"name\": \"get_time\", \"parameters\": {}}\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lima\"}}\nThat is all.",
		Result{Content: "That is all.", Calls: calls(
			call("call_1", "get_time", `{}`),
			call("call_2", "get_weather", `{"city":"Lima"}`))}},
	{"llama/plain text", llama, "The capital of France is Paris. {not json}",
		Result{Content: "The capital of France is Paris. {not json}"}},
	{"llama/JSON answer without name is content", llama, "{\"answer\": 42, \"unit\": \"m\"}",
		Result{Content: "{\"answer\": 42, \"unit\": \"m\"}"}},
	{"llama/name without parameters is content", llama, "{\"name\": \"John\", \"age\": 30}",
		Result{Content: "{\"name\": \"John\", \"age\": 30}"}},
	{"llama/builtin tool syntax is content", llama, "<|python_tag|>brave_search.call(query=\"weather\")",
		Result{Content: "<|python_tag|>brave_search.call(query=\"weather\")"}},
	{"llama/unclosed object is content", llama, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Par",
		Result{Content: "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Par"}},
	{"llama/bad second call becomes content", llama,
		"{\"name\": \"get_time\", \"parameters\": {}}; {\"oops\": 1} tail",
		Result{Content: "; {\"oops\": 1} tail", Calls: calls(call("call_1", "get_time", `{}`))}},
	{"llama/undeclared dropped, dangling separator", llama,
		"{\"name\": \"exec\", \"parameters\": {\"cmd\": \"ls\"}}; {\"name\": \"get_time\", \"parameters\": {}};\n",
		Result{Calls: calls(call("call_1", "get_time", `{}`))}},

	// mistral
	{"mistral/v3 array", mistral,
		"[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}, {\"name\": \"search\", \"arguments\": {\"query\": \"[TOOL_CALLS] ]\"}}]",
		Result{Calls: calls(
			call("call_1", "get_weather", `{"city":"Paris","unit":"c"}`),
			call("call_2", "search", `{"query":"[TOOL_CALLS] ]"}`))}},
	{"mistral/v3 with content before", mistral,
		"Let me look.\n\n[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}]",
		Result{Content: "Let me look.", Calls: calls(call("call_1", "get_time", `{}`))}},
	{"mistral/v11", mistral,
		"[TOOL_CALLS]get_weather[ARGS]{\"city\": \"São Paulo\", \"days\": 5}[TOOL_CALLS]search[ARGS]{\"query\": \"東京 weather\", \"filters\": {\"a\": {\"b\": []}}}",
		Result{Calls: calls(
			call("call_1", "get_weather", `{"city":"São Paulo","days":5}`),
			call("call_2", "search", `{"query":"東京 weather","filters":{"a":{"b":[]}}}`))}},
	{"mistral/v11 with call id and text after", mistral,
		"Checking.[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{\"city\":\"Bern\"} ok",
		Result{Content: "Checking. ok", Calls: calls(call("call_1", "get_weather", `{"city":"Bern"}`))}},
	{"mistral/prose after marker is content", mistral, "x [TOOL_CALLS] is a token [ARGS]",
		Result{Content: "x [TOOL_CALLS] is a token [ARGS]"}},
	{"mistral/invalid v3 is content", mistral, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}, 7]",
		Result{Content: "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}, 7]"}},
	{"mistral/undeclared dropped", mistral,
		"[TOOL_CALLS]delete_all[ARGS]{}[TOOL_CALLS]get_time[ARGS]{}",
		Result{Calls: calls(call("call_1", "get_time", `{}`))}},
	{"mistral/unclosed args are content", mistral, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Pa",
		Result{Content: "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Pa"}},

	// reasoning
	{"r1/tags in output", config{reason: "deepseek_r1"},
		"<think>\nThe user wants X.\n</think>\n\nX it is.",
		Result{Reasoning: "The user wants X.", Content: "X it is."}},
	{"r1/prompt opened", config{reason: "deepseek_r1", opened: true},
		"\nThe user wants X.\n\nSo X.\n</think>\n\nX it is.",
		Result{Reasoning: "The user wants X.\n\nSo X.", Content: "X it is."}},
	{"r1/prompt opened, model repeats <think>", config{reason: "deepseek_r1", opened: true},
		"<think>hmm</think>ok", Result{Reasoning: "hmm", Content: "ok"}},
	{"r1/prompt opened, cut off: reasoning", config{reason: "deepseek_r1", opened: true},
		"Let me think about 東京 and", Result{Reasoning: "Let me think about 東京 and"}},
	{"r1/not opened, no tags: content", config{reason: "deepseek_r1"}, "  Hello </think> there",
		Result{Content: "  Hello </think> there"}},
	{"r1/later tags are content", config{reason: "deepseek_r1"}, "<think>a</think>b <think>c</think>",
		Result{Reasoning: "a", Content: "b <think>c</think>"}},
	{"r1/unclosed as content override", config{reason: "deepseek_r1", opened: true, unclosed: UnclosedContent},
		"\nthinking...", Result{Content: "\nthinking..."}},
	{"qwen3/tags in output", config{reason: "qwen3"},
		"<think>\nStep 1.\n</think>\n\nAnswer.", Result{Reasoning: "Step 1.", Content: "Answer."}},
	{"qwen3/prompt opened", config{reason: "qwen3", opened: true},
		"Step 1.</think>Answer.", Result{Reasoning: "Step 1.", Content: "Answer."}},
	{"qwen3/unclosed: everything is content", config{reason: "qwen3"},
		"<think>\nStep 1 and then", Result{Content: "<think>\nStep 1 and then"}},
	{"qwen3/prompt opened, unclosed: content", config{reason: "qwen3", opened: true},
		"Step 1 and then", Result{Content: "Step 1 and then"}},
	{"qwen3/unclosed as reasoning override", config{reason: "qwen3", unclosed: UnclosedReasoning},
		"<think>Step 1", Result{Reasoning: "Step 1"}},
	{"qwen3/empty think block", config{reason: "qwen3"}, "<think>\n\n</think>\n\nHi!", Result{Content: "Hi!"}},

	// reasoning and tools together
	{"spark/reasoning then call", with(spark, func(c *config) { c.reason = "deepseek_r1"; c.opened = true }),
		"The user asks for weather; call the tool with <tool_call> syntax.\n</think>\nLet me check.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
		Result{Reasoning: "The user asks for weather; call the tool with <tool_call> syntax.", Content: "Let me check.",
			Calls: calls(call("call_1", "get_weather", `{"city":"Paris","days":3}`))}},
	{"hermes/qwen3 reasoning then calls", with(hermes, func(c *config) { c.reason = "qwen3" }),
		"<think>\nNeed weather. <tool_call>{\"name\": \"get_time\"}</tool_call> is not yet.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		Result{Reasoning: "Need weather. <tool_call>{\"name\": \"get_time\"}</tool_call> is not yet.",
			Calls: calls(call("call_1", "get_weather", `{"city":"Paris"}`))}},
	{"hermes/qwen3 unclosed reasoning with a call is parsed as content", with(hermes, func(c *config) { c.reason = "qwen3" }),
		"<think>x <tool_call>{\"name\": \"get_time\"}</tool_call>",
		Result{Content: "<think>x", Calls: calls(call("call_1", "get_time", `{}`))}},
}

func TestSamples(t *testing.T) {
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			want := norm(s.want)
			if got := s.cfg.whole(t, s.in); !equalResult(got, want) {
				t.Fatalf("whole:\n got %s\nwant %s", show(got), show(want))
			}
			checkStreaming(t, s.cfg, s.in, want)
		})
	}
}
