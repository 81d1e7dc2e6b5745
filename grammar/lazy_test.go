package grammar

import (
	"math"
	"testing"
)

func TestLazy(t *testing.T) {
	words := []string{"<tool", "_call>", "<tool_call>", "<tool_call>x", "hi", "a", "b", "</think>", "<think>", "<tool_call>a"}
	var toks [][]byte
	for _, w := range words {
		toks = append(toks, []byte(w))
	}
	toks = append(toks, nil)
	special := make([]bool, len(toks))
	eos := len(toks) - 1
	special[eos] = true
	v := NewVocab(toks, special, []int{eos})
	id := map[string]int{}
	for i, w := range words {
		id[w] = i
	}
	g, err := FromGBNF(`root ::= "<tool_call>" "a"+`)
	if err != nil {
		t.Fatal(err)
	}
	allowed := func(l *Lazy) map[string]bool {
		logits := make([]float32, v.Size())
		l.Mask(logits)
		out := map[string]bool{}
		for i, x := range logits {
			if !math.IsInf(float64(x), -1) {
				if i == eos {
					out["EOS"] = true
				} else {
					out[words[i]] = true
				}
			}
		}
		return out
	}
	accept := func(l *Lazy, w string) {
		t.Helper()
		if err := l.Accept(id[w]); err != nil {
			t.Fatalf("accept %q: %v", w, err)
		}
	}

	l, err := NewLazy(g, v, LazyOptions{Trigger: "<tool_call>", SkipOpen: "<think>", SkipClose: "</think>"})
	if err != nil {
		t.Fatal(err)
	}
	if a := allowed(l); !a["hi"] || !a["EOS"] || !a["<tool_call>"] || !a["<tool_call>a"] || a["<tool_call>x"] {
		t.Errorf("free text: allowed %v (want all but <tool_call>x)", a)
	}
	accept(l, "hi")
	accept(l, "<tool")
	if l.Triggered() {
		t.Fatal("triggered by half the trigger")
	}
	accept(l, "_call>") // the trigger split over two tokens
	if !l.Triggered() {
		t.Fatal("not triggered")
	}
	if a := allowed(l); len(a) != 1 || !a["a"] {
		t.Errorf("after the trigger: allowed %v (want a)", a)
	}
	accept(l, "a")
	if a := allowed(l); !a["EOS"] || a["b"] {
		t.Errorf("after a: allowed %v", a)
	}

	// Inside the reasoning the trigger is text.
	l, _ = NewLazy(g, v, LazyOptions{Trigger: "<tool_call>", SkipOpen: "<think>", SkipClose: "</think>", InSkip: true})
	accept(l, "<tool_call>x")
	accept(l, "</think>")
	if l.Triggered() {
		t.Fatal("triggered inside the reasoning")
	}
	accept(l, "<tool_call>a")
	if !l.Triggered() {
		t.Fatal("not triggered after the reasoning")
	}
	if _, err := NewLazy(g, v, LazyOptions{Trigger: "[TOOL]"}); err == nil {
		t.Error("a trigger the grammar does not start with was taken")
	}
}
