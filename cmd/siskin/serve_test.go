package main

import (
	"github.com/siskin-ml/siskin/device"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// --print-config shows each setting with where it came from: flags beat
// --profile, which beats generation_config, which beats the auto profile.
func TestServePrintConfig(t *testing.T) {
	model := testdata.Path(t, "llm", "tiny", "hf", "qwen3-tiny", "bf16")
	prof := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(prof, []byte("max_num_seqs: 3\nsampling:\n  top_k: 7\n  min_p: 0.05\n"), 0o644)
	out, err := siskin(t, "serve", "-m", model, "--print-config", "--profile", prof, "--temperature", "0.2")
	wantPath, _ := device.ChooseWeightPath(device.Probe(), device.PrioritySpeed)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"temperature", "0.2", "flag"},
		{"max_num_seqs", "3", "profile"},
		{"min_p", "0.05", "profile"},
		{"top_k", "7", "profile"}, // the profile beats generation_config's 20
		{"top_p", "0.95", "generation_config"},
		{"threads", "auto profile"},
		{"kv_cache_type", "f16", "default"},
		// BF16 weights: whatever this CPU's automatic choice is.
		{"weight path", string(wantPath)},
	} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(line, w)
			}
			found = found || ok && strings.HasPrefix(line, want[0])
		}
		if !found {
			t.Errorf("no line with %q in:\n%s", want, out)
		}
	}
	// The KV cache type from a profile, and --kv-type over it.
	os.WriteFile(prof, []byte("kv_cache_type: f32\n"), 0o644)
	out, err = siskin(t, "serve", "-m", model, "--print-config", "--profile", prof)
	if err != nil || !regexpLine(out, "kv_cache_type", "f32", "profile") {
		t.Errorf("kv_cache_type from the profile: %v\n%s", err, out)
	}
	out, err = siskin(t, "serve", "-m", model, "--print-config", "--profile", prof, "--kv-type", "f16")
	if err != nil || !regexpLine(out, "kv_cache_type", "f16", "flag") {
		t.Errorf("--kv-type over the profile: %v\n%s", err, out)
	}
	if _, err := siskin(t, "serve", "-m", model, "--print-config", "--kv-type", "q4_0"); err == nil || !strings.Contains(err.Error(), "must be one of f16, q8_0, f32") {
		t.Errorf("--kv-type q4_0: %v", err)
	}
	os.WriteFile(prof, []byte("threads: 2\nbogus: 1\n"), 0o644)
	if _, err := siskin(t, "serve", "-m", model, "--print-config", "--profile", prof); err == nil || !strings.Contains(err.Error(), prof+":2:1") {
		t.Errorf("unknown profile key: %v", err)
	}
}

// regexpLine reports whether a line of out starts with name and holds the
// other fields, in order, separated by spaces.
func regexpLine(out, name string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(fields)+1 && f[0] == name && slices.Equal(f[1:len(fields)+1], fields) {
			return true
		}
	}
	return false
}
