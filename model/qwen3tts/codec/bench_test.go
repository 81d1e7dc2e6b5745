package codec

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/siskin-ml/siskin/model/qwen3tts/synth"
)

// BenchmarkTinyDecode: whole decode of the golden's 40 frames (3.2 s of
// audio) with the shared tiny checkpoint.
func BenchmarkTinyDecode(b *testing.B) {
	d := tiny(b)
	codes, _ := goldenCodes(b)
	for b.Loop() {
		if _, err := d.Decode(codes); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRealStream: the released decoder's size (random weights from
// synth), 25 frames (2 s of audio) pushed one frame at a time.
func BenchmarkRealStream(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "codec")
	if err := synth.WriteCodec(dir, "0.6b", 1); err != nil {
		b.Fatal(err)
	}
	d, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	codes := make([]int32, 16*25)
	for i := range codes {
		codes[i] = int32(rng.IntN(2048))
	}
	for b.Loop() {
		s := d.NewStream(1)
		for f := range 25 {
			if _, err := s.Push(nil, codes[f*16:(f+1)*16]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(d.StateBytes()), "state-bytes")
	b.ReportMetric(float64(d.StreamBytes(1)), "stream-bytes")
	b.ReportMetric(float64(d.Bytes), "weight-bytes")
}
