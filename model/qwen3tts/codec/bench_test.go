package codec

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/kernels"

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
// synth), 26 frames (2.08 s of audio) pushed one and two frames at a time
// (serve pushes two after the first), in audio seconds per second.
func BenchmarkRealStream(b *testing.B) {
	d := releasedDecoder(b)
	rng := rand.New(rand.NewPCG(1, 2))
	const frames = 26
	codes := make([]int32, 16*frames)
	for i := range codes {
		codes[i] = int32(rng.IntN(2048))
	}
	for _, chunk := range []int{1, 2, 4, 8, 13} {
		b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
			s := d.NewStream(chunk)
			for b.Loop() {
				s.Reset()
				for f := 0; f < frames; f += chunk {
					if _, err := s.Push(nil, codes[f*16:min(f+chunk, frames)*16]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(frames/12.5*float64(b.N)/b.Elapsed().Seconds(), "audio-s/s")
			b.ReportMetric(float64(d.StateBytes()), "state-bytes")
			b.ReportMetric(float64(d.StreamBytes(chunk)), "stream-bytes")
		})
	}
}

var released struct {
	once sync.Once
	d    *Decoder
	err  error
}

// releasedDecoder loads the released decoder's size (random weights from
// synth) once per process; the files are removed once loaded.
func releasedDecoder(b *testing.B) *Decoder {
	released.once.Do(func() {
		dir, err := os.MkdirTemp("", "codec-bench")
		if err != nil {
			released.err = err
			return
		}
		defer os.RemoveAll(dir)
		if released.err = synth.WriteCodec(dir, "0.6b", 1); released.err == nil {
			released.d, released.err = Load(dir)
		}
	})
	if released.err != nil {
		b.Fatal(released.err)
	}
	return released.d
}

// BenchmarkRealDecode: whole decode of 25 frames (2 s of audio) at the
// released size. Each iteration also runs the tier's register-only FMA
// loop (kernels.FMAPeak) on GOMAXPROCS threads for about as long, so
// fma-share (the codec's FLOP rate over the loop's, FLOPsPerFrame
// counting) compares the two under the same machine load.
func BenchmarkRealDecode(b *testing.B) {
	d := releasedDecoder(b)
	rng := rand.New(rand.NewPCG(1, 2))
	codes := make([]int32, 16*25)
	for i := range codes {
		codes[i] = int32(rng.IntN(2048))
	}
	var codecTime, peakTime time.Duration
	var peakFlops float64
	iters := 1 << 22
	for b.Loop() {
		t0 := time.Now()
		if _, err := d.Decode(codes); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		peakFlops += kernels.FMAPeak(iters, runtime.GOMAXPROCS(0))
		t2 := time.Now()
		codecTime += t1.Sub(t0)
		peakTime += t2.Sub(t1)
		if r := t1.Sub(t0).Seconds() / t2.Sub(t1).Seconds(); r > 0 {
			iters = max(1<<16, int(float64(iters)*r))
		}
	}
	codec := d.FLOPsPerFrame() * 25 * float64(b.N) / codecTime.Seconds()
	b.ReportMetric(codec/1e9, "codec-GFLOP/s")
	b.ReportMetric(float64(25*b.N)/12.5/codecTime.Seconds(), "audio-s/s")
	if peakFlops > 0 {
		peak := peakFlops / peakTime.Seconds()
		b.ReportMetric(peak/1e9, "peak-GFLOP/s")
		b.ReportMetric(codec/peak, "fma-share")
	}
}
