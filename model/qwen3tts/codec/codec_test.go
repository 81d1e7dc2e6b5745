package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

var (
	tinyOnce sync.Once
	tinyDec  *Decoder
	tinyErr  error
)

// tiny loads the shared tiny codec checkpoint once.
func tiny(t testing.TB) *Decoder {
	t.Helper()
	dir := tinyDir(t)
	tinyOnce.Do(func() { tinyDec, tinyErr = Load(dir) })
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyDec
}

func tinyDir(t testing.TB) string { return testdata.Path(t, "tts", "codec", "tiny") }

type goldenFile struct {
	File  string `json:"file"`
	Shape []int  `json:"shape"`
}

func readF32(t testing.TB, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// goldenCodes returns the golden's codes frame-major (the file is
// codebook-major [16][40]).
func goldenCodes(t testing.TB) (codes []int32, frames int) {
	t.Helper()
	b, err := os.ReadFile(testdata.Path(t, "tts", "codec", "golden", "codes.i32"))
	if err != nil {
		t.Fatal(err)
	}
	cm := make([]int32, len(b)/4)
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, cm); err != nil {
		t.Fatal(err)
	}
	frames = len(cm) / 16
	codes = make([]int32, len(cm))
	for q := range 16 {
		for f := range frames {
			codes[f*16+q] = cm[q*frames+f]
		}
	}
	return codes, frames
}

func maxAbs(v []float32) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	return m
}

// TestGolden compares every stage of a whole decode with the float64
// reference: intermediates within 5e-5 x their max |golden| (float32
// accumulation over up to ~600-term sums), the waveform before and after
// the clamp within 1e-4 absolute (the official float32 run is 7.5e-5 off).
func TestGolden(t *testing.T) {
	d := tiny(t)
	codes, frames := goldenCodes(t)
	dir := testdata.Path(t, "tts", "codec", "golden")
	var manifest struct {
		Files map[string]goldenFile `json:"files"`
	}
	mb, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mb, &manifest); err != nil {
		t.Fatal(err)
	}
	got := map[string][]float32{}
	cols := map[string]int{}
	s := d.NewStream(DefaultChunk)
	s.tap = func(stage string, rows []float32, c int) {
		got[stage] = append(got[stage], rows...)
		cols[stage] = c
	}
	wav, err := s.Push(nil, codes)
	if err != nil {
		t.Fatal(err)
	}
	if len(wav) != frames*1920 {
		t.Fatalf("%d samples, want %d", len(wav), frames*1920)
	}
	got["wav"] = wav
	cols["wav"] = 1
	stages := []string{"rvq_latent", "pre_conv", "transformer", "upsample0", "upsample1", "decoder0", "block1", "block2", "block3", "block4", "wav_preclamp", "wav"}
	for _, name := range stages {
		gf := manifest.Files[name]
		want := readF32(t, filepath.Join(dir, gf.File))
		g := got[name]
		if len(g) != len(want) {
			t.Fatalf("%s: %d values, want %d", name, len(g), len(want))
		}
		c := cols[name]
		timeMajor := name == "transformer" || c == 1
		tol := 5e-5 * maxAbs(want)
		if name == "wav" || name == "wav_preclamp" {
			tol = 1e-4
		}
		worst := 0.0
		rows := len(g) / c
		for r := range rows {
			for ch := range c {
				w := want[ch*rows+r]
				if timeMajor {
					w = want[r*c+ch]
				}
				worst = max(worst, math.Abs(float64(g[r*c+ch])-float64(w)))
			}
		}
		t.Logf("%-12s max |diff| %.3g (tolerance %.3g)", name, worst, tol)
		if worst > tol {
			t.Errorf("%s: max |diff| %g > %g", name, worst, tol)
		}
	}
}
