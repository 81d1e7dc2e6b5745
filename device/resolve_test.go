package device

import (
	"strings"
	"testing"
)

func TestResolvePrecedence(t *testing.T) {
	flags, err := FlagLayer(func(set func(name, value string)) {
		set("threads", "3")
		set("host", "0.0.0.0")    // not a setting: ignored
		set("max-model-len", "0") // 0 = auto for this flag: left to lower layers
		set("temp", "0.2")
		set("kv-type", "f32") // serve's --kv-type sets kv_cache_type
	})
	if err != nil {
		t.Fatal(err)
	}
	file, err := ParseProfile("site.yaml", []byte("weight_path: w4a16\nmax_num_seqs: 2\nsampling:\n  temperature: 0.5\n  top_p: 0.8\n"))
	if err != nil {
		t.Fatal(err)
	}
	temp, topP, topK := 0.6, 0.95, 20
	gen, err := GenerationConfigLayer(GenerationDefaults{Temperature: &temp, TopP: &topP, TopK: &topK})
	if err != nil {
		t.Fatal(err)
	}
	auto := AutoProfile(avx2Laptop)
	got := Resolve(flags, file.Layer(), gen, auto.Layer())

	const a = "auto profile x86-avx2-laptop"
	want := []Setting{
		{KeyThreads, 3, "flag"},
		{KeyWeightPath, "w4a16", "profile site.yaml"},
		{KeyPriority, "speed", a},
		{KeyMaxModelLen, nil, "unset"},
		{KeyKVCacheBytes, int64(2 << 30), a},
		{KeyKVCacheType, "f32", "flag"},
		{KeyMaxNumSeqs, 2, "profile site.yaml"},
		{KeyMaxNumBatchedTokens, 256, a},
		{KeyTemperature, 0.2, "flag"},
		{KeyTopP, 0.8, "profile site.yaml"},
		{KeyTopK, 20, "generation_config"},
		{KeyMinP, 0.0, "default"},
		{KeyRepetitionPenalty, 1.0, "default"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d settings, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("got %v, want %v", got[i], want[i])
		}
	}
	if got.Int(KeyThreads) != 3 || got.Int(KeyKVCacheBytes) != 2<<30 || got.Float(KeyTopP) != 0.8 || got.String(KeyPriority) != "speed" {
		t.Errorf("accessors: %v", got)
	}
	if s := got.Get(KeyMaxModelLen).String(); s != "max_model_len unset" {
		t.Errorf("unset String() = %q", s)
	}
	if s := got.Get(KeyTopK).String(); s != "top_k = 20 (generation_config)" {
		t.Errorf("String() = %q", s)
	}
	if path, why := got.WeightPath(avx2Laptop); path != "w4a16" || !strings.Contains(why, "profile site.yaml") {
		t.Errorf("weight path %s (%s)", path, why)
	}

	// Without the file, weight_path stays auto and the CPU decides.
	got = Resolve(flags, gen, auto.Layer())
	if s := got.Get(KeyWeightPath); s.Value != "auto" || s.Source != a {
		t.Errorf("weight_path %v", s)
	}
	if path, _ := got.WeightPath(avx2Laptop); path != "q4_k_m" {
		t.Errorf("auto weight path on AVX2: %s", path)
	}
	if path, _ := got.WeightPath(amxServer); path != "q4_k_m" {
		t.Errorf("auto weight path on AMX: %s", path)
	}
	// A fidelity flag changes the auto choice.
	fid, _ := FlagLayer(func(set func(name, value string)) { set("priority", "fidelity") })
	if path, _ := Resolve(fid, auto.Layer()).WeightPath(amxServer); path != "w4a16" {
		t.Errorf("fidelity on AMX: %s", path)
	}

	// Nothing but the defaults.
	got = Resolve()
	for _, s := range got {
		switch s.Name {
		case KeyThreads, KeyMaxModelLen, KeyKVCacheBytes:
			if s.Source != SourceUnset || s.Value != nil {
				t.Errorf("%v, want unset", s)
			}
		default:
			if s.Source != SourceDefault {
				t.Errorf("%v, want a default", s)
			}
		}
	}
}

func TestLayerErrors(t *testing.T) {
	_, err := FlagLayer(func(set func(name, value string)) {
		set("top-k", "x")
		set("top-p", "1.5")
		set("weight-path", "fast")
		set("threads", "2.5")
	})
	for _, want := range []string{"--top-k: top_k: want an integer", "--top-p: top_p: 1.5 must be in (0, 1]",
		`--weight-path: weight_path: "fast" must be one of`, "--threads: threads: want an integer"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	var l Layer
	if err := l.Set("nope", 1); err == nil {
		t.Error("unknown setting accepted")
	}
	if err := l.Set(KeyThreads, 2.0); err == nil {
		t.Error("float thread count accepted")
	}
	if err := l.Set(KeyTemperature, 1); err != nil { // an int for a number is fine
		t.Error(err)
	}
	if err := l.Set(KeyKVCacheBytes, int64(1<<40)); err != nil {
		t.Error(err)
	}
	if v, _ := l.Get(KeyKVCacheBytes); v != int64(1<<40) {
		t.Errorf("kv_cache_bytes stored as %T %v", v, v)
	}
	if err := l.SetString(KeyRepetitionPenalty, "0"); err == nil {
		t.Error("repetition_penalty 0 accepted")
	}
	bad, good := 0.0, 0.7
	g, err := GenerationConfigLayer(GenerationDefaults{TopP: &bad, Temperature: &good})
	if err == nil || !strings.Contains(err.Error(), "generation_config top_p") || g.Len() != 1 {
		t.Errorf("bad generation_config: %v, layer of %d", err, g.Len())
	}
}
