package codec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseCodes(t *testing.T) {
	codes, err := ParseCodes([]byte(`{"codes": [[0,1,2,3],[4,5,6,7]], "frames": 2}`), 4, 8)
	if err != nil || !slices.Equal(codes, []int32{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("%v %v", codes, err)
	}
	for in, want := range map[string]string{
		`[]`:                       "not a JSON object",
		`{}`:                       `missing key "codes"`,
		`{"codes": []}`:            "no frames",
		`{"codes": [[0,1,2]]}`:     "codes[0]: 3 codes, want 4",
		`{"codes": [[0,1,2,3],1]}`: "codes[1]: not an array",
		`{"codes": [[0,1,2,8]]}`:   "frame 0 codebook 3: code 8 outside [0, 8)",
		`{"codes": [[0,-1,2,3]]}`:  "frame 0 codebook 1: code -1",
		`{"codes": [[0,1.5,2,3]]}`: "codes[0]: not an array of integers",
		`{"codes": [[0,1,2,3]`:     "not a JSON object",
	} {
		if _, err := ParseCodes([]byte(in), 4, 8); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

// FuzzParseCodes: any input gives codes or an error, never a panic, and
// accepted codes are whole frames within the codebook.
func FuzzParseCodes(f *testing.F) {
	for _, s := range []string{`{"codes": [[0,1,2,3]]}`, `{"codes": [[0,1,2,3],[3,2,1,0]]}`, `{"codes": null}`, `{"codes": [[1e3,0,0,0]]}`, `{"codes": [[9999999999999,0,0,0]]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		codes, err := ParseCodes(data, 4, 8)
		if err != nil {
			return
		}
		if len(codes) == 0 || len(codes)%4 != 0 {
			t.Fatalf("%d codes", len(codes))
		}
		for _, c := range codes {
			if c < 0 || c >= 8 {
				t.Fatalf("code %d accepted", c)
			}
		}
	})
}

func TestConfigErrors(t *testing.T) {
	d := tiny(t)
	base, err := os.ReadFile(filepath.Join(tinyDir(t), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseConfig(base); err != nil {
		t.Fatal(err)
	}
	if c := d.Config(); c.SamplesPerFrame() != 1920 {
		t.Fatalf("%d samples per frame", c.SamplesPerFrame())
	}
	for _, key := range requiredKeys {
		cfg := strings.Replace(string(base), `"`+key+`"`, `"x_`+key+`"`, 1)
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), `missing key "`+key+`"`) {
			t.Errorf("without %s: error %v", key, err)
		}
	}
	for in, want := range map[string]string{
		`{"decoder_config": 3}`: "decoder_config",
		`{}`:                    `missing key "decoder_config"`,
		`not json`:              "not a JSON config",
		`{"output_sample_rate": 16000, "decoder_config": {}}`: "output_sample_rate 16000",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
	bad := strings.Replace(string(base), `"sliding_window": 8`, `"sliding_window": -8`, 1)
	if _, err := ParseConfig([]byte(bad)); err == nil || !strings.Contains(err.Error(), "sliding_window is -8") {
		t.Errorf("negative window: %v", err)
	}
}

// TestLoadErrors: a truncated weights file and a config that disagrees
// with the weights are refused with the file and tensor named.
func TestLoadErrors(t *testing.T) {
	src := tinyDir(t)
	cfg, _ := os.ReadFile(filepath.Join(src, "config.json"))
	w, _ := os.ReadFile(filepath.Join(src, "model.safetensors"))
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), w[:len(w)/2], 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "model.safetensors") {
		t.Errorf("truncated: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "model.safetensors"), w, 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(cfg), `"latent_dim": 64`, `"latent_dim": 60`, 1)), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "has shape") {
		t.Errorf("mismatched config: %v", err)
	}
	os.Remove(filepath.Join(dir, "config.json"))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("no config: %v", err)
	}
}

// FuzzParseConfig: any config.json gives a checked config or an error,
// never a panic.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"decoder_config": {}}`))
	f.Add([]byte(`{"decoder_config": {"codebook_size": 64, "codebook_dim": 32, "latent_dim": 64, "hidden_size": 32,
		"intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 16,
		"sliding_window": 8, "rope_theta": 10000, "rms_norm_eps": 1e-5, "num_quantizers": 16, "decoder_dim": 48,
		"upsample_rates": [8, 5, 4, 3], "upsampling_ratios": [2, 2]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if c.SamplesPerFrame() <= 0 || c.DecoderDim>>len(c.UpsampleRates) <= 0 {
			t.Fatalf("accepted %+v", c)
		}
	})
}
