package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/siskin-ml/siskin/grammar"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
)

func constrained(t testing.TB, g *grammar.Grammar, v *grammar.Vocab, seed uint64, prompt []int) *sample.Sequence {
	p := sample.Defaults()
	p.Seed, p.Seeded = seed, true
	p.Logprobs, p.TopLogprobs = true, 3
	p.Constraint = grammar.NewMatcher(g, v)
	s, err := sample.NewSequence(p, prompt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A grammar-constrained request in the batch leaves another request's
// tokens and logprobs bit-identical to its run alone.
func TestConstrainedBatchInvariance(t *testing.T) {
	l, err := load.Open(testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := l.Model
	v := grammar.VocabFromTokenizer(l.Tokenizer)
	g, err := grammar.FromJSONSchema([]byte(`{"type":"object","properties":{"name":{"type":"string","maxLength":8},"tags":{"type":"array","items":{"enum":["a","b"]}}},"required":["name","tags"]}`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(e *Engine, i int) []sample.Token {
		p := prompt(20+13*i, i)
		var s Sampler = sampler(t, 0.8, uint64(1000+i), p)
		if i%2 == 1 {
			s = constrained(t, g, v, uint64(i), p)
		}
		ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 24, Sampler: s, Stop: l.Tokenizer.IsEOG})
		if err != nil {
			t.Error(err)
			return nil
		}
		toks, _ := collect(t, ch)
		return toks
	}
	checkBatchInvariant(t, m, run, 2)
}

// TestStructuredCompliance: on the random-weight tiny models, two sampled
// requests per compiled SchemaStore schema give outputs that the
// independent validator accepts whenever they finish before max_tokens.
func TestStructuredCompliance(t *testing.T) {
	dir := testdata.Path(t, "schemas", "schemastore")
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	models := []string{"spark2_5-tiny-q4_0.gguf", "qwen3-tiny-q4_k_m.gguf"}
	if pureGo {
		models = models[:1]
	}
	for _, name := range models {
		l, err := load.Open(testdata.Path(t, "llm", "tiny", "models", name))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		v := grammar.VocabFromTokenizer(l.Tokenizer)
		e := New(l.Model, Config{MaxNumSeqs: 16})
		defer e.Close()
		var mu sync.Mutex
		finished, total := 0, 0
		var wg sync.WaitGroup
		slots := make(chan struct{}, 16) // within the engine's queue
		for fi, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			g, err := grammar.FromJSONSchema(src)
			if err != nil {
				continue
			}
			val := compileValidator(src)
			if val == nil {
				continue
			}
			for k := range 2 {
				slots <- struct{}{}
				wg.Go(func() {
					defer func() { <-slots }()
					p := prompt(8, fi*2+k)
					ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 32,
						Sampler: constrained(t, g, v, uint64(fi*2+k), p), Stop: l.Tokenizer.IsEOG})
					if err != nil {
						t.Error(err)
						return
					}
					var ids []int
					var why FinishReason
					for ev := range ch {
						if ev.Err != nil {
							t.Errorf("%s: %v", filepath.Base(f), ev.Err)
							return
						}
						if ev.Finish != FinishStop {
							ids = append(ids, ev.Token.ID)
						}
						why = ev.Finish
					}
					mu.Lock()
					defer mu.Unlock()
					total++
					if why != FinishStop {
						return
					}
					finished++
					out := l.Tokenizer.Decode(ids)
					doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(out)))
					if err == nil {
						err = val.Validate(doc)
					}
					if err != nil {
						t.Errorf("%s on %s: output %s fails: %v", filepath.Base(f), name, out, err)
					}
				})
			}
		}
		wg.Wait()
		t.Logf("%s: %d of %d outputs finished within 32 tokens, all valid", name, finished, total)
	}
}

func compileValidator(src []byte) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
	if err != nil {
		return nil
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if c.AddResource("file:///s.json", doc) != nil {
		return nil
	}
	s, err := c.Compile("file:///s.json")
	if err != nil {
		return nil // the validator's own limits (lookahead patterns)
	}
	return s
}
