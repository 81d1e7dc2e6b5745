// Package modeltest checks a model's forward pass against golden runs
// recorded by independent implementations (a float64 reference and
// llama.cpp): prompt logits as one batch and token by token, greedy
// continuations, and quantized runs within a stated tolerance.
package modeltest

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/sample"
)

// Step is one recorded greedy step.
type Step struct {
	Pos    int     `json:"pos"`
	ID     int     `json:"id"`
	Margin float64 `json:"margin"`
}

// Golden is one recorded run (X.json plus its float32 matrices).
type Golden struct {
	Name         string
	PromptIDs    []int  `json:"prompt_ids"`
	GeneratedIDs []int  `json:"generated_ids"`
	GenSteps     []Step `json:"gen_steps"`
	NVocab       int    `json:"n_vocab"`
	Files        map[string]struct {
		File  string `json:"file"`
		Shape []int  `json:"shape"`
	} `json:"files"`

	PromptLogits    [][]float32 // [n_prompt][vocab]
	SeqPromptLogits [][]float32 // llama.cpp only: prompt fed token by token
	GenLogits       [][]float32 // row t: logits generated_ids[t] was chosen from
}

// Load reads dir/name.json and the matrices it lists.
func Load(t testing.TB, dir, name string) *Golden {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatalf("golden %s: %v (set SISKIN_TESTDATA to the shared data folder)", name, err)
	}
	g := &Golden{Name: name}
	if err := json.Unmarshal(raw, g); err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	read := func(key string) [][]float32 {
		f, ok := g.Files[key]
		if !ok {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(dir, f.File))
		if err != nil {
			t.Fatalf("golden %s: %v", name, err)
		}
		rows, cols := f.Shape[0], f.Shape[1]
		if len(b) != 4*rows*cols {
			t.Fatalf("golden %s: %s has %d bytes, want %d", name, f.File, len(b), 4*rows*cols)
		}
		out := make([][]float32, rows)
		for r := range out {
			out[r] = make([]float32, cols)
			for c := range out[r] {
				out[r][c] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*(r*cols+c):]))
			}
		}
		return out
	}
	g.PromptLogits = read("prompt_logits")
	g.SeqPromptLogits = read("seq_prompt_logits")
	g.GenLogits = read("gen_logits")
	return g
}

// MaxAbs is the largest absolute difference.
func MaxAbs(a, b []float32) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// RMS is the root mean square difference.
func RMS(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}

func rows(flat []float32, cols int) [][]float32 {
	out := make([][]float32, len(flat)/cols)
	for i := range out {
		out[i] = flat[i*cols : (i+1)*cols]
	}
	return out
}

// PromptBatch runs the whole prompt as one batch and returns every row.
func PromptBatch(t testing.TB, m model.Model, ids []int) [][]float32 {
	t.Helper()
	logits, err := m.Forward(m.NewCache(), ids, true)
	if err != nil {
		t.Fatal(err)
	}
	return rows(logits, m.Config().Vocab)
}

// PromptSeq feeds the prompt one token at a time.
func PromptSeq(t testing.TB, m model.Model, ids []int) [][]float32 {
	t.Helper()
	c := m.NewCache()
	var out [][]float32
	for _, id := range ids {
		l, err := m.Forward(c, []int{id}, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// Greedy prefills the prompt, then decodes n tokens by argmax, returning
// the ids and the logits each was chosen from.
func Greedy(t testing.TB, m model.Model, prompt []int, n int) ([]int, [][]float32) {
	t.Helper()
	c := m.NewCache()
	logits, err := m.Forward(c, prompt, false)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	var rowsOut [][]float32
	for len(ids) < n {
		id := sample.Argmax(logits)
		ids = append(ids, id)
		rowsOut = append(rowsOut, logits)
		if len(ids) < n {
			if logits, err = m.Forward(c, []int{id}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids, rowsOut
}

func maxAbsRows(a, b [][]float32) (float64, int) {
	worst, at := 0.0, -1
	for i := range a {
		if d := MaxAbs(a[i], b[i]); d > worst || at < 0 {
			worst, at = d, i
		}
	}
	return worst, at
}

func rmsRows(a, b [][]float32) float64 {
	s, n := 0.0, 0
	for i := range a {
		r := RMS(a[i], b[i])
		s += r * r * float64(len(a[i]))
		n += len(a[i])
	}
	return math.Sqrt(s / float64(n))
}

// WithKV sets the element type of the caches m makes and returns m: the
// float32 goldens pin kv.F32 (a model read from a file defaults to f16),
// so their tolerances measure the arithmetic, not the cache's rounding.
func WithKV(m model.Model, t kv.Type) model.Model {
	m.Config().KVType = t
	return m
}

// CheckExact asserts that the prompt logits (one batch, and token by
// token) are within tol (max abs) of the golden, and that the greedy
// continuation reproduces every recorded token.
func CheckExact(t *testing.T, m model.Model, g *Golden, tol float64) {
	t.Helper()
	batch := PromptBatch(t, m, g.PromptIDs)
	if d, at := maxAbsRows(batch, g.PromptLogits); d > tol {
		t.Errorf("%s: batched prompt logits differ by %.3g at position %d (tolerance %g)", g.Name, d, at, tol)
	} else {
		t.Logf("%s: batched prompt logits max |d| = %.3g", g.Name, d)
	}
	seq := PromptSeq(t, m, g.PromptIDs)
	if d, at := maxAbsRows(seq, g.PromptLogits); d > tol {
		t.Errorf("%s: token-by-token prompt logits differ by %.3g at position %d (tolerance %g)", g.Name, d, at, tol)
	}
	ids, genLogits := Greedy(t, m, g.PromptIDs, len(g.GeneratedIDs))
	for i := range ids {
		if ids[i] != g.GeneratedIDs[i] {
			t.Errorf("%s: greedy token %d is %d, want %d (recorded margin %.3g)", g.Name, i, ids[i], g.GeneratedIDs[i], g.GenSteps[i].Margin)
			return
		}
	}
	if g.GenLogits != nil {
		if d, at := maxAbsRows(genLogits, g.GenLogits); d > tol {
			t.Errorf("%s: generation logits differ by %.3g at step %d (tolerance %g)", g.Name, d, at, tol)
		}
	}
}

// CheckQuantized compares a quantized model with llama.cpp's recording of
// the same file: prompt and generation logits within rmsTol (RMS), the
// batch and token-by-token prompt identical, and, teacher-forced on the
// recorded tokens, every token whose recorded margin exceeds minMargin.
func CheckQuantized(t *testing.T, m model.Model, g *Golden, rmsTol, minMargin float64) {
	t.Helper()
	batch := PromptBatch(t, m, g.PromptIDs)
	r := rmsRows(batch, g.PromptLogits)
	d, _ := maxAbsRows(batch, g.PromptLogits)
	t.Logf("%s: prompt logits RMS %.4f, max |d| %.4f vs llama.cpp", g.Name, r, d)
	if r > rmsTol {
		t.Errorf("%s: prompt logits RMS %.4f exceeds %g", g.Name, r, rmsTol)
	}
	// siskin's batch and token-by-token paths must agree exactly: every
	// matrix row is computed the same way whatever the batch size.
	seq := PromptSeq(t, m, g.PromptIDs)
	if d, at := maxAbsRows(batch, seq); d != 0 {
		t.Errorf("%s: batch and token-by-token prompt logits differ by %g at %d", g.Name, d, at)
	}

	c := m.NewCache()
	logits, err := m.Forward(c, g.PromptIDs, false)
	if err != nil {
		t.Fatal(err)
	}
	var gen [][]float32
	checked := 0
	for i, want := range g.GeneratedIDs {
		gen = append(gen, logits)
		if g.GenSteps[i].Margin > minMargin {
			checked++
			if got := sample.Argmax(logits); got != want {
				t.Errorf("%s: step %d chose %d, llama.cpp %d with margin %.3f", g.Name, i, got, want, g.GenSteps[i].Margin)
			}
		}
		if logits, err = m.Forward(c, []int{want}, false); err != nil {
			t.Fatal(err)
		}
	}
	gr := rmsRows(gen, g.GenLogits)
	t.Logf("%s: generation logits RMS %.4f; %d tokens with margin > %g checked", g.Name, gr, checked, minMargin)
	if gr > rmsTol {
		t.Errorf("%s: generation logits RMS %.4f exceeds %g", g.Name, gr, rmsTol)
	}
}

// BenchDecode measures one-token decode steps after a 64-token prompt and
// reports tokens/s.
func BenchDecode(b *testing.B, m model.Model) {
	prompt := make([]int, 64)
	for i := range prompt {
		prompt[i] = (3 + 7*i) % m.Config().Vocab
	}
	c := m.NewCache()
	if _, err := m.Forward(c, prompt, false); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c.Len() >= 1024 {
			b.StopTimer()
			c = m.NewCache()
			m.Forward(c, prompt, false)
			b.StartTimer()
		}
		if _, err := m.Forward(c, []int{5}, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// BenchPrefill measures a 64-token prompt as one batch and reports tokens/s.
func BenchPrefill(b *testing.B, m model.Model) {
	prompt := make([]int, 64)
	for i := range prompt {
		prompt[i] = (3 + 7*i) % m.Config().Vocab
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Forward(m.NewCache(), prompt, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "tok/s")
}

// CheckBatchInvariance runs three sequences of different lengths (one
// resumed from a cache) as one batched step and asserts every logit is
// bit-identical to running each sequence alone.
func CheckBatchInvariance(t *testing.T, m model.Model, ids []int) {
	t.Helper()
	if len(ids) < 40 {
		t.Fatalf("need at least 40 prompt ids, got %d", len(ids))
	}
	mk := func() []model.Seq {
		resumed := m.NewCache()
		if _, err := m.Forward(resumed, ids[:30], false); err != nil {
			t.Fatal(err)
		}
		return []model.Seq{
			{Cache: m.NewCache(), Tokens: ids[:7], AllLogits: true},
			{Cache: resumed, Tokens: ids[30:31]},
			{Cache: m.NewCache(), Tokens: ids[:40]},
		}
	}
	batched, err := m.ForwardBatch(mk())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range mk() {
		alone, err := m.ForwardBatch([]model.Seq{s})
		if err != nil {
			t.Fatal(err)
		}
		if d := MaxAbs(batched[i], alone[0]); d != 0 || len(batched[i]) != len(alone[0]) {
			t.Errorf("sequence %d: batched logits differ from running alone by %g", i, d)
		}
	}
}

// CheckStepAllocs runs decode steps of eight sequences and asserts that a
// step allocates less than a quarter of the bytes of its activations
// (the residual stream, a normed copy and the feed-forward's two
// products): the layer stack's and the output head's temporaries are
// reused from step to step, since fresh memory costs a page fault a page
// (see model.GetScratch).
func CheckStepAllocs(t *testing.T, m model.Model, ids []int) {
	t.Helper()
	seqs := make([]model.Seq, 8)
	for i := range seqs {
		c := m.NewCache()
		c.Limit(64) // allocated whole at the prompt: no growth in the steps
		if _, err := m.Forward(c, ids[:8+i], false); err != nil {
			t.Fatal(err)
		}
		seqs[i] = model.Seq{Cache: c, Tokens: ids[i : i+1]}
	}
	step := func() {
		out, err := m.ForwardBatch(seqs)
		if err != nil {
			t.Fatal(err)
		}
		model.RecycleLogits(out)
	}
	step()
	// The least of a few rounds: a sync.Pool keeps an item on the P that
	// put it, so a step whose goroutines land on other Ps may allocate a
	// few KiB afresh (as may one after a collection empties the pools);
	// that is not what this test asserts.
	const steps, rounds = 4, 5
	per := uint64(math.MaxUint64)
	for range rounds {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range steps {
			step()
		}
		runtime.ReadMemStats(&after)
		per = min(per, (after.TotalAlloc-before.TotalAlloc)/steps)
	}
	cfg := m.Config()
	act := uint64(8 * 4 * (2*cfg.Hidden + 2*cfg.FFN))
	if per > act/4 {
		t.Errorf("a decode step of 8 sequences allocated %d bytes, over a quarter of its %d bytes of activations", per, act)
		return
	}
	t.Logf("a decode step of 8 sequences allocated %d bytes (activations: %d)", per, act)
}
