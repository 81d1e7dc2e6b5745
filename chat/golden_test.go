package chat

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// golden is rendered_all.json: every template rendered by Python jinja2
// with transformers' recipe over a fixed set of conversations.
type golden struct {
	Renderer      string
	SpecialTokens map[string]string `json:"special_tokens"`
	Conversations map[string]goldenConversation
	Templates     map[string]struct {
		Renders map[string]string
		Errors  map[string]string
	}
}

type goldenConversation struct {
	Messages json.RawMessage
	Tools    []json.RawMessage
	Kwargs   map[string]json.RawMessage
}

// divergent lists the templates whose golden entry we deliberately do not
// reproduce, with the reason; chat/README.md carries the same list. The
// test checks that each still differs from the golden, so the list cannot
// go stale.
var divergent = map[string]string{
	// The reference renderer lacked transformers' {% generation %}
	// extension (AssistantTracker) and fails to parse the template; we
	// render the tag's body as transformers does, checked against
	// testdata/lfm25_generation.json.
	"LFM2.5-8B-A1B.jinja": "uses {% generation %}, which the reference renderer did not register",
}

// goldenNow is the clock the golden was rendered with ("strftime_now fixed
// to 2026-01-01 12:00:00" in its renderer note).
func goldenNow() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) }

func loadGolden(t *testing.T) (dir string, g golden) { return loadGoldenTB(t) }

func loadGoldenTB(t testing.TB) (dir string, g golden) {
	t.Helper()
	dir = testdata.Path(t, "chat-templates")
	raw, err := os.ReadFile(filepath.Join(dir, "golden", "rendered_all.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g.Renderer, "2026-01-01 12:00:00") {
		t.Fatalf("golden renderer note changed, check the fixed clock: %s", g.Renderer)
	}
	return dir, g
}

// options builds the render options of a golden conversation, with the
// messages either as raw JSON or decoded into []Message.
func (g golden) options(t testing.TB, c goldenConversation, structured bool) RenderOptions {
	kw := map[string]any{}
	for k, v := range g.SpecialTokens {
		kw[k] = v
	}
	delete(kw, "bos_token")
	delete(kw, "eos_token")
	for k, v := range c.Kwargs {
		kw[k] = v
	}
	opt := RenderOptions{
		Tools:               c.Tools,
		AddGenerationPrompt: true,
		BOSToken:            g.SpecialTokens["bos_token"],
		EOSToken:            g.SpecialTokens["eos_token"],
		Kwargs:              kw,
		Now:                 goldenNow,
	}
	if structured {
		if err := json.Unmarshal(c.Messages, &opt.Messages); err != nil {
			t.Fatal(err)
		}
	} else {
		opt.MessagesJSON = c.Messages
	}
	return opt
}

// TestGoldenAll renders every template over every conversation and wants
// the golden bytes, or an error where jinja2 failed. Messages go in both
// as raw JSON and decoded into []Message.
func TestGoldenAll(t *testing.T) {
	dir, g := loadGolden(t)
	for _, structured := range []bool{false, true} {
		pass, total := 0, 0
		for _, name := range slices.Sorted(maps.Keys(g.Templates)) {
			exp := g.Templates[name]
			src, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, perr := Parse(string(src))
			if reason, ok := divergent[name]; ok {
				checkDivergent(t, name, reason, tmpl, perr, g, exp.Errors)
				continue
			}
			for _, conv := range slices.Sorted(maps.Keys(g.Conversations)) {
				total++
				want, ok := exp.Renders[conv]
				wantErr := exp.Errors[conv]
				if e, bad := exp.Errors["_parse"]; bad {
					ok, wantErr = false, e
				}
				if perr != nil {
					if ok {
						t.Errorf("%s: parse: %v", name, perr)
					} else {
						pass++
					}
					continue
				}
				got, err := tmpl.Render(g.options(t, g.Conversations[conv], structured))
				switch {
				case !ok && err == nil:
					t.Errorf("%s/%s: rendered, jinja2 failed with %q; got:\n%s", name, conv, wantErr, got)
				case !ok:
					// raise_exception messages must match; other errors
					// only have to happen.
					var te *TemplateError
					if msg, isTE := strings.CutPrefix(wantErr, "TemplateError: "); isTE && (!errors.As(err, &te) || te.Message != msg) {
						t.Errorf("%s/%s: got error %v, jinja2 raised %q", name, conv, err, wantErr)
					} else {
						pass++
					}
				case err != nil:
					t.Errorf("%s/%s: render: %v", name, conv, err)
				case got != want:
					t.Errorf("%s/%s: mismatch\n%s", name, conv, diff(want, got))
				default:
					pass++
				}
			}
		}
		t.Logf("structured=%v: %d of %d golden renders match (%d templates listed as divergent)", structured, pass, total, len(divergent))
	}
}

// checkDivergent asserts that a listed template still differs from the
// golden, and matches our own reference where we have one.
func checkDivergent(t *testing.T, name, reason string, tmpl *Template, perr error, g golden, goldenErrors map[string]string) {
	t.Helper()
	if _, ok := goldenErrors["_parse"]; !ok || perr != nil {
		t.Errorf("%s is listed as divergent (%s) but now agrees with the golden; remove it from the list", name, reason)
		return
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "lfm25_generation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct{ Renders map[string]string }
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	for conv, want := range ref.Renders {
		got, err := tmpl.Render(g.options(t, g.Conversations[conv], false))
		if err != nil || got != want {
			t.Errorf("%s/%s: want the {%% generation %%} reference render, got err=%v\n%s", name, conv, err, diff(want, got))
		}
	}
}

// TestGoldenPrompts checks the older rendered_prompts.json: 3
// conversations over 13 templates with each model's own special tokens
// (null ones passed as None).
func TestGoldenPrompts(t *testing.T) {
	dir := testdata.Path(t, "chat-templates")
	raw, err := os.ReadFile(filepath.Join(dir, "golden", "rendered_prompts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Conversations map[string]json.RawMessage
		Templates     map[string]struct {
			SpecialTokensPassed map[string]*string `json:"special_tokens_passed"`
			Renders             map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, exp := range g.Templates {
		var tmpl *Template
		if strings.HasPrefix(name, "gemma3(") {
			cfg, err := os.ReadFile(testdata.Path(t, "tokenizers", "gemma3", "tokenizer_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err = FromTokenizerConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			src, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if tmpl, err = Parse(string(src)); err != nil {
				t.Fatal(err)
			}
		}
		kw := map[string]any{}
		for k, v := range exp.SpecialTokensPassed {
			if v == nil {
				kw[k] = nil
			} else {
				kw[k] = *v
			}
		}
		for conv, r := range exp.Renders {
			var want string
			wantOK := json.Unmarshal(r, &want) == nil
			got, err := tmpl.Render(RenderOptions{
				MessagesJSON:        g.Conversations[conv],
				AddGenerationPrompt: true,
				Kwargs:              kw,
				Now:                 goldenNow,
			})
			switch {
			case !wantOK && err == nil:
				t.Errorf("%s/%s: rendered, jinja2 failed with %s", name, conv, r)
			case wantOK && err != nil:
				t.Errorf("%s/%s: %v", name, conv, err)
			case wantOK && got != want:
				t.Errorf("%s/%s: mismatch\n%s", name, conv, diff(want, got))
			default:
				n++
			}
		}
	}
	t.Logf("%d older renders match", n)
}

// diff shows where two renders part.
func diff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(0, i-200)
	return "common prefix ..." + q(want[lo:i]) + "\n--- want then: " + q(want[i:]) + "\n--- got then:  " + q(got[i:])
}

func q(s string) string {
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}
