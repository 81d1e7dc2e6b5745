package toolcall

import (
	"strings"
	"testing"
)

// fuzzConfig maps a byte onto a parser set-up, so one target covers every
// tool parser, reasoning parser, prompt-opened flag, declared-tools case and
// Unclosed mode.
func fuzzConfig(b byte) config {
	tools := append([]string{""}, toolParsers...)
	reasons := append([]string{""}, reasoningParsers...)
	c := config{
		tool:     tools[int(b)%len(tools)],
		reason:   reasons[int(b)/5%3],
		opened:   b/15%2 == 1,
		unclosed: Unclosed(b / 60 % 3),
	}
	if b/30%2 == 1 {
		c.tools = testTools
	}
	return c
}

// FuzzStreamEqualsWhole feeds arbitrary text in two and three chunks (and
// byte by byte when short) and requires the joined deltas to equal the
// whole-text result; stream also checks each delta's UTF-8 and arguments.
func FuzzStreamEqualsWhole(f *testing.F) {
	for i, s := range samples {
		f.Add(s.in, uint(i*7), byte(i))
	}
	f.Fuzz(func(t *testing.T, text string, split uint, cfgByte byte) {
		c := fuzzConfig(cfgByte)
		want := c.whole(t, text)
		if c.tool == "" && c.reason == "" && want.Content != text {
			t.Fatalf("%v: passthrough changed %q to %q", c, text, want.Content)
		}
		if c.reason == "" && want.Reasoning != "" {
			t.Fatalf("%v: reasoning without a reasoning parser: %q", c, want.Reasoning)
		}
		if c.tool == "" && len(want.Calls) > 0 {
			t.Fatalf("%v: calls without a tool parser", c)
		}
		i := int(split % uint(len(text)+1))
		j := i + int(split/7%uint(len(text)-i+1))
		for _, chunks := range [][]string{
			{text[:i], text[i:]},
			{text[:i], text[i:j], text[j:]},
		} {
			if got := c.stream(t, chunks); !equalResult(got, want) {
				t.Fatalf("%v: chunks %q:\n got %s\nwant %s", c, chunks, show(got), show(want))
			}
		}
		if len(text) <= 64 {
			bytes := make([]string, len(text))
			for k := 0; k < len(text); k++ {
				bytes[k] = text[k : k+1]
			}
			if got := c.stream(t, bytes); !equalResult(got, want) {
				t.Fatalf("%v: 1-byte chunks of %q:\n got %s\nwant %s", c, text, show(got), show(want))
			}
		}
	})
}

// BenchmarkStream measures a typical streamed answer: long reasoning, then a
// call, fed a few bytes at a time as a detokenizer would.
func BenchmarkStream(b *testing.B) {
	text := strings.Repeat("Let me think about the weather in 東京. ", 300) + "</think>\n\nChecking.\n" +
		"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"" + strings.Repeat("x", 2000) + "\"}}\n</tool_call>"
	c := config{tool: "hermes", reason: "qwen3", opened: true, unclosed: UnclosedReasoning, tools: testTools}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		p := c.parser(b)
		for i := 0; i < len(text); i += 4 {
			p.Feed(text[i:min(i+4, len(text))])
		}
		p.Finish()
	}
}
