package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/ledger"
)

func TestLedgerCommandJSON(t *testing.T) {
	model := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_0.gguf")
	out, err := siskinProcess(t, "ledger", "-m", model, "--ctx", "64", "-n", "4", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"rss_bytes", "pss_bytes", "entries", "unattributed_bytes", "unattributed_share"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	var r ledger.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"blk.0 weights (mapped)", "token_embd.weight (mapped)", "KV layer 3 (full)", "KV layer 0 (sliding 16)",
		"RoPE table, sliding layers (rot 64)", "norm vectors (float32)", "tokenizer", "Go heap: objects not registered",
	} {
		if _, ok := r.Find(name); !ok {
			t.Errorf("no line %q", name)
		}
	}
	// 64 positions: the sliding layers hold their window of 16, the full
	// ones all 64 (kv dim 128, f16 keys and values by default).
	if e, _ := r.Find("KV layer 0 (sliding 16)"); e.Bytes != 16*128*2*2 {
		t.Errorf("sliding KV layer: %d bytes, want %d", e.Bytes, 16*128*2*2)
	}
	if e, _ := r.Find("KV layer 3 (full)"); e.Bytes < 64*128*2*2 || e.Bytes >= 64*128*4*2 {
		t.Errorf("full KV layer: %d bytes, want at least %d (and less than float32's)", e.Bytes, 64*128*2*2)
	}
	// --kv-type f32 doubles them.
	out, err = siskin(t, "ledger", "-m", model, "--ctx", "64", "-n", "4", "--json", "--kv-type", "f32")
	if err != nil {
		t.Fatal(err)
	}
	var r32 ledger.Report
	if err := json.Unmarshal([]byte(out), &r32); err != nil {
		t.Fatal(err)
	}
	if e, _ := r32.Find("KV layer 0 (sliding 16)"); e.Bytes != 16*128*4*2 {
		t.Errorf("f32 sliding KV layer: %d bytes, want %d", e.Bytes, 16*128*4*2)
	}
	// The issue asks for under 1% unattributed, of a 1.7B model's RSS. The
	// command runs in a process of its own, so no other test's memory is
	// counted; but this model's RSS is ~25 MiB, where the few hundred KiB
	// the runtime may move between reading RSS and walking the entries
	// (measured 0.1-2.2% here, most on a cold weight cache) is already a percent: hence 3%.
	t.Logf("RSS %d, unattributed %d (%.3f%%)", r.RSSBytes, r.UnattributedBytes, 100*r.UnattributedShare)
	if !raceEnabled && r.RSSBytes > 0 && (r.UnattributedShare > 0.03 || r.UnattributedShare < -0.03) {
		t.Errorf("unattributed share %.4f", r.UnattributedShare)
	}
}

func TestLedgerCommandTable(t *testing.T) {
	model := testdata.Path(t, "llm", "tiny", "models", "qwen3-tiny-q4_k_m.gguf")
	out, err := siskin(t, "ledger", "-m", model, "--ctx", "32", "-n", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"30 prompt + 2 generated tokens", "NAME", "CATEGORY", "RESIDENT", "blk.7 weights (mapped)", "RoPE table (rot 64)", "RSS ", "Pss ", "unattributed "} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in\n%s", s, out)
		}
	}
	if _, err := siskin(t, "ledger", "-m", model, "--ctx", "4", "-n", "4"); err == nil {
		t.Error("--ctx not above -n accepted")
	}
	if _, err := siskin(t, "ledger"); err == nil {
		t.Error("no -m accepted")
	}
}
