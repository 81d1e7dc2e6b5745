package qwen3tts

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// ParseConfig on arbitrary config.json / generation_config.json bytes:
// an error or a config whose ids and shapes are in range, never a panic.
func FuzzParseConfig(f *testing.F) {
	dir := ckptDir(f)
	cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		f.Fatal(err)
	}
	gen, err := os.ReadFile(filepath.Join(dir, "generation_config.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cfg, gen)
	f.Add(cfg, []byte(nil))
	f.Add([]byte(`{"model_type":"qwen3_tts","talker_config":{"code_predictor_config":{}}}`), []byte(`{}`))
	f.Add([]byte(`{"model_type":"qwen3_tts","talker_config":{"spk_id":{"a":[1,2]}}}`), []byte(`{"max_new_tokens":-1}`))
	f.Fuzz(func(t *testing.T, cfg, gen []byte) {
		c, err := ParseConfig(cfg, gen)
		if err != nil {
			return
		}
		for name, id := range c.Speakers {
			if id < 0 || id >= c.Talker.Vocab {
				t.Fatalf("speaker %s id %d outside the vocabulary", name, id)
			}
		}
		// A prompt for every speaker builds or fails cleanly.
		ids := []int{0, 0, 0, 0, 0, 0, 0, 0, 0}
		for _, s := range c.SupportedSpeakers() {
			for _, l := range c.SupportedLanguages() {
				if p, err := c.BuildPrompt(ids, Voice{Speaker: s, Language: l}); err == nil {
					for _, id := range p.Codec {
						if id < -1 || id >= c.Talker.Vocab {
							t.Fatalf("codec id %d outside the vocabulary", id)
						}
					}
				}
			}
		}
	})
}

// ParseCodes on arbitrary bytes: an error or frames that are in range and
// survive MarshalCodes unchanged.
func FuzzParseCodes(f *testing.F) {
	f.Add([]byte(`{"codes": [[1, 2, 3, 4], [0, 0, 0, 2047]]}`))
	f.Add([]byte(`{"codes": []}`))
	f.Add([]byte(`{"codes": [[1.5, 2, 3, 4]]}`))
	f.Add([]byte(`{"codes": [[1, 2, 3]]} {}`))
	f.Add([]byte(`{"codes": [[-1, 2, 3, 99999999999999999999]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		codes, err := ParseCodes(data, 4, 2048)
		if err != nil {
			return
		}
		again, err := ParseCodes(MarshalCodes(codes), 4, 2048)
		if err != nil || !slices.EqualFunc(codes, again, slices.Equal) {
			t.Fatalf("round trip of %v: %v, %v", codes, again, err)
		}
	})
}
