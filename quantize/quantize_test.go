package quantize

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/tensor"
)

func tinyModel(t *testing.T, name string) string {
	t.Helper()
	return testdata.Path(t, "llm", "tiny", "models", name)
}

// compareWithReference quantizes in to typ and compares every tensor (and
// the whole file) with llama.cpp's file ref. It returns how many tensors
// match byte for byte.
func compareWithReference(t *testing.T, in, ref, typ string) (match, total int) {
	t.Helper()
	ft, err := ParseFileType(typ)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.gguf")
	if _, err := File(in, out, Options{Type: ft, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	got, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	want, err := gguf.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	if len(got.Tensors) != len(want.Tensors) {
		t.Errorf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
	}
	for i := range want.Tensors {
		w := &want.Tensors[i]
		total++
		if i >= len(got.Tensors) {
			continue
		}
		g := &got.Tensors[i]
		if g.Name != w.Name || g.Type != w.Type || g.Shape() != w.Shape() {
			t.Errorf("tensor %d: got %s %s %s, want %s %s %s", i, g.Name, g.Type, g.Shape(), w.Name, w.Type, w.Shape())
			continue
		}
		if bytes.Equal(g.Data, w.Data) {
			match++
		} else {
			t.Logf("%s (%s): bytes differ", w.Name, w.Type)
		}
	}
	// Same metadata, order and alignment too: the whole file is equal.
	gb, _ := os.ReadFile(out)
	wb, _ := os.ReadFile(ref)
	if !bytes.Equal(gb, wb) {
		t.Errorf("whole file differs (%d vs %d bytes)", len(gb), len(wb))
	}
	return match, total
}

func TestMatchesLlamaCpp(t *testing.T) {
	for _, c := range []struct{ in, ref, typ string }{
		{"spark2_5-tiny-f32.gguf", "spark2_5-tiny-q8_0.gguf", "q8_0"},
		{"spark2_5-tiny-f32.gguf", "spark2_5-tiny-q4_0.gguf", "q4_0"},
		{"spark2_5-tiny-f32.gguf", "spark2_5-tiny-q4_k_m.gguf", "q4_k_m"},
		{"qwen3-tiny-f32.gguf", "qwen3-tiny-q4_k_m.gguf", "q4_k_m"},
	} {
		t.Run(c.ref, func(t *testing.T) {
			m, n := compareWithReference(t, tinyModel(t, c.in), tinyModel(t, c.ref), c.typ)
			t.Logf("%s: %d of %d tensors match", c.ref, m, n)
			if m != n {
				t.Errorf("%d of %d tensors differ", n-m, n)
			}
		})
	}
}

// stories260K's rows (64 and 172 elements) fit no K-quant block: Q4_K_M
// falls back to Q4_1 / Q8_0 (Q6_K on blk.2 and blk.4 of 5 by use_more_bits),
// and to F16 for 172-element rows; the result
// loads and runs.
func TestFallbackTypes(t *testing.T) {
	in := testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf")
	out := filepath.Join(t.TempDir(), "out.gguf")
	rep, err := File(in, out, Options{Type: mustType(t, "q4_k_m")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tensor.Type{
		"output.weight": tensor.Q8_0, "token_embd.weight": tensor.Q4_1, "output_norm.weight": tensor.F32,
		"blk.2.attn_v.weight": tensor.Q8_0, "blk.0.attn_v.weight": tensor.Q4_1, "blk.0.attn_q.weight": tensor.Q4_1,
		"blk.0.ffn_down.weight": tensor.F16, "blk.0.ffn_up.weight": tensor.Q4_1,
	}
	for _, tr := range rep.Tensors {
		if w, ok := want[tr.Name]; ok && tr.To != w {
			t.Errorf("%s: %s, want %s", tr.Name, tr.To, w)
		}
	}
	lm, err := openModel(out)
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	if _, err := lm.Model.Forward(lm.Model.NewCache(), []int{1, 400, 30}, false); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	q8 := tinyModel(t, "spark2_5-tiny-q8_0.gguf")
	_, err := File(q8, filepath.Join(dir, "x.gguf"), Options{Type: mustType(t, "q4_0")})
	if err == nil || !strings.Contains(err.Error(), q8) || !strings.Contains(err.Error(), "Q8_0") {
		t.Errorf("requantize without the flag: %v", err)
	}
	if _, err := File(q8, filepath.Join(dir, "x.gguf"), Options{Type: mustType(t, "q4_0"), AllowRequantize: true}); err != nil {
		t.Errorf("--allow-requantize: %v", err)
	}
	missing := filepath.Join(dir, "missing.gguf")
	if _, err := File(missing, filepath.Join(dir, "y.gguf"), Options{Type: mustType(t, "q8_0")}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing input: %v", err)
	}
	if _, err := ParseFileType("q3_k"); err == nil || !strings.Contains(err.Error(), "q4_k_m") {
		t.Errorf("bad type: %v", err)
	}
	// Nothing is left behind by a failed run.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
