package device

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseProfile(t *testing.T) {
	src := `# a full profile
description: test box
threads: 6
weight_path: w4a8
priority: fidelity
max_model_len: 4096
kv_cache_bytes: 2147483648
kv_cache_type: f32
max_num_seqs: 3
max_num_batched_tokens: 192
sampling:
  temperature: 0.7
  top_p: 0.9
  top_k: 40
  min_p: 0
  repetition_penalty: 1
`
	p, err := ParseProfile("full.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		KeyThreads: 6, KeyWeightPath: "w4a8", KeyPriority: "fidelity", KeyMaxModelLen: 4096,
		KeyKVCacheBytes: int64(2 << 30), KeyKVCacheType: "f32", KeyMaxNumSeqs: 3, KeyMaxNumBatchedTokens: 192,
		KeyTemperature: 0.7, KeyTopP: 0.9, KeyTopK: 40, KeyMinP: 0.0, KeyRepetitionPenalty: 1.0,
	}
	for _, name := range SettingNames() {
		got, ok := p.Get(name)
		if !ok || got != want[name] {
			t.Errorf("%s = %#v (%v), want %#v", name, got, ok, want[name])
		}
	}
	if p.Description != "test box" || p.Source != "profile full.yaml" {
		t.Errorf("description %q source %q", p.Description, p.Source)
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}

	for _, empty := range []string{"", "# only a comment\n", "---\n", "{}\n"} {
		p, err := ParseProfile("empty.yaml", []byte(empty))
		if err != nil {
			t.Errorf("%q: %v", empty, err)
			continue
		}
		if l := p.Layer(); l.Len() != 0 {
			t.Errorf("%q sets %d values", empty, l.Len())
		}
	}
}

// Strict parsing: every mistake is an error naming the file, line and
// column of the offending key or value.
func TestParseProfileErrors(t *testing.T) {
	for _, c := range []struct {
		src          string
		line, column int
		msg          string
	}{
		{"threads: 4\nbogus: 1\n", 2, 1, `unknown key "bogus"`},
		{"threads: 4\nsampling:\n  temperature: 1\n  top_q: 0.5\n", 4, 3, `unknown key "top_q" in sampling`},
		{"temperature: 0.5\n", 1, 1, "belongs under sampling"},
		{"sampling:\n  threads: 2\n", 2, 3, `unknown key "threads" in sampling`},
		{"threads: four\n", 1, 10, `threads: want an integer, got a string ("four")`},
		{"threads: \"4\"\n", 1, 10, "want an integer, got a string"},
		{"threads: 4.5\n", 1, 10, "want an integer, got a fraction (4.5)"},
		{"threads: 99999999999999999999\n", 1, 10, "is too large"},
		{"kv_cache_bytes: 9223372036854775808\n", 1, 17, "too large"},
		{"threads: true\n", 1, 10, "want an integer, got a boolean"},
		{"threads:\n", 1, 0, "want an integer, got null"},
		{"threads: 0\n", 1, 10, "threads: 0 must be at least 1"},
		{"weight_path: 5\n", 1, 14, "weight_path: want a string, got an integer (5)"},
		{"weight_path: fast\n", 1, 14, `weight_path: "fast" must be one of auto, gguf, w4a8, w4a16, w8a8`},
		{"priority: [speed]\n", 1, 11, "want a string, got a sequence"},
		{"kv_cache_type: q4_0\n", 1, 16, `kv_cache_type: "q4_0" must be one of f16, q8_0, f32`},
		{"kv_cache_bytes: 1.5e9\n", 1, 17, "want an integer, got a fraction"},
		{"sampling:\n  temperature: hot\n", 2, 16, "temperature: want a number, got a string"},
		{"sampling:\n  temperature: .inf\n", 2, 16, "want a finite number"},
		{"sampling:\n  top_p: 0\n", 2, 10, "top_p: 0 must be in (0, 1]"},
		{"sampling:\n  top_k: -2\n", 2, 10, "at least -1"},
		{"sampling:\n  repetition_penalty: 0\n", 2, 23, "greater than 0"},
		{"sampling: 3\n", 1, 11, "sampling: want a mapping"},
		{"threads: 1\nthreads: 2\n", 2, 1, ""},
		{"- threads\n", 1, 1, "a profile is a mapping"},
		{"threads: &n 4\n", 1, 10, "anchor"},
		{"threads: !!int 4\n", 1, 10, "tagged"},
		{"threads: 2\n---\nthreads: 3\n", 3, 8, "single YAML document"},
		{"threads: [1,\n", 1, 10, ""}, // a syntax error
		{"description: 5\n", 1, 14, "description: want a string"},
	} {
		_, err := ParseProfile("bad.yaml", []byte(c.src))
		var pe *ProfileError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v (%T), want a *ProfileError", c.src, err, err)
			continue
		}
		if pe.File != "bad.yaml" || pe.Line != c.line || (c.column != 0 && pe.Column != c.column) || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%q:\n got %s (line %d col %d)\nwant bad.yaml:%d:%d: ...%s...", c.src, err, pe.Line, pe.Column, c.line, c.column, c.msg)
		}
		if pe.Line > 0 && !strings.HasPrefix(err.Error(), "bad.yaml:") {
			t.Errorf("%q: %q does not start with the file name", c.src, err)
		}
	}
}

func TestLoadProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte("threads: 3\nwrong: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadProfile(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":2:1: unknown key") {
		t.Errorf("error %v", err)
	}
	if err := os.WriteFile(path, []byte("threads: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := OpenProfile(path)
	if err != nil || *p.Threads != 3 || p.Source != "profile "+path {
		t.Errorf("%+v %v", p, err)
	}
	if _, err := LoadProfile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	p, err = OpenProfile(ProfileARM64DotProd)
	if err != nil || p.Source != "profile arm64-dotprod" {
		t.Errorf("built-in by name: %+v %v", p, err)
	}
}

func TestBuiltinProfiles(t *testing.T) {
	for _, name := range BuiltinNames() {
		p, err := BuiltinProfile(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if p.Name != name || p.Source != "profile "+name || p.Description == "" {
			t.Errorf("%s: name %q source %q description %q", name, p.Name, p.Source, p.Description)
		}
		// Built-ins leave the machine-specific values to the auto profile
		// and the sampling defaults to the model, which ranks below a
		// --profile file.
		if p.Threads != nil || p.KVCacheBytes != nil || p.MaxModelLen != nil || p.Sampling != (Sampling{}) {
			t.Errorf("%s sets machine or model specific values", name)
		}
		if p.MaxNumSeqs == nil || p.MaxNumBatchedTokens == nil || p.WeightPath == nil || p.Priority == nil {
			t.Errorf("%s leaves serving values unset", name)
		}
	}
	if _, err := BuiltinProfile("x86-avx2"); err == nil {
		t.Error("unknown built-in accepted")
	}
	// Each call returns a fresh copy.
	a, _ := BuiltinProfile(ProfileX86AVX2Laptop)
	*a.MaxNumSeqs = 99
	b, _ := BuiltinProfile(ProfileX86AVX2Laptop)
	if *b.MaxNumSeqs == 99 {
		t.Error("built-in profiles share state")
	}
}

// Synthetic CPUs for the decision tests.
var (
	avx2Laptop = &Info{CPU: CPU{Arch: "amd64"}, Features: Features{AVX2: true, FMA: true, F16C: true},
		Cores: Cores{Physical: 4, Logical: 8, Usable: 8}, Memory: Memory{TotalBytes: 16 << 30, AvailableBytes: 8 << 30}}
	avxVNNIClient = &Info{CPU: CPU{Arch: "amd64"}, Features: Features{AVX2: true, FMA: true, F16C: true, AVXVNNI: true},
		Cores: Cores{Physical: 14, Logical: 20, Usable: 20, Hybrid: true, Performance: 6, Efficiency: 8}}
	avx512VNNI = &Info{CPU: CPU{Arch: "amd64"}, Features: Features{AVX2: true, FMA: true, F16C: true,
		AVX512F: true, AVX512BW: true, AVX512VNNI: true}, Cores: Cores{Physical: 32, Logical: 64, Usable: 64}}
	avx512NoVNNI = &Info{CPU: CPU{Arch: "amd64"}, Features: Features{AVX2: true, FMA: true, AVX512F: true, AVX512BW: true}}
	amxServer    = &Info{CPU: CPU{Arch: "amd64"}, Features: Features{AVX2: true, FMA: true, F16C: true,
		AVX512F: true, AVX512BW: true, AVX512VNNI: true, AVX512BF16: true, AMXTile: true, AMXInt8: true, AMXBF16: true},
		AMX: AMX{CPUHas: true, XCR0Enabled: true, OSGrants: true}, Cores: Cores{Physical: 56, Logical: 112, Usable: 112}}
	amxDenied = &Info{CPU: CPU{Arch: "amd64"}, Features: Features{AVX2: true, FMA: true, F16C: true,
		AVX512F: true, AVX512BW: true, AVX512VNNI: true},
		AMX: AMX{CPUHas: true, XCR0Enabled: true, Detail: "arch_prctl failed"}}
	noAVX2     = &Info{CPU: CPU{Arch: "amd64"}}
	arm64Board = &Info{CPU: CPU{Arch: "arm64"}, Features: Features{ASIMD: true}, Cores: Cores{Physical: 4, Logical: 4, Usable: 4}}
	arm64DP    = &Info{CPU: CPU{Arch: "arm64"}, Features: Features{ASIMD: true, DotProd: true},
		Cores: Cores{Physical: 4, Logical: 4, Usable: 4}, Memory: Memory{AvailableBytes: 6 << 30}}
	riscv = &Info{CPU: CPU{Arch: "riscv64"}, Cores: Cores{Physical: 4, Logical: 4, Usable: 4}}
)

func TestAutoProfile(t *testing.T) {
	for _, c := range []struct {
		name    string
		info    *Info
		base    string
		threads int
		kv      int64
	}{
		{"avx2-only", avx2Laptop, ProfileX86AVX2Laptop, 4, 2 << 30},
		{"avx-vnni hybrid", avxVNNIClient, ProfileX86AVX2Laptop, 6, 0},
		{"avx512vnni", avx512VNNI, ProfileX86AVX512Server, 32, 0},
		{"avx512 no vnni", avx512NoVNNI, ProfileX86AVX512Server, 1, 0},
		{"amx", amxServer, ProfileX86AMXServer, 56, 0},
		{"amx not granted", amxDenied, ProfileX86AVX512Server, 1, 0},
		{"no avx2", noAVX2, ProfileX86AVX2Laptop, 1, 0},
		{"arm64 neon", arm64Board, ProfileARM64NEONBoard, 4, 0},
		{"arm64 dotprod", arm64DP, ProfileARM64DotProd, 4, 1536 << 20},
		{"riscv64", riscv, ProfileARM64NEONBoard, 4, 0},
	} {
		p := AutoProfile(c.info)
		if p.Base != c.base || p.Name != "auto" || p.Source != "auto profile "+c.base || p.Why == "" {
			t.Errorf("%s: base %q name %q source %q why %q, want base %s", c.name, p.Base, p.Name, p.Source, p.Why, c.base)
		}
		if p.Threads == nil || *p.Threads != c.threads {
			t.Errorf("%s: threads %v, want %d", c.name, p.Threads, c.threads)
		}
		if c.kv == 0 && p.KVCacheBytes != nil || c.kv != 0 && (p.KVCacheBytes == nil || *p.KVCacheBytes != c.kv) {
			t.Errorf("%s: kv_cache_bytes %v, want %d", c.name, p.KVCacheBytes, c.kv)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if p := AutoProfile(nil); p.Threads == nil || *p.Threads < 1 {
		t.Errorf("auto profile of this machine: %+v", p)
	}
}

func TestChooseWeightPath(t *testing.T) {
	for _, c := range []struct {
		name     string
		info     *Info
		priority string
		path     WeightPath
		why      string
	}{
		{"amx", amxServer, "speed", "q4_k_m", "runs Q4_K, Q6_K, Q4_0 and Q8_0 prefill on them"},
		{"amx, empty priority", amxServer, "", "q4_k_m", "runs Q4_K, Q6_K, Q4_0 and Q8_0 prefill on them"},
		{"amx fidelity", amxServer, "fidelity", "w4a16", "fidelity"},
		{"amx not granted", amxDenied, "speed", "q4_k_m", "not usable here"},
		{"avx512 vnni", avx512VNNI, "speed", "q4_k_m", "AVX-512 VNNI"},
		{"avx512 vnni fidelity", avx512VNNI, "fidelity", "w4a16", "fidelity"},
		{"avx512 without vnni", avx512NoVNNI, "speed", "q4_k_m", "faster than w4a8 at decode"},
		{"avx2", avx2Laptop, "speed", "q4_k_m", "more faithful"},
		{"avx2 fidelity", avx2Laptop, "fidelity", "w4a16", "fidelity"},
		{"avx-vnni", avxVNNIClient, "speed", "q4_k_m", "AVX-VNNI"},
		{"no avx2", noAVX2, "speed", "gguf", "generic"},
		{"arm64 dotprod", arm64DP, "speed", "w4a16", "until a dotprod w4a8 kernel is measured"},
		{"arm64 neon", arm64Board, "speed", "w4a16", "no dotprod"},
		{"arm64 fidelity", arm64DP, "fidelity", "w4a16", "fidelity"},
		{"riscv64", riscv, "speed", "gguf", "generic"},
	} {
		path, why := ChooseWeightPath(c.info, c.priority)
		if path != c.path || !strings.Contains(why, c.why) {
			t.Errorf("%s: %s (%s), want %s (...%s...)", c.name, path, why, c.path, c.why)
		}
	}
}
