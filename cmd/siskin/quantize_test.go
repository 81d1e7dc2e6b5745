package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// siskin quantize reproduces llama.cpp's Q8_0 file of the tiny Spark model
// byte for byte (the quantize package tests all types).
func TestQuantizeCommand(t *testing.T) {
	models := testdata.Path(t, "llm", "tiny", "models")
	out := filepath.Join(t.TempDir(), "q8.gguf")
	msg, err := siskin(t, "quantize", filepath.Join(models, "spark2_5-tiny-f32.gguf"), out, "--type", "q8_0", "--progress", "off")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "Q8_0 x 49") || !strings.Contains(msg, "F32 x 17") {
		t.Errorf("summary: %s", msg)
	}
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile(filepath.Join(models, "spark2_5-tiny-q8_0.gguf"))
	if !bytes.Equal(got, want) {
		t.Error("output differs from llama.cpp's spark2_5-tiny-q8_0.gguf")
	}
	if _, err := siskin(t, "quantize", filepath.Join(models, "spark2_5-tiny-f32.gguf"), out, "--type", "q5_0"); err == nil || !strings.Contains(err.Error(), "q4_k_m") {
		t.Errorf("unknown type: %v", err)
	}
}

func TestSynthCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.gguf")
	msg, err := siskin(t, "synth", "--arch", "qwen3", "--shape", "tiny", "--type", "q4_0", "-o", out, "--seed", "5", "--progress", "off")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "qwen3 tiny q4_0") {
		t.Errorf("summary: %s", msg)
	}
	if _, err := siskin(t, "run", "-m", out, "--prompt-ids", "0,5,7", "-n", "4", "--print-ids", "--ignore-eos", "--temp", "0"); err != nil {
		t.Errorf("run on the synthetic model: %v", err)
	}
	if _, err := siskin(t, "synth", "--arch", "spark2_5", "--shape", "0.6b", "-o", out); err == nil || !strings.Contains(err.Error(), "1.7b") {
		t.Errorf("unknown shape: %v", err)
	}
}

// Off a terminal, --progress on prints a plain line per 10%, no escapes.
func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	update, finish, err := newProgress(&buf, "on", "quantize q8_0")
	if err != nil {
		t.Fatal(err)
	}
	for done := int64(0); done <= 100; done += 5 {
		update(done, 100)
	}
	finish(true)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 11 || !strings.HasPrefix(lines[10], "quantize q8_0: 100%") || strings.Contains(buf.String(), "\x1b") {
		t.Errorf("progress output:\n%s", buf.String())
	}
	if _, _, err := newProgress(&buf, "sometimes", "x"); err == nil {
		t.Error("bad --progress value accepted")
	}
}
