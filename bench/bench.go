// Package bench measures a model's prompt processing and generation speed
// the way llama-bench does, together with the machine's memory read
// bandwidth, so that generation can be reported as a share of the speed
// the bandwidth allows (decoding reads every weight once per token).
package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/quantize"
	"github.com/siskin-ml/siskin/tensor"
)

// Options controls Run.
type Options struct {
	Prompts []int // ppN tests (0 or empty: none)
	Gens    []int // tgN tests
	// Depths are context lengths each test runs after (llama-bench's
	// -d): the cache is filled with that many tokens first, untimed.
	// Empty means 0 only.
	Depths  []int
	Threads int
	Reps    int
	// Bandwidth probe: buffer size and timed passes (<= 0: defaults of
	// 1 GiB and 5 passes); BandwidthBytes < 0 skips the probe.
	BandwidthBytes int64
	BandwidthRuns  int
	Seed           uint64
	// Profile, if set, is called before a test's timed repetitions (not
	// its warm-up or the context fill) and the function it returns after
	// them: siskin bench --cpuprofile writes a CPU profile per test.
	Profile func(test string) (stop func() error, err error)
}

// timed runs a test's repetitions under opt.Profile.
func (opt *Options) timed(test string, reps func() error) error {
	if opt.Profile == nil {
		return reps()
	}
	stop, err := opt.Profile(test)
	if err != nil {
		return err
	}
	err = reps()
	if serr := stop(); err == nil {
		err = serr
	}
	return err
}

// repeat runs opt.Reps repetitions of a test at each of n depths (rep(i)
// runs one at depth i, whose result is rs[i]). They take the depths in
// turn, so a shared machine's changing load falls on every depth alike
// and their ratio (-d 0,2048) holds steadier; a CPU profile needs a
// test's repetitions in one span, so with one they run depth by depth.
func (opt *Options) repeat(n int, rs []*Result, rep func(i int) error) error {
	if opt.Profile == nil {
		for range opt.Reps {
			for i := range n {
				if err := rep(i); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i := range n {
		err := opt.timed(rs[i].Test, func() error {
			for range opt.Reps {
				if err := rep(i); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ModelInfo describes the model under test.
type ModelInfo struct {
	Path        string `json:"model_filename"`
	Desc        string `json:"model_type"` // "spark2_5 1.7B Q4_K_M"
	FileBytes   int64  `json:"model_size"`
	Params      int64  `json:"model_n_params"`
	WeightBytes int64  `json:"weight_bytes"` // read per generated token
	// The KV cache's element type, as llama-bench's type_k and type_v.
	TypeK string `json:"type_k"`
	TypeV string `json:"type_v"`
}

// Result is one test, as one object of siskin bench --json.
type Result struct {
	ModelInfo
	Test           string    `json:"test"` // pp512, tg128, tg128 @ d2048
	NPrompt        int       `json:"n_prompt"`
	NDepth         int       `json:"n_depth"`
	NGen           int       `json:"n_gen"`
	Threads        int       `json:"threads"`
	Reps           int       `json:"repetitions"`
	SamplesTS      []float64 `json:"samples_ts"`
	SamplesNS      []int64   `json:"samples_ns"`
	TPSMedian      float64   `json:"tokens_per_second_median"`
	TPSMin         float64   `json:"tokens_per_second_min"`
	TPSMax         float64   `json:"tokens_per_second_max"`
	BandwidthGBs   float64   `json:"bandwidth_gbs"`
	BandwidthMin   float64   `json:"bandwidth_gbs_min"`
	BandwidthMax   float64   `json:"bandwidth_gbs_max"`
	BandwidthBytes int64     `json:"bandwidth_buffer_bytes"`
	// Generation only: bandwidth / weight bytes, and the median's share
	// of it.
	CeilingTPS   *float64 `json:"ceiling_tokens_per_second,omitempty"`
	CeilingShare *float64 `json:"ceiling_share,omitempty"`
}

// Describe reads what the report says about a loaded model.
func Describe(path string, lm *load.Loaded) ModelInfo {
	kvType := lm.Model.Config().KVType.String()
	info := ModelInfo{Path: path, WeightBytes: lm.Model.WeightBytes(), TypeK: kvType, TypeV: kvType}
	src := lm.Source
	var tensorBytes int64
	counts := map[tensor.Type]int64{}
	if src.GGUF != nil {
		info.FileBytes = int64(src.GGUF.FileBytes())
		for _, t := range src.GGUF.Tensors {
			info.Params += int64(t.Elements())
			counts[t.Type] += int64(len(t.Data))
			tensorBytes += int64(len(t.Data))
		}
	} else {
		for _, name := range src.HF.Names() {
			t, _ := src.HF.Tensor(name)
			info.Params += int64(t.Elements())
			counts[t.Type] += int64(len(t.Data))
			tensorBytes += int64(len(t.Data))
		}
		info.FileBytes = tensorBytes
	}
	typ := ""
	if src.GGUF != nil {
		if id, ok := src.GGUF.Uint("general.file_type"); ok {
			for _, ft := range quantize.FileTypes {
				if uint64(ft.ID) == id {
					typ = strings.ToUpper(ft.Name)
				}
			}
		}
	}
	if typ == "" { // the type holding most bytes
		var best int64
		for t, b := range counts {
			if b > best {
				best, typ = b, t.String()
			}
		}
	}
	info.Desc = fmt.Sprintf("%s %s %s", lm.Model.Config().Arch, paramsLabel(info.Params), typ)
	if ws := lm.Weights; ws != nil && ws.Path() != "gguf" {
		// Converted weights: name the path the kernels run.
		info.Desc += " as " + string(ws.Path())
	}
	return info
}

// paramsLabel renders 1707657216 as 1.7B, 6.6M as 6.6M.
func paramsLabel(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e8:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1fK", float64(n)/1e3)
}

// Run measures the model: the bandwidth probe first, then each ppN test
// (an N-token prompt as one batch into an empty cache) and each tgN test
// (N tokens one at a time from an empty cache), for every depth (the
// cache first holding that many tokens), each after one untimed
// warm-up (the prompt once; one token for generation, as llama-bench does)
// and repeated opt.Reps times, the depths in turn (Options.repeat).
// Tokens are random ids, as in llama-bench. Every depth's context is held
// at once.
func Run(m model.Model, info ModelInfo, opt Options) ([]Result, error) {
	if opt.Threads <= 0 {
		opt.Threads = runtime.GOMAXPROCS(0)
	}
	if opt.Reps <= 0 {
		opt.Reps = 3
	}
	if runtime.GOMAXPROCS(0) < opt.Threads {
		runtime.GOMAXPROCS(opt.Threads)
	}
	kernels.SetThreads(opt.Threads)
	defer kernels.SetThreads(0)

	var bw Bandwidth
	if opt.BandwidthBytes >= 0 {
		size, runs := opt.BandwidthBytes, opt.BandwidthRuns
		if size == 0 {
			size = 1 << 30
		}
		if runs <= 0 {
			runs = 5
		}
		var err error
		if bw, err = MeasureBandwidth(size, opt.Threads, runs); err != nil {
			return nil, err
		}
		runtime.GC() // give the probe's buffer back before the model runs
	}

	vocab := m.Config().Vocab
	rng := rand.New(rand.NewPCG(opt.Seed, 0x5eed))
	randomTokens := func(n int) []int {
		t := make([]int, n)
		for i := range t {
			t[i] = rng.IntN(vocab)
		}
		return t
	}
	newResult := func(test string, np, ng int) Result {
		return Result{ModelInfo: info, Test: test, NPrompt: np, NGen: ng, Threads: opt.Threads, Reps: opt.Reps,
			BandwidthGBs: bw.Median, BandwidthMin: bw.Min, BandwidthMax: bw.Max, BandwidthBytes: bw.Bytes}
	}
	depths := opt.Depths
	if len(depths) == 0 {
		depths = []int{0}
	}
	for _, d := range depths {
		if d < 0 {
			return nil, fmt.Errorf("depth %d < 0", d)
		}
	}
	// Each depth's context is filled once (in chunks, so activations stay
	// small) and every run starts from a copy of it.
	bases := make([]*kv.Cache, len(depths))
	for i, d := range depths {
		bases[i] = m.NewCache()
		for done := 0; done < d; {
			n := min(512, d-done)
			if _, err := m.Forward(bases[i], randomTokens(n), false); err != nil {
				return nil, fmt.Errorf("filling %d tokens of context: %w", d, err)
			}
			done += n
		}
	}
	var tests []benchTest
	for _, n := range opt.Prompts {
		if n > 0 {
			tests = append(tests, benchTest{name: fmt.Sprintf("pp%d", n), prompt: n})
		}
	}
	for _, n := range opt.Gens {
		if n > 0 {
			tests = append(tests, benchTest{name: fmt.Sprintf("tg%d", n), gen: n})
		}
	}
	byDepth := make([][]Result, len(depths))
	for _, t := range tests {
		runs := make([]func(warmUp bool) (time.Duration, error), len(depths))
		rs := make([]*Result, len(depths))
		for i, d := range depths {
			byDepth[i] = append(byDepth[i], newResult(t.at(d), t.prompt, t.gen))
			rs[i] = &byDepth[i][len(byDepth[i])-1]
			rs[i].NDepth = d
			runs[i] = t.runner(m, bases[i], randomTokens(t.prompt+t.gen))
			if _, err := runs[i](true); err != nil {
				return nil, fmt.Errorf("%s: %w", rs[i].Test, err)
			}
		}
		rep := func(i int) error {
			dur, err := runs[i](false)
			if err != nil {
				return fmt.Errorf("%s: %w", rs[i].Test, err)
			}
			rs[i].addSample(t.prompt+t.gen, dur)
			return nil
		}
		if err := opt.repeat(len(depths), rs, rep); err != nil {
			return nil, err
		}
		for _, r := range rs {
			r.summarize()
			if t.gen > 0 && bw.Median > 0 && info.WeightBytes > 0 {
				ceiling := bw.Median * 1e9 / float64(info.WeightBytes)
				share := r.TPSMedian / ceiling
				r.CeilingTPS, r.CeilingShare = &ceiling, &share
			}
		}
	}
	var results []Result
	for _, rs := range byDepth {
		results = append(results, rs...)
	}
	return results, nil
}

// benchTest is a ppN (prompt N) or tgN (gen N) test.
type benchTest struct {
	name        string
	prompt, gen int
}

// at is the test's name at depth d.
func (t benchTest) at(d int) string {
	if d > 0 {
		return fmt.Sprintf("%s @ d%d", t.name, d)
	}
	return t.name
}

// runner returns a function that runs the test once from a copy of base
// on tokens and returns its time: the whole prompt as one batch, or the
// tokens one at a time; as a warm-up, the prompt or one token.
func (t benchTest) runner(m model.Model, base *kv.Cache, tokens []int) func(warmUp bool) (time.Duration, error) {
	return func(warmUp bool) (time.Duration, error) {
		c := base.Clone(len(tokens))
		start := time.Now()
		if t.prompt > 0 {
			_, err := m.Forward(c, tokens, false)
			return time.Since(start), err
		}
		run := tokens
		if warmUp {
			run = tokens[:1]
		}
		for _, tok := range run {
			if _, err := m.Forward(c, []int{tok}, false); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
}

func (r *Result) addSample(n int, d time.Duration) {
	r.SamplesNS = append(r.SamplesNS, d.Nanoseconds())
	r.SamplesTS = append(r.SamplesTS, float64(n)/d.Seconds())
}

func (r *Result) summarize() {
	s := append([]float64(nil), r.SamplesTS...)
	sort.Float64s(s)
	r.TPSMedian, r.TPSMin, r.TPSMax = median(s), s[0], s[len(s)-1]
}

// WriteJSON prints the results as a JSON array, one object per test.
func WriteJSON(w io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	return writeIndented(w, results)
}

// writeIndented prints v as indented JSON.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteTable prints a llama-bench style table: median tokens/s with the
// range over repetitions, and for generation the share of the read
// bandwidth ceiling.
func WriteTable(w io.Writer, results []Result) error {
	if len(results) == 0 {
		_, err := fmt.Fprintln(w, "no tests run (give -p or -n > 0)")
		return err
	}
	r0 := results[0]
	if r0.BandwidthGBs > 0 {
		fmt.Fprintf(w, "memory read bandwidth: %.1f GB/s median [%.1f-%.1f] (%d threads, read-only sum over %s)\n",
			r0.BandwidthGBs, r0.BandwidthMin, r0.BandwidthMax, r0.Threads, sizeLabel(r0.BandwidthBytes))
	}
	rows := [][]string{{"model", "size", "params", "threads", "kv", "test", "t/s median [min-max]", "tg share of read ceiling"}}
	for _, r := range results {
		share := ""
		if r.CeilingShare != nil {
			share = fmt.Sprintf("%.0f%% of %.2f t/s", *r.CeilingShare*100, *r.CeilingTPS)
		}
		rows = append(rows, []string{r.Desc, sizeLabel(r.FileBytes), paramsLabel(r.Params), fmt.Sprint(r.Threads), r.TypeK, r.Test,
			fmt.Sprintf("%.2f [%.2f-%.2f]", r.TPSMedian, r.TPSMin, r.TPSMax), share})
	}
	writeMarkdown(w, rows)
	_, err := fmt.Fprintf(w, "weights read per token: %s (%s)\n", sizeLabel(r0.WeightBytes), filepath.Base(r0.Path))
	return err
}

// writeMarkdown prints rows as a Markdown table, the first row as the
// header, the first column left-aligned and the others right-aligned (as
// llama-bench prints).
func writeMarkdown(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	line := func(row []string) {
		var b strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString("| " + c + pad + " ")
			} else {
				b.WriteString("| " + pad + c + " ")
			}
		}
		fmt.Fprintln(w, b.String()+"|")
	}
	line(rows[0])
	sep := make([]string, len(width))
	for i, n := range width {
		sep[i] = strings.Repeat("-", n)
		if i > 0 {
			sep[i] = sep[i][1:] + ":"
		}
	}
	line(sep)
	for _, row := range rows[1:] {
		line(row)
	}
}

func sizeLabel(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}
