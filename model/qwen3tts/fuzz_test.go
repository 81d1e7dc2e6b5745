package qwen3tts

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
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

// MarshalCodes writes what codec.ParseCodes reads back, frame-major.
func TestMarshalCodesRoundTrip(t *testing.T) {
	for _, frames := range [][][]int{nil, {{1, 2, 3, 4}}, {{0, 0, 0, 2047}, {5, 6, 7, 8}, {2047, 1, 0, 9}}} {
		data := MarshalCodes(frames)
		got, err := codec.ParseCodes(data, 4, 2048)
		if len(frames) == 0 {
			if err == nil {
				t.Errorf("%s: no frames accepted", data)
			}
			continue
		}
		var want []int32
		for _, f := range frames {
			for _, c := range f {
				want = append(want, int32(c))
			}
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: read back %v, %v", data, got, err)
		}
	}
}
