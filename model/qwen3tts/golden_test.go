package qwen3tts

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// Tolerances from the goldens' README (float32 compute with the bf16
// weights upcast, against a float64 reference that agrees with the
// official model to <= 8.9e-6 on logits): embeddings, residuals and
// hidden states 1e-5 max abs, logits and scores 1e-4, codes exact.
const (
	tolHidden = 1e-5
	tolLogits = 1e-4
)

func ckptDir(t testing.TB) string {
	return testdata.Path(t, "tts", "talker", "ckpt", "tiny-cv-eq-bf16")
}

func goldenDir(t testing.TB) string {
	return testdata.Path(t, "tts", "talker", "golden", "tiny-cv-eq")
}

func openModel(t testing.TB, dir string) *Model {
	t.Helper()
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

type manifest struct {
	Request struct {
		InputIDs     []int  `json:"input_ids"`
		Speaker      string `json:"speaker"`
		Language     string `json:"language"`
		NonStreaming bool   `json:"non_streaming_mode"`
	} `json:"request"`
	Sampling struct {
		RepetitionPenalty float64 `json:"repetition_penalty"`
	} `json:"sampling"`
	Prefill struct {
		Text  []int `json:"text_track"`
		Codec []int `json:"codec_track"`
	} `json:"prefill"`
	Trailing []int   `json:"trailing_text_ids"`
	Code0    []int   `json:"code0_per_step"`
	Codes    [][]int `json:"codes"`
	NFrames  int     `json:"n_frames"`
	Input    struct {
		Code0 int `json:"code0"`
	} `json:"input"`
	CPCodes []int `json:"codes_1_to_15"`
	Arrays  map[string]struct {
		File  string `json:"file"`
		Shape []int  `json:"shape"`
	} `json:"arrays"`
}

type golden struct {
	dir string
	m   manifest
}

func loadGolden(t testing.TB, name string) *golden {
	t.Helper()
	dir := filepath.Join(goldenDir(t), name)
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	g := &golden{dir: dir}
	if err := json.Unmarshal(raw, &g.m); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return g
}

// array reads a raw little-endian float32 array.
func (g *golden) array(t testing.TB, name string) []float32 {
	t.Helper()
	a, ok := g.m.Arrays[name]
	if !ok {
		t.Fatalf("%s: no array %s", g.dir, name)
	}
	raw, err := os.ReadFile(filepath.Join(g.dir, a.File))
	if err != nil {
		t.Fatal(err)
	}
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	if len(raw) != 4*n {
		t.Fatalf("%s: %d bytes for shape %v", a.File, len(raw), a.Shape)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func cvCases(t testing.TB) []string {
	ents, err := os.ReadDir(goldenDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "cv_") {
			out = append(out, e.Name())
		}
	}
	if len(out) != 7 {
		t.Fatalf("%d cv_* cases in %s, want 7", len(out), goldenDir(t))
	}
	return out
}

// greedyRequest is a golden case's request: greedy talker and predictor.
func (g *golden) request(m *Model) *Request {
	r := m.Cfg.NewRequest(g.m.Request.InputIDs, Voice{Speaker: g.m.Request.Speaker, Language: g.m.Request.Language, NonStreaming: g.m.Request.NonStreaming})
	r.Talker.Greedy, r.Predictor.Greedy = true, true
	r.RepetitionPenalty = g.m.Sampling.RepetitionPenalty
	r.MaxFrames = g.m.NFrames
	r.Trace = &Trace{}
	return r
}

func concat(rows [][]float32) []float32 { return slices.Concat(rows...) }

// near fails when got and want differ by more than tol anywhere; -Inf
// must be matched by -Inf.
func near(t testing.TB, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want))
		return
	}
	worst, at := 0.0, -1
	for i := range got {
		gi, wi := math.IsInf(float64(got[i]), -1), math.IsInf(float64(want[i]), -1)
		if gi || wi {
			if gi != wi {
				t.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
				return
			}
			continue
		}
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= worst) {
			worst, at = d, i
		}
	}
	t.Logf("%s: max abs diff %.2g (tolerance %g)", what, worst, tol)
	if worst > tol {
		t.Errorf("%s: max abs diff %.3g at %d (got %v, want %v), tolerance %g", what, worst, at, got[at], want[at], tol)
	}
}

func checkCase(t *testing.T, m *Model, g *golden, res *Result, tr *Trace) {
	t.Helper()
	if !slices.Equal(tr.Prompt.Text, g.m.Prefill.Text) || !slices.Equal(tr.Prompt.Codec, g.m.Prefill.Codec) {
		t.Errorf("prompt tracks\ntext  %v\ncodec %v\nwant\ntext  %v\ncodec %v", tr.Prompt.Text, tr.Prompt.Codec, g.m.Prefill.Text, g.m.Prefill.Codec)
	}
	if !slices.Equal(tr.Prompt.Trailing, g.m.Trailing) {
		t.Errorf("trailing text ids %v, want %v", tr.Prompt.Trailing, g.m.Trailing)
	}
	near(t, "prefill_embeds", tr.PrefillEmbeds, g.array(t, "prefill_embeds"), tolHidden)
	near(t, "prefill_residual", concat(tr.PrefillResidual), g.array(t, "prefill_residual"), tolHidden)
	near(t, "prefill_final_hidden", tr.PrefillHidden, g.array(t, "prefill_final_hidden"), tolHidden)
	near(t, "trailing_text_embeds", tr.Trailing, g.array(t, "trailing_text_embeds"), tolHidden)
	special, err := m.TextRows([]int{m.Cfg.TTSBOS, m.Cfg.TTSEOS, m.Cfg.TTSPad})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "tts_special_embeds", special, g.array(t, "tts_special_embeds"), tolHidden)
	near(t, "talker_logits", concat(tr.TalkerLogits), g.array(t, "talker_logits"), tolLogits)
	near(t, "talker_scores", concat(tr.TalkerScores), g.array(t, "talker_scores"), tolLogits)
	near(t, "talker_hidden", concat(tr.TalkerHidden), g.array(t, "talker_hidden"), tolHidden)
	near(t, "cp_inputs", concat(tr.CPInputs), g.array(t, "cp_inputs"), tolHidden)
	near(t, "cp_logits", concat(tr.CPLogits), g.array(t, "cp_logits"), tolLogits)
	near(t, "cp_hidden", concat(tr.CPHidden), g.array(t, "cp_hidden"), tolHidden)
	near(t, "next_inputs", concat(tr.NextInputs), g.array(t, "next_inputs"), tolHidden)
	if !slices.Equal(tr.Code0, g.m.Code0) {
		t.Errorf("code0 per step %v, want %v", tr.Code0, g.m.Code0)
	}
	if !slices.EqualFunc(res.Codes, g.m.Codes, slices.Equal) {
		t.Errorf("codes\n%v\nwant\n%v", res.Codes, g.m.Codes)
	}
	if res.Stop != "max_frames" {
		t.Errorf("stop %q, want max_frames", res.Stop)
	}
}

// Every CustomVoice case alone, KV caches on (the reference had none).
func TestGoldenCases(t *testing.T) {
	m := openModel(t, ckptDir(t))
	for _, name := range cvCases(t) {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			r := g.request(m)
			res, err := m.Generate([]*Request{r})
			if err != nil {
				t.Fatal(err)
			}
			checkCase(t, m, g, res[0], r.Trace)
		})
	}
}

// The code predictor alone: given h and code0, 15 greedy sub-steps.
func TestGoldenPredictorOnly(t *testing.T) {
	m := openModel(t, ckptDir(t))
	for _, name := range []string{"cp_only_code0_0", "cp_only_code0_1234"} {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			s := m.predictorStream(t, g.array(t, "talker_hidden"), g.m.Input.Code0)
			sums, err := m.predictFrames(m.pred, []*stream{s})
			if err != nil {
				t.Fatal(err)
			}
			tr := s.req.Trace
			near(t, "cp_inputs", tr.CPInputs[0], g.array(t, "cp_inputs"), tolHidden)
			near(t, "cp_logits", tr.CPLogits[0], g.array(t, "cp_logits"), tolLogits)
			near(t, "cp_hidden", tr.CPHidden[0], g.array(t, "cp_hidden"), tolHidden)
			near(t, "frame_codec_embedding", sums[0], g.array(t, "frame_codec_embedding"), tolHidden)
			want := append([]int{g.m.Input.Code0}, g.m.CPCodes...)
			if !slices.Equal(s.codes[0], want) {
				t.Errorf("codes %v, want %v", s.codes[0], want)
			}
		})
	}
}

// predictorStream is a stream ready for a greedy predictor pass.
func (m *Model) predictorStream(t testing.TB, h []float32, code0 int) *stream {
	t.Helper()
	r := &Request{Predictor: Sampling{Greedy: true}, Trace: &Trace{}}
	seq, err := newSequence(r.Predictor, 0, true, "subtalker")
	if err != nil {
		t.Fatal(err)
	}
	return &stream{req: r, predKV: m.NewPredictorCache(), predSeq: seq, h: h, code0: code0}
}

// All seven CustomVoice cases in one batch: every value bit-identical to
// the case run alone (so the goldens hold batched too).
func TestGoldenBatched(t *testing.T) {
	m := openModel(t, ckptDir(t))
	names := cvCases(t)
	var batch []*Request
	for _, name := range names {
		batch = append(batch, loadGolden(t, name).request(m))
	}
	got, err := m.Generate(batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		g := loadGolden(t, name)
		r := g.request(m)
		alone, err := m.Generate([]*Request{r})
		if err != nil {
			t.Fatal(err)
		}
		a, b := r.Trace, batch[i].Trace
		for _, p := range []struct {
			what string
			x, y []float32
		}{
			{"prefill residual", concat(a.PrefillResidual), concat(b.PrefillResidual)},
			{"talker logits", concat(a.TalkerLogits), concat(b.TalkerLogits)},
			{"talker hidden", concat(a.TalkerHidden), concat(b.TalkerHidden)},
			{"predictor logits", concat(a.CPLogits), concat(b.CPLogits)},
			{"next inputs", concat(a.NextInputs), concat(b.NextInputs)},
		} {
			if !bitEqual(p.x, p.y) {
				t.Errorf("%s: %s batched differs from alone", name, p.what)
			}
		}
		if !slices.EqualFunc(alone[0].Codes, got[i].Codes, slices.Equal) {
			t.Errorf("%s: codes batched %v, alone %v", name, got[i].Codes, alone[0].Codes)
		}
		checkCase(t, m, g, got[i], b)
	}
}

func bitEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}
