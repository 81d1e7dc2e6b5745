package ollama

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/ollamafix"
)

func TestParseRef(t *testing.T) {
	for in, want := range map[string]Ref{
		"ollama://llama3.2":                   {"registry.ollama.ai", "library", "llama3.2", "latest"},
		"ollama://qwen3:0.6b":                 {"registry.ollama.ai", "library", "qwen3", "0.6b"},
		"ollama://me/model:q4_K_M":            {"registry.ollama.ai", "me", "model", "q4_K_M"},
		"ollama://localhost:5000/me/model:v1": {"localhost:5000", "me", "model", "v1"},
		"ollama://hf.co/org/repo":             {"hf.co", "org", "repo", "latest"},
	} {
		got, err := ParseRef(in)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"ollama://", "ollama://a:", "ollama://../x", "ollama://a/b/c/d", "ollama://a/../b", "llama3", "ollama://a b"} {
		if _, err := ParseRef(in); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestOpenAndList(t *testing.T) {
	dir := t.TempDir()
	gguf := filepath.Join(t.TempDir(), "m.gguf")
	os.WriteFile(gguf, []byte("GGUF fake model bytes"), 0o644)
	blob := ollamafix.Write(t, dir, "tiny", "q8", gguf,
		ollamafix.Layer{MediaType: MediaTemplate, Data: []byte("{{ .Prompt }}")},
		ollamafix.Layer{MediaType: MediaParams, Data: []byte(`{"stop":["<|end|>"]}`)})
	ref, _ := ParseRef("ollama://tiny:q8")
	m, err := Open(dir, ref)
	if err != nil {
		t.Fatal(err)
	}
	if m.GGUF != blob || m.Template != "{{ .Prompt }}" || !strings.Contains(m.Params, "<|end|>") || m.Size != 21 {
		t.Errorf("%+v", m)
	}
	if ms, errs := List(dir); len(ms) != 1 || len(errs) != 0 || ms[0].Ref.String() != "ollama://tiny:q8" {
		t.Errorf("List: %v %v", ms, errs)
	}
	if _, err := Open(dir, Ref{"registry.ollama.ai", "library", "tiny", "nope"}); err == nil || !strings.Contains(err.Error(), "no manifest") {
		t.Errorf("missing tag: %v", err)
	}
	// A truncated blob is refused, naming the blob and both sizes.
	os.WriteFile(blob, []byte("GGUF"), 0o644)
	if _, err := Open(dir, ref); err == nil || !strings.Contains(err.Error(), "has 4 bytes, the manifest says 21") {
		t.Errorf("truncated blob: %v", err)
	}
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"ollama://llama3.2", "ollama://me/m:q4", "ollama://h:1/a/b:c", "ollama://a/../b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		for _, p := range []string{r.Host, r.Namespace, r.Name, r.Tag} {
			if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "/\\\x00") {
				t.Fatalf("%q parsed to an unsafe path part %q", s, p)
			}
		}
		if r2, err := ParseRef(r.String()); err != nil || r2 != r {
			t.Fatalf("%q: round trip %q gives %+v, %v", s, r.String(), r2, err)
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"config":{"digest":"sha256:` + strings.Repeat("a", 64) + `"},"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:` + strings.Repeat("0", 64) + `","size":5}]}`))
	f.Add([]byte(`{"schemaVersion":2,"layers":[{"digest":"sha256:../../etc"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := ParseManifest(raw)
		if err != nil {
			return
		}
		for _, l := range m.Layers {
			n, err := blobName(l.Digest)
			if err != nil || strings.ContainsAny(n, "/\\.") {
				t.Fatalf("accepted digest %q gives blob %q", l.Digest, n)
			}
		}
	})
}
