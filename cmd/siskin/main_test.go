package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/modeltest"
	"github.com/siskin-ml/siskin/internal/testdata"
)

func siskin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := rootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// llama.cpp's llama-simple, greedy, 128 tokens: siskin run prints the same
// bytes (prompt pieces including "<s>", then the continuation), with the
// f16 KV cache both default to.
func TestRunStories260KMatchesLlamaCpp(t *testing.T) {
	model := testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf")
	prompts := []string{"", "Once upon a time", "Lily and Tom went to the park", "The little dog was sad because"}
	for i := 1; i <= 3; i++ {
		want, err := os.ReadFile(testdata.Path(t, "llm", "stories260K-gguf", "golden", "llama-simple_greedy_n128_prompt"+strconv.Itoa(i)+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(want), "<s> "+prompts[i]) {
			t.Fatalf("golden %d does not start with its prompt %q", i, prompts[i])
		}
		got, err := siskin(t, "run", "-m", model, "-p", prompts[i], "-n", "128", "--temp", "0", "--weight-path", "gguf")
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("prompt %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

// --prompt-ids / --print-ids on the tiny Spark model reproduce the float64
// reference's 32 greedy tokens (float32 KV cache, as the golden).
func TestRunPrintIDs(t *testing.T) {
	g := modeltest.Load(t, testdata.Path(t, "llm", "tiny", "golden", "ref"), "spark2_5-tiny-f32.ref")
	ids := make([]string, len(g.PromptIDs))
	for i, id := range g.PromptIDs {
		ids[i] = strconv.Itoa(id)
	}
	got, err := siskin(t, "run", "-m", testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf"),
		"--prompt-ids", strings.Join(ids, ","), "-n", "32", "--print-ids", "--ignore-eos", "-t", "2", "--weight-path", "gguf", "--kv-type", "f32")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(g.GeneratedIDs))
	for i, id := range g.GeneratedIDs {
		want[i] = strconv.Itoa(id)
	}
	if strings.TrimSpace(got) != strings.Join(want, " ") {
		t.Errorf("got  %s\nwant %s", strings.TrimSpace(got), strings.Join(want, " "))
	}
}

// Seeded sampling is reproducible.
func TestRunSeeded(t *testing.T) {
	model := testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf")
	args := []string{"run", "-m", model, "-p", "Once upon a time", "-n", "40", "--temp", "1", "--top-p", "0.9", "--seed", "42", "--print-ids"}
	a, err := siskin(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := siskin(t, args...)
	if a != b || len(strings.Fields(a)) == 0 {
		t.Errorf("same seed gave %q and %q", a, b)
	}
}

func TestInfo(t *testing.T) {
	out, err := siskin(t, "info", "-m", testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_k_m.gguf"), "--ctx", "1024")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spark2_5", "sliding layers", "6 of 8, window 16", "tensors Q4_K", "tensors Q6_K", "weight bytes", "kv cache at 1024 tokens"} {
		if !strings.Contains(out, want) {
			t.Errorf("info output lacks %q:\n%s", want, out)
		}
	}
	out, err = siskin(t, "info", "-m", testdata.Path(t, "llm", "tiny", "hf", "qwen3-tiny", "bf16"))
	if err != nil || !strings.Contains(out, "tensors BF16") {
		t.Errorf("info on HF folder: %v\n%s", err, out)
	}
}

func TestCLIErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "-m MODEL is required"},
		{[]string{"run", "-m", "/nonexistent/model.gguf"}, "/nonexistent/model.gguf"},
		{[]string{"run", "-m", "x", "-p", "a", "--prompt-ids", "1"}, "not both"},
		{[]string{"run", "-m", testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf"), "--prompt-ids", "1,x"}, `"x" is not a token id`},
		{[]string{"run", "-m", testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf"), "--prompt-ids", "1,9999"}, "outside the vocabulary"},
	} {
		_, err := siskin(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to say %q", c.args, err, c.want)
		}
	}
}

// TestMain keeps the weight cache of commands run by the tests out of
// the user's cache directory.
func TestMain(m *testing.M) {
	if args := os.Getenv(mainArgsEnv); args != "" {
		os.Exit(runMain(args))
	}
	dir, err := os.MkdirTemp("", "siskin-weight-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("SISKIN_CACHE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mainArgsEnv, when set to a JSON array of arguments, makes the test
// binary run that siskin command instead of the tests (siskinProcess).
const mainArgsEnv = "SISKIN_TEST_MAIN_ARGS"

func runMain(args string) int {
	var a []string
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	root := rootCmd()
	root.SetArgs(a)
	if err := root.Execute(); err != nil {
		return 1
	}
	return 0
}

// siskinProcess runs a siskin command in a process of its own (this test
// binary, re-executed), for measurements such as RSS that other tests in
// the same process would disturb. It returns standard output.
func siskinProcess(t *testing.T, args ...string) (string, error) {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(a))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%v: %s", err, stderr.String())
	}
	return string(out), nil
}
