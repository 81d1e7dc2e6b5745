package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mewkiz/flac"

	"github.com/siskin-ml/siskin/audio"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
)

// writeCodes writes frames of codes as a --codes-in file.
func writeCodes(t *testing.T, path string, frames [][]int32) {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"codes": [`)
	for i, f := range frames {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.ReplaceAll(fmt.Sprint(f), " ", ","))
	}
	b.WriteString("]}")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// randomCodes returns n frames of 16 codes below size.
func randomCodes(n, size int) [][]int32 {
	out := make([][]int32, n)
	x := uint32(12345)
	for i := range out {
		out[i] = make([]int32, 16)
		for q := range out[i] {
			x = x*1664525 + 1013904223
			out[i][q] = int32(x>>8) % int32(size)
		}
	}
	return out
}

// readWAVFile checks a mono 16-bit 24 kHz WAV's chunk sizes against the
// file and returns its samples.
func readWAVFile(t *testing.T, path string) []int16 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if len(b) < 44 || string(b[:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " || string(b[36:40]) != "data" {
		t.Fatalf("%s: not a canonical WAV header", path)
	}
	if int(le.Uint32(b[4:])) != len(b)-8 || int(le.Uint32(b[40:])) != len(b)-44 {
		t.Fatalf("%s: RIFF size %d / data size %d for a %d-byte file", path, le.Uint32(b[4:]), le.Uint32(b[40:]), len(b))
	}
	if le.Uint16(b[20:]) != 1 || le.Uint16(b[22:]) != 1 || le.Uint32(b[24:]) != 24000 || le.Uint16(b[34:]) != 16 {
		t.Fatalf("%s: fmt chunk % x", path, b[20:36])
	}
	s := make([]int16, (len(b)-44)/2)
	binary.Read(bytes.NewReader(b[44:]), le, s)
	return s
}

func readFLACFile(t *testing.T, path string) []int16 {
	t.Helper()
	log.SetOutput(io.Discard) // the decoder asks for 24 kHz test files on every frame
	defer log.SetOutput(os.Stderr)
	s, err := flac.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []int16
	for {
		f, err := s.ParseNext()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range f.Subframes[0].Samples {
			out = append(out, int16(v))
		}
	}
}

// checkSpeak runs speak --codes-in on model (with extra flags) and checks
// the WAV and FLAC it writes hold exactly the int16 of an offline decode.
func checkSpeak(t *testing.T, model string, codecDir string, frames [][]int32, extra ...string) {
	t.Helper()
	dir := t.TempDir()
	codesPath := filepath.Join(dir, "codes.json")
	writeCodes(t, codesPath, frames)
	dec, err := codec.Load(codecDir)
	if err != nil {
		t.Fatal(err)
	}
	wav, err := dec.Decode(slices.Concat(frames...))
	if err != nil {
		t.Fatal(err)
	}
	want := audio.ToInt16(nil, wav)
	wavPath, flacPath := filepath.Join(dir, "out.wav"), filepath.Join(dir, "out.flac")
	for _, p := range []string{wavPath, flacPath} {
		if out, err := siskin(t, append([]string{"speak", "-m", model, "--codes-in", codesPath, "-o", p}, extra...)...); err != nil {
			t.Fatalf("speak -o %s: %v\n%s", p, err, out)
		}
	}
	got := readWAVFile(t, wavPath)
	if len(got) != len(frames)*1920 || !slices.Equal(got, want) {
		t.Fatalf("WAV: %d samples (want %d), equal to the offline decode: %v", len(got), len(frames)*1920, slices.Equal(got, want))
	}
	if got := readFLACFile(t, flacPath); !slices.Equal(got, want) {
		t.Fatalf("FLAC decodes to %d samples, not the WAV's int16", len(got))
	}
}

// TestSpeakCodesInCodecOnly: -m may be the codec folder alone.
func TestSpeakCodesInCodecOnly(t *testing.T) {
	dir := testdata.Path(t, "tts", "codec", "tiny")
	checkSpeak(t, dir, dir, randomCodes(30, 64))
}

// TestSpeakErrors: bad inputs are refused naming the file and what is
// wrong, and no output file appears.
func TestSpeakErrors(t *testing.T) {
	model := testdata.Path(t, "tts", "codec", "tiny")
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	writeCodes(t, good, randomCodes(2, 64))
	frames := randomCodes(3, 64)
	frames[2][7] = 64
	writeCodes(t, bad, frames)
	out := filepath.Join(dir, "out.wav")
	trunc := filepath.Join(dir, "trunc")
	os.Mkdir(trunc, 0o755)
	cfg, _ := os.ReadFile(filepath.Join(model, "config.json"))
	w, _ := os.ReadFile(filepath.Join(model, "model.safetensors"))
	os.WriteFile(filepath.Join(trunc, "config.json"), cfg, 0o644)
	os.WriteFile(filepath.Join(trunc, "model.safetensors"), w[:len(w)-100], 0o644)
	nokey := filepath.Join(dir, "nokey")
	os.Mkdir(nokey, 0o755)
	os.WriteFile(filepath.Join(nokey, "config.json"), bytes.Replace(cfg, []byte(`"num_quantizers"`), []byte(`"nq"`), 1), 0o644)
	os.WriteFile(filepath.Join(nokey, "model.safetensors"), w, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--codes-in", bad, "-m", model, "-o", out}, "bad.json: codes[2]: frame 2 codebook 7: code 64 outside [0, 64)"},
		{[]string{"--codes-in", good, "-m", trunc, "-o", out}, "model.safetensors"},
		{[]string{"--codes-in", good, "-m", nokey, "-o", out}, `missing key "num_quantizers"`},
		{[]string{"--codes-in", good, "-m", model, "-o", filepath.Join(dir, "x.mp3")}, "MP3 output is not supported"},
		{[]string{"--codes-in", good, "-m", model, "-o", out, "--format", "opus"}, "OPUS output is not supported"},
		{[]string{"--codes-in", good, "-m", model}, "-o FILE is required"},
		{[]string{"--codes-in", filepath.Join(dir, "none.json"), "-m", model, "-o", out}, "none.json"},
		{[]string{"-m", model, "-o", out}, "--codes-in"},
	} {
		msg, err := siskin(t, append([]string{"speak"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("speak %v: error %v (output %q), want %q", c.args, err, msg, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed speak left an output file")
	}
}

// TestSpeakSynthFolder: end to end on a `siskin synth --arch qwen3_tts
// --shape tiny` folder, whose codec is found at DIR/speech_tokenizer/:
// the WAV holds frames x 1920 samples equal to the int16 of an offline
// decode, and the FLAC decodes to the same int16.
func TestSpeakSynthFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tts")
	if out, err := siskin(t, "synth", "--arch", "qwen3_tts", "--shape", "tiny", "-o", dir, "--progress", "off"); err != nil {
		t.Fatalf("synth: %v\n%s", err, out)
	}
	checkSpeak(t, dir, filepath.Join(dir, "speech_tokenizer"), randomCodes(27, 2048))
	// --codec points elsewhere: the shared tiny codec (codebooks of 64).
	other := testdata.Path(t, "tts", "codec", "tiny")
	checkSpeak(t, dir, other, randomCodes(3, 64), "--codec", other)
	if _, err := siskin(t, "synth", "--arch", "qwen3_tts", "--shape", "3b", "-o", dir); err == nil || !strings.Contains(err.Error(), `no shape "3b"`) {
		t.Errorf("unknown shape: %v", err)
	}
}

func TestFrameCodes(t *testing.T) {
	if got := frameCodes([][]int{{1, 2}, {3, 4}}); !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Fatal(got)
	}
}
