package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mewkiz/flac"
)

// TestInt16Rounding states the conversion rule: clamp to [-1, 1], scale
// by 32767, round to nearest with ties to even; NaN is 0.
func TestInt16Rounding(t *testing.T) {
	for _, c := range []struct {
		x    float32
		want int16
	}{
		{0, 0}, {1, 32767}, {-1, -32767}, {2, 32767}, {-7, -32767},
		{float32(math.Inf(1)), 32767}, {float32(math.Inf(-1)), -32767}, {float32(math.NaN()), 0},
		// A float32 times the odd 32767 is a half-integer only for
		// x = ±0.5, so ±16383.5 is the only tie (ties to even: ±16384).
		{0.5, 16384}, {-0.5, -16384},
		{0.49 / 32767, 0}, {0.51 / 32767, 1}, {-0.51 / 32767, -1},
		{-0.25, -8192},           // -8191.75
		{0.1, 3277},              // 3276.7
		{1.0 / 32767 * 100, 100}, // exact integers stay
	} {
		if got := Int16(c.x); got != c.want {
			t.Errorf("Int16(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}

func testSamples(n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = Int16(float32(0.7*math.Sin(float64(i)*0.01) + 0.2*math.Sin(float64(i)*0.37)))
	}
	if n > 4 {
		s[3], s[4] = 32767, -32767
	}
	return s
}

// readWAV checks a mono 16-bit WAV file chunk by chunk and returns its samples.
func readWAV(t *testing.T, b []byte) (samples []int16, rate int) {
	t.Helper()
	le := binary.LittleEndian
	if string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" || int(le.Uint32(b[4:])) != len(b)-8 {
		t.Fatalf("bad RIFF header: % x (file %d bytes)", b[:12], len(b))
	}
	if string(b[12:16]) != "fmt " || le.Uint32(b[16:]) != 16 || le.Uint16(b[20:]) != 1 || le.Uint16(b[22:]) != 1 ||
		le.Uint16(b[32:]) != 2 || le.Uint16(b[34:]) != 16 || le.Uint32(b[28:]) != 2*le.Uint32(b[24:]) {
		t.Fatalf("bad fmt chunk: % x", b[12:36])
	}
	if string(b[36:40]) != "data" || int(le.Uint32(b[40:])) != len(b)-44 {
		t.Fatalf("bad data chunk: % x", b[36:44])
	}
	samples = make([]int16, (len(b)-44)/2)
	binary.Read(bytes.NewReader(b[44:]), binary.LittleEndian, samples)
	return samples, int(le.Uint32(b[24:]))
}

func TestWAVAndPCM(t *testing.T) {
	in := testSamples(3*1920 + 7)
	var buf bytes.Buffer
	if err := WriteWAV(&buf, in, 24000); err != nil {
		t.Fatal(err)
	}
	got, rate := readWAV(t, buf.Bytes())
	if rate != 24000 || !slices.Equal(got, in) {
		t.Fatalf("rate %d, samples equal %v", rate, slices.Equal(got, in))
	}
	var pcm bytes.Buffer
	if err := WritePCM(&pcm, in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pcm.Bytes(), buf.Bytes()[44:]) {
		t.Fatal("raw PCM differs from the WAV data chunk")
	}
	// Python's wave module, a standard reader, when it is installed.
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Log("python3 not found: standard-reader check skipped")
		return
	}
	path := filepath.Join(t.TempDir(), "a.wav")
	os.WriteFile(path, buf.Bytes(), 0o644)
	out, err := exec.Command(py, "-c", `import sys, wave
w = wave.open(sys.argv[1])
print(w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes())`, path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1 2 24000 5767" {
		t.Fatalf("python wave: %v %s", err, out)
	}
}

// DecodeFLAC reads a mono 16-bit FLAC stream with mewkiz/flac's decoder.
func decodeFLAC(t *testing.T, r io.Reader) []int16 {
	t.Helper()
	// The decoder logs a request for test files at every 24 kHz frame.
	log.SetOutput(io.Discard)
	defer log.SetOutput(os.Stderr)
	s, err := flac.New(r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Info.NChannels != 1 || s.Info.BitsPerSample != 16 || s.Info.SampleRate != 24000 {
		t.Fatalf("stream info %+v", s.Info)
	}
	var out []int16
	for {
		f, err := s.ParseNext()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range f.Subframes[0].Samples {
			out = append(out, int16(v))
		}
	}
	if int(s.Info.NSamples) != len(out) {
		t.Fatalf("STREAMINFO says %d samples, decoded %d", s.Info.NSamples, len(out))
	}
	return out
}

func TestFLACRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 1920, 4096, 3*4096 + 100, 40 * 1920} {
		in := testSamples(n)
		var buf bytes.Buffer
		if err := WriteFLAC(&buf, in, 24000); err != nil {
			t.Fatal(err)
		}
		if got := decodeFLAC(t, &buf); !slices.Equal(got, in) && !(len(got) == 0 && n == 0) {
			t.Fatalf("%d samples: FLAC round trip differs", n)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, name := range []string{"wav", "PCM", "flac"} {
		if _, err := ParseFormat(name); err != nil {
			t.Error(err)
		}
	}
	for name, want := range map[string]string{"mp3": "MP3 output is not supported", "opus": "no pure-Go OPUS encoder", "aiff": "unknown audio format"} {
		if _, err := ParseFormat(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
