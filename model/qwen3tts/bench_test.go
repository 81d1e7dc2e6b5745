package qwen3tts

import "testing"

// BenchmarkFrames generates 12 greedy frames on the tiny fixture (a
// talker prefill, 12 predictor passes of 15 sub-steps, 12 talker steps).
func BenchmarkFrames(b *testing.B) {
	m := openModel(b, ckptDir(b))
	g := loadGolden(b, "cv_ryan_english_nonstream")
	for b.Loop() {
		r := g.request(m)
		r.Trace = nil
		if _, err := m.Generate([]*Request{r}); err != nil {
			b.Fatal(err)
		}
	}
}
