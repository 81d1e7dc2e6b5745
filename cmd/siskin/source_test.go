package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/fakehub"
	"github.com/siskin-ml/siskin/internal/ollamafix"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/ollama"
)

// siskinSplit runs a command with stdin and returns stdout and stderr
// apart (the resolver logs to stderr).
func siskinSplit(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := rootCmd()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errb.String(), err
}

// sources points the Hugging Face cache, the Hub and ollama's store at a
// fake Hub and temporary folders for one test.
func sources(t *testing.T) (*fakehub.Hub, string, string) {
	t.Helper()
	h := fakehub.New()
	t.Cleanup(h.Close)
	home := t.TempDir()
	hfCache, ollamaDir := filepath.Join(home, "hf", "hub"), filepath.Join(home, "ollama")
	for k, v := range map[string]string{"HF_ENDPOINT": h.API.URL, "HF_HOME": filepath.Join(home, "hf"), "HF_HUB_CACHE": hfCache,
		"HF_TOKEN": "", "HF_HUB_OFFLINE": "", "OLLAMA_MODELS": ollamaDir, "SISKIN_CACHE_DIR": filepath.Join(home, "siskin")} {
		t.Setenv(k, v)
	}
	return h, hfCache, ollamaDir
}

func readAll(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run -m hf://... downloads stories260K from the fake Hub and generates
// what the bare file generates; with the Hub stopped the second run works
// from the cache (and with HF_HUB_OFFLINE=1).
func TestRunHFThenFromCache(t *testing.T) {
	h, hfCache, _ := sources(t)
	model := testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf")
	h.Commit("karpathy/stories260K-GGUF", map[string][]byte{"stories260K-F32.gguf": readAll(t, model), "README.md": []byte("tiny stories")})
	args := []string{"-p", "Once upon a time", "-n", "24", "--weight-path", "gguf", "--print-ids"}
	want, _, err := siskinSplit(t, "", append([]string{"run", "-m", model}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	ref := "hf://karpathy/stories260K-GGUF:f32"
	got, log, err := siskinSplit(t, "", append([]string{"run", "-m", ref}, args...)...)
	if err != nil || got != want {
		t.Fatalf("first run: %v\n got %q\nwant %q\nlog %s", err, got, want, log)
	}
	t.Logf("first run's log:\n%s", log)
	if !strings.Contains(log, "stories260K-F32.gguf") {
		t.Errorf("no download line in the log:\n%s", log)
	}
	h.Close()
	got, _, err = siskinSplit(t, "", append([]string{"run", "-m", ref}, args...)...)
	if err != nil || got != want {
		t.Fatalf("run with the Hub stopped: %v\n got %q\nwant %q", err, got, want)
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	if got, _, err = siskinSplit(t, "", append([]string{"run", "-m", ref}, args...)...); err != nil || got != want {
		t.Fatalf("offline run: %v", err)
	}
	if _, _, err = siskinSplit(t, "", "run", "-m", "hf://karpathy/other-GGUF", "-n", "1"); err == nil ||
		!strings.Contains(err.Error(), "HF_HUB_OFFLINE") || !strings.Contains(err.Error(), hfCache) {
		t.Errorf("offline, uncached: %v", err)
	}
}

// A safetensors repository pulled through the fake Hub runs as the same
// folder on disk does.
func TestRunHFSafetensors(t *testing.T) {
	h, _, _ := sources(t)
	dir := testdata.Path(t, "llm", "tiny", "hf", "qwen3-tiny", "bf16")
	files := map[string][]byte{"README.md": []byte("x")}
	for _, n := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		files[n] = readAll(t, filepath.Join(dir, n))
	}
	h.Commit("siskin/qwen3-tiny", files)
	args := []string{"--prompt-ids", "1,2,3,4", "-n", "8", "--print-ids", "--ignore-eos", "--weight-path", "gguf"}
	want, _, err := siskinSplit(t, "", append([]string{"run", "-m", dir}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := siskinSplit(t, "", "pull", "hf://siskin/qwen3-tiny")
	if err != nil || !strings.Contains(out, filepath.Join("models--siskin--qwen3-tiny", "snapshots")) {
		t.Fatalf("pull: %q, %v", out, err)
	}
	got, _, err := siskinSplit(t, "", append([]string{"run", "-m", "hf://siskin/qwen3-tiny"}, args...)...)
	if err != nil || got != want {
		t.Fatalf("%v\n got %q\nwant %q", err, got, want)
	}
}

// An ollama store fixture (stories260K as the model blob, with template
// and params layers) generates the same tokens as the bare GGUF, and the
// layers it does not use are named in the log.
func TestRunOllamaSameTokens(t *testing.T) {
	_, _, ollamaDir := sources(t)
	model := testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf")
	blob := ollamafix.Write(t, ollamaDir, "stories", "260k", model,
		ollamafix.Layer{MediaType: ollama.MediaTemplate, Data: []byte("{{ .System }} {{ .Prompt }}")},
		ollamafix.Layer{MediaType: ollama.MediaParams, Data: []byte(`{"stop":["</s>"],"temperature":0.7}`)})
	args := []string{"-p", "Lily and Tom", "-n", "32", "--weight-path", "gguf", "--print-ids"}
	want, _, err := siskinSplit(t, "", append([]string{"run", "-m", model}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	got, log, err := siskinSplit(t, "", append([]string{"run", "-m", "ollama://stories:260k"}, args...)...)
	if err != nil || got != want {
		t.Fatalf("%v\n got %q\nwant %q", err, got, want)
	}
	for _, w := range []string{"ollama://stories:260k: the GGUF has no chat template", "parameters {\"stop\":[\"</s>\"],\"temperature\":0.7} are ignored"} {
		if !strings.Contains(log, w) {
			t.Errorf("log lacks %q:\n%s", w, log)
		}
	}
	// info reads the blob in place: its path is the store's.
	if out, _, err := siskinSplit(t, "", "info", "-m", "ollama://stories:260k"); err != nil || !strings.Contains(out, blob) {
		t.Errorf("info: %v\n%s", err, out)
	}
	// quantize takes its input as an argument, resolved the same way.
	out := filepath.Join(t.TempDir(), "q8.gguf")
	if _, _, err := siskinSplit(t, "", "quantize", "ollama://stories:260k", out, "--type", "q8_0"); err != nil {
		t.Errorf("quantize: %v", err)
	} else if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Errorf("quantize wrote nothing: %v", err)
	}
	if _, _, err := siskinSplit(t, "", "run", "-m", "ollama://stories:nope"); err == nil || !strings.Contains(err.Error(), "no manifest") {
		t.Errorf("missing tag: %v", err)
	}
}

// siskin ls lists the Hugging Face cache's GGUF and safetensors models
// and ollama's; rm shows what it deletes, asks, and deletes.
func TestLsAndRm(t *testing.T) {
	h, hfCache, ollamaDir := sources(t)
	model := testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf")
	h.Commit("karpathy/stories260K-GGUF", map[string][]byte{"stories260K-F32.gguf": readAll(t, model)})
	dir := testdata.Path(t, "llm", "tiny", "hf", "qwen3-tiny", "bf16")
	files := map[string][]byte{}
	for _, n := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		files[n] = readAll(t, filepath.Join(dir, n))
	}
	h.Commit("siskin/qwen3-tiny", files)
	if _, _, err := siskinSplit(t, "", "pull", "hf://karpathy/stories260K-GGUF", "hf://siskin/qwen3-tiny"); err != nil {
		t.Fatal(err)
	}
	ollamafix.Write(t, ollamaDir, "stories", "260k", model)
	out, _, err := siskinSplit(t, "", "ls")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("siskin ls:\n%s", out)
	for _, w := range []string{"hf://karpathy/stories260K-GGUF:F32  1.1 MiB", "hf://siskin/qwen3-tiny", "qwen3", "ollama://stories:260k", "llama"} {
		if !strings.Contains(out, w) {
			t.Errorf("ls lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 4 {
		t.Errorf("ls printed %d lines, want a header and 3 models:\n%s", n, out)
	}
	repoDir := filepath.Join(hfCache, "models--karpathy--stories260K-GGUF")
	out, _, err = siskinSplit(t, "n\n", "rm", "karpathy/stories260K-GGUF")
	if err != nil || !strings.Contains(out, repoDir) || !strings.Contains(out, "frees 1.1 MiB") || !strings.Contains(out, "Nothing deleted") {
		t.Fatalf("rm answered no: %v\n%s", err, out)
	}
	if _, err := os.Stat(repoDir); err != nil {
		t.Fatal("rm deleted without a yes")
	}
	if out, _, err = siskinSplit(t, "", "rm", "--yes", "hf://karpathy/stories260K-GGUF"); err != nil || !strings.Contains(out, "Deleted.") {
		t.Fatalf("rm --yes: %v\n%s", err, out)
	}
	if _, err := os.Stat(repoDir); !os.IsNotExist(err) {
		t.Error("repository folder still there")
	}
	if out, _, _ = siskinSplit(t, "", "ls"); strings.Contains(out, "stories260K-GGUF") {
		t.Errorf("ls after rm:\n%s", out)
	}
	if _, _, err = siskinSplit(t, "", "rm", "--yes", "karpathy/stories260K-GGUF"); err == nil || !strings.Contains(err.Error(), "not in the Hugging Face cache") {
		t.Errorf("rm twice: %v", err)
	}
}

// rm of one revision keeps the blobs another snapshot links to.
func TestRmRevisionKeepsSharedBlobs(t *testing.T) {
	h, hfCache, _ := sources(t)
	shared := []byte("shared weights, same blob in both commits")
	old := h.Commit("org/m", map[string][]byte{"m-Q8_0.gguf": shared, "m-Q4_0.gguf": []byte("old q4")}, "v1")
	h.Commit("org/m", map[string][]byte{"m-Q8_0.gguf": shared, "m-Q4_0.gguf": []byte("new q4")})
	for _, ref := range []string{"hf://org/m:Q8_0@v1", "hf://org/m:Q4_0@v1", "hf://org/m:Q8_0", "hf://org/m:Q4_0"} {
		if _, _, err := siskinSplit(t, "", "pull", ref); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := siskinSplit(t, "", "rm", "-y", "org/m@v1")
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(hfCache, "models--org--m")
	if !strings.Contains(out, filepath.Join(repo, "snapshots", old)) || !strings.Contains(out, filepath.Join(repo, "refs", "v1")) {
		t.Errorf("rm output:\n%s", out)
	}
	blobs, _ := os.ReadDir(filepath.Join(repo, "blobs"))
	if len(blobs) != 2 {
		t.Errorf("%d blobs left, want the shared one and the new Q4_0", len(blobs))
	}
	if got, _, err := siskinSplit(t, "", "pull", "hf://org/m:Q8_0"); err != nil || !strings.Contains(got, "m-Q8_0.gguf") {
		t.Errorf("the main snapshot broke: %v", err)
	}
}

// Errors name the repository, the file and the HTTP status, and leave
// nothing half-written in snapshots/.
func TestHFErrors(t *testing.T) {
	h, hfCache, _ := sources(t)
	h.Commit("org/gated-GGUF", map[string][]byte{"g-Q8_0.gguf": []byte("weights")})
	h.Gate("org/gated-GGUF")
	_, _, err := siskinSplit(t, "", "run", "-m", "hf://org/gated-GGUF", "-n", "1")
	if err == nil || !strings.Contains(err.Error(), "hf://org/gated-GGUF: g-Q8_0.gguf: HTTP 401") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("gated: %v", err)
	}
	if _, _, err = siskinSplit(t, "", "pull", "hf://org/gone"); err == nil || !strings.Contains(err.Error(), "hf://org/gone: HTTP 401") {
		t.Errorf("missing repository: %v", err)
	}
	if _, _, err = siskinSplit(t, "", "pull", "ollama://x"); err == nil || !strings.Contains(err.Error(), "pull ollama models with ollama") {
		t.Errorf("pull ollama: %v", err)
	}
	if _, _, err = siskinSplit(t, "", "run", "-m", "hf://org/a/b"); err == nil || !strings.Contains(err.Error(), "ORG/REPO") {
		t.Errorf("bad reference: %v", err)
	}
	filepath.Walk(hfCache, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.Contains(p, "snapshots") && !info.IsDir() {
			t.Errorf("file in snapshots after failures: %s", p)
		}
		return nil
	})
}

func TestServedName(t *testing.T) {
	for in, want := range map[string]string{"hf://Qwen/Qwen3-0.6B-GGUF:Q8_0@main": "Qwen/Qwen3-0.6B-GGUF:Q8_0", "hf://a/b": "a/b", "ollama://qwen3:0.6b": "qwen3:0.6b"} {
		if got := servedName(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
