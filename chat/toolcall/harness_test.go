package toolcall

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// config is one parser set-up; ids are deterministic so that streamed and
// whole results compare equal, ids included.
type config struct {
	tool, reason string
	opened       bool
	unclosed     Unclosed
	tools        []Tool
}

func (c config) String() string {
	return fmt.Sprintf("tool=%q reason=%q opened=%v unclosed=%d tools=%d", c.tool, c.reason, c.opened, c.unclosed, len(c.tools))
}

func (c config) parser(t testing.TB) Parser {
	t.Helper()
	n := 0
	p, err := New(c.tool, c.reason, c.tools, Options{
		NewID:             func() string { n++; return fmt.Sprintf("call_%d", n) },
		PromptOpenedThink: c.opened,
		Unclosed:          c.unclosed,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (c config) whole(t testing.TB, text string) Result {
	return norm(Parse(c.parser(t), text))
}

// stream feeds chunks one by one and joins the deltas. On the way it checks
// that every call's arguments are a JSON object, that Feed after Finish
// gives nothing, and, when the whole input is valid UTF-8, that every delta
// is too, however the chunks split characters.
func (c config) stream(t testing.TB, chunks []string) Result {
	t.Helper()
	p := c.parser(t)
	valid := utf8.ValidString(strings.Join(chunks, ""))
	var all Result
	for i := 0; i <= len(chunks); i++ {
		var d Result
		if i < len(chunks) {
			d = p.Feed(chunks[i])
		} else {
			d = p.Finish()
		}
		if valid && (!utf8.ValidString(d.Content) || !utf8.ValidString(d.Reasoning)) {
			t.Errorf("%v: delta %d is not valid UTF-8: %+v", c, i, d)
		}
		for _, call := range d.Calls {
			if !json.Valid([]byte(call.Arguments)) || call.Arguments[0] != '{' {
				t.Errorf("%v: call arguments not a JSON object: %q", c, call.Arguments)
			}
		}
		all.Append(d)
	}
	if extra := p.Feed("more"); !extra.Empty() {
		t.Errorf("%v: Feed after Finish returned %+v", c, extra)
	}
	return norm(all)
}

func equalResult(a, b Result) bool { return reflect.DeepEqual(norm(a), norm(b)) }

func norm(r Result) Result {
	if len(r.Calls) == 0 {
		r.Calls = nil
	}
	return r
}

func show(r Result) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// checkStreaming splits text at every byte position, into 1-byte chunks and
// into random chunkings, and requires the joined deltas to equal want.
func checkStreaming(t *testing.T, c config, text string, want Result) {
	t.Helper()
	want = norm(want)
	streamer := c.stream
	for i := 0; i <= len(text); i++ {
		if got := streamer(t, []string{text[:i], text[i:]}); !equalResult(got, want) {
			t.Fatalf("%v: split at %d of %q:\n got %s\nwant %s", c, i, text, show(got), show(want))
		}
	}
	bytes := make([]string, len(text))
	for i := 0; i < len(text); i++ {
		bytes[i] = text[i : i+1]
	}
	if got := streamer(t, bytes); !equalResult(got, want) {
		t.Fatalf("%v: 1-byte chunks of %q:\n got %s\nwant %s", c, text, show(got), show(want))
	}
	rng := rand.New(rand.NewPCG(uint64(len(text)), 7))
	for range 20 {
		chunks := randomChunks(rng, text)
		if got := streamer(t, chunks); !equalResult(got, want) {
			t.Fatalf("%v: chunks %q:\n got %s\nwant %s", c, chunks, show(got), show(want))
		}
	}
}

func randomChunks(rng *rand.Rand, text string) []string {
	var chunks []string
	for len(text) > 0 {
		n := 1 + rng.IntN(min(len(text), 12))
		if rng.IntN(8) == 0 {
			chunks = append(chunks, "") // empty feeds happen too
		}
		chunks = append(chunks, text[:n])
		text = text[n:]
	}
	return chunks
}
