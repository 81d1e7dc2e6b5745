package codec

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model/qwen3tts/synth"
)

// pushAll decodes codes through one stream in pushes of the given frame
// counts, checking each push returns exactly n x 1920 samples.
func pushAll(t *testing.T, s *Stream, codes []int32, pushes []int) []float32 {
	t.Helper()
	var out []float32
	f := 0
	for _, n := range pushes {
		before := len(out)
		var err error
		out, err = s.Push(out, codes[f*16:(f+n)*16])
		if err != nil {
			t.Fatal(err)
		}
		if len(out)-before != n*1920 {
			t.Fatalf("push of %d frames gave %d samples, want %d", n, len(out)-before, n*1920)
		}
		f += n
	}
	return out
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d samples, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: sample %d is %v, whole decode %v (not bit-identical)", what, i, got[i], want[i])
		}
	}
}

// TestStreamExact: streaming in the golden's pushes, in 40 one-frame
// pushes and in random partitions (with several step sizes) gives the
// whole decode bit for bit (tolerance 0), and the golden pushes are within
// 1e-4 of the float64 reference's streaming output.
func TestStreamExact(t *testing.T) {
	d := tiny(t)
	codes, frames := goldenCodes(t)
	whole, err := d.Decode(codes)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kernel tier %s", kernels.Tier())
	golden := []int{1, 5, 5, 5, 5, 5, 5, 5, 4}
	got := pushAll(t, d.NewStream(0), codes, golden)
	sameBits(t, "golden pushes", got, whole)
	want := readF32(t, testdata.Path(t, "tts", "codec", "golden", "wav_stream_exact.f32"))
	worst := 0.0
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i])-float64(want[i])))
	}
	if worst > 1e-4 {
		t.Errorf("golden pushes vs wav_stream_exact: max |diff| %g > 1e-4", worst)
	}
	ones := make([]int, frames)
	for i := range ones {
		ones[i] = 1
	}
	sameBits(t, "one-frame pushes", pushAll(t, d.NewStream(0), codes, ones), whole)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 6 {
		var parts []int
		for left := frames; left > 0; {
			n := min(left, 1+rng.IntN(12))
			parts = append(parts, n)
			left -= n
		}
		chunk := []int{1, 3, 7, 16, 40, 64}[trial]
		sameBits(t, "random partition", pushAll(t, d.NewStream(chunk), codes, parts), whole)
	}
	// A reused stream after Reset decodes the same again.
	s := d.NewStream(5)
	pushAll(t, s, codes[:7*16], []int{7})
	s.Reset()
	sameBits(t, "after Reset", pushAll(t, s, codes, []int{20, 20}), whole)
}

// TestStreamTiers reruns TestStreamExact and TestGolden (bit-exact
// streaming, and the goldens within their tolerances) with each other
// tier this CPU runs pinned: generic (the pure-Go twins) and, on amd64,
// avx2 (the default run uses the best tier; -tags purego is the generic
// code compiled without assembly).
func TestStreamTiers(t *testing.T) {
	if os.Getenv(kernels.EnvKernels) != "" || kernels.Tier() == "generic" {
		t.Skip("tier already pinned or generic")
	}
	for _, tier := range []string{"generic", "avx2", "neon"} {
		if tier == kernels.Tier() || (tier == "avx2" && runtime.GOARCH != "amd64") || (tier == "neon" && runtime.GOARCH != "arm64") {
			continue
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^(TestStreamExact|TestGolden)$", "-test.v")
		cmd.Env = append(os.Environ(), kernels.EnvKernels+"="+tier)
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "cannot run it") {
			continue
		}
		if err != nil || !strings.Contains(string(out), "kernel tier "+tier) {
			t.Fatalf("%s tier run: %v\n%s", tier, err, out)
		}
	}
}

// TestCodesOutOfRange: a bad code is refused naming its frame (counted
// over the whole stream) and codebook, and the stream is left as it was.
func TestCodesOutOfRange(t *testing.T) {
	d := tiny(t)
	codes, _ := goldenCodes(t)
	whole, err := d.Decode(codes)
	if err != nil {
		t.Fatal(err)
	}
	s := d.NewStream(4)
	out, err := s.Push(nil, codes[:3*16])
	if err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(codes[3*16 : 6*16])
	bad[16+5] = 64
	if _, err := s.Push(out, bad); err == nil || !strings.Contains(err.Error(), "frame 4 codebook 5: code 64 outside [0, 64)") {
		t.Fatalf("error %v, want frame 4 codebook 5", err)
	}
	bad[16+5] = -1
	if _, err := s.Push(out, bad); err == nil || !strings.Contains(err.Error(), "code -1") {
		t.Fatalf("error %v", err)
	}
	if _, err := s.Push(out, codes[3*16:3*16+7]); err == nil {
		t.Fatal("a partial frame was accepted")
	}
	out, err = s.Push(out, codes[3*16:])
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "after refused pushes", out, whole)
}

// TestStreamBytes: the size announced up front is what a stream holds.
func TestStreamBytes(t *testing.T) {
	d := tiny(t)
	for _, chunk := range []int{1, 5, 16} {
		s := d.NewStream(chunk)
		if got, want := s.Bytes(), d.StreamBytes(chunk); got != want {
			t.Errorf("chunk %d: stream holds %d bytes, StreamBytes says %d", chunk, got, want)
		}
		if d.StateBytes() >= s.Bytes() {
			t.Errorf("state %d bytes >= total %d", d.StateBytes(), s.Bytes())
		}
	}
	t.Logf("tiny: state %d bytes, stream (chunk 16) %d bytes, weights %d bytes", d.StateBytes(), d.StreamBytes(16), d.Bytes)
}

// TestFLOPsPerFrameReleased: at the released decoder's size the count
// matches the spec's analytic 4.96 GFLOP per frame (qwen3_tts_codec.md
// §6, which includes attention scores and norms: within 2 %).
func TestFLOPsPerFrameReleased(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 436 MiB codec (about 10-30 s)")
	}
	dir := filepath.Join(t.TempDir(), "codec")
	if err := synth.WriteCodec(dir, "0.6b", 1); err != nil {
		t.Fatal(err)
	}
	d, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := d.FLOPsPerFrame()
	if math.Abs(got/4.96e9-1) > 0.02 {
		t.Fatalf("FLOPs per frame %.4g, want 4.96e9 within 2%%", got)
	}
	t.Logf("%.4g FLOP per frame", got)
}

// TestLaterChunk: two frames while little audio is ahead of playback,
// half of what is ahead once it grows, at most MaxLaterChunk.
func TestLaterChunk(t *testing.T) {
	d := tiny(t)
	if f := d.FrameDuration(); f != 80*time.Millisecond {
		t.Fatalf("frame duration %v, want 80ms", f)
	}
	for _, c := range []struct {
		decoded int
		since   time.Duration
		want    int
	}{
		{1, 0, MinLaterChunk},                        // 80 ms ahead
		{3, 80 * time.Millisecond, MinLaterChunk},    // 160 ms ahead: 1 frame
		{16, 640 * time.Millisecond, 4},              // 640 ms ahead
		{20, 1900 * time.Millisecond, MinLaterChunk}, // behind
		{100, time.Second, MaxLaterChunk},
	} {
		if got := d.LaterChunk(c.decoded, c.since); got != c.want {
			t.Errorf("LaterChunk(%d, %v) = %d, want %d", c.decoded, c.since, got, c.want)
		}
	}
}
