package grammar

import (
	"bytes"
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

// FuzzLazy walks a lazy grammar on token choices from the input: every
// token its mask allows is accepted (the free text's mask bans exactly
// the tokens that would complete the trigger with text the grammar
// refuses), and no step panics.
func FuzzLazy(f *testing.F) {
	var toks [][]byte
	for c := 0; c < 0x100; c++ {
		toks = append(toks, []byte{byte(c)})
	}
	for _, s := range []string{"<t>", "<t>a", "<t>x", "t>", "t>b", ">c", "</think>", "<think>", "k><t", "</t>", "ab"} {
		toks = append(toks, []byte(s))
	}
	toks = append(toks, nil)
	special := make([]bool, len(toks))
	special[len(toks)-1] = true
	v := NewVocab(toks, special, []int{len(toks) - 1})
	g, err := FromGBNF(`root ::= "<t>" [a-c]+ "</t>" ("<t>" [a-c]+ "</t>")?`)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("<think><t></think>x<t>ab</t>"), false)
	f.Add([]byte{0x100 - 1, 3, 7, 200}, true)
	f.Fuzz(func(t *testing.T, choices []byte, inSkip bool) {
		l, err := NewLazy(g, v, LazyOptions{Trigger: "<t>", SkipOpen: "<think>", SkipClose: "</think>", InSkip: inSkip})
		if err != nil {
			t.Fatal(err)
		}
		logits := make([]float32, v.Size())
		for _, c := range choices {
			clear(logits)
			l.Mask(logits)
			var ok []int
			for id, x := range logits {
				if x == 0 {
					ok = append(ok, id)
				}
			}
			if len(ok) == 0 {
				return
			}
			id := ok[int(c)%len(ok)]
			if id == len(toks)-1 {
				return // end of generation
			}
			// A token that closes the reasoning and completes the trigger
			// at once is not masked (documented on Lazy).
			if err := l.Accept(id); err != nil && !bytes.Contains(toks[id], []byte("</think>")) {
				t.Fatalf("allowed token %q refused: %v", toks[id], err)
			}
		}
	})
}
