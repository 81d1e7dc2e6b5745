package qwen3tts

import (
	"errors"
	"math"
	"slices"
	"sort"
	"testing"
)

// Sampling with the checkpoint's defaults (temperature 0.9, top-k 50 on
// both sides, repetition penalty 1.05): the same seed gives the same
// codes, alone or in a batch; another seed gives others.
func TestSeededSampling(t *testing.T) {
	m := openModel(t, ckptDir(t))
	g := loadGolden(t, "cv_ryan_english_stream")
	req := func(seed uint64) *Request {
		r := m.Cfg.NewRequest(g.m.Request.InputIDs, Voice{Speaker: "ryan", Language: "english"})
		r.MaxFrames, r.Seed, r.Seeded = 6, seed, true
		return r
	}
	if r := req(1); r.Talker.Greedy || r.Talker.Temperature != 0.9 || r.Talker.TopK != 50 || r.Predictor.TopK != 50 || r.RepetitionPenalty != 1.05 {
		t.Fatalf("defaults from generation_config.json: %+v", r)
	}
	gen := func(rs ...*Request) []*Result {
		res, err := m.Generate(rs)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := gen(req(7))[0], gen(req(7))[0]
	if !slices.EqualFunc(a.Codes, b.Codes, slices.Equal) || len(a.Codes) == 0 {
		t.Fatalf("seed 7 twice: %v and %v", a.Codes, b.Codes)
	}
	batch := gen(req(8), req(7), req(9))
	if !slices.EqualFunc(batch[1].Codes, a.Codes, slices.Equal) {
		t.Errorf("seed 7 in a batch: %v, alone %v", batch[1].Codes, a.Codes)
	}
	if slices.EqualFunc(batch[0].Codes, a.Codes, slices.Equal) {
		t.Errorf("seeds 7 and 8 gave the same codes %v", a.Codes)
	}
	greedy := gen(g.request(m))[0]
	if slices.EqualFunc(greedy.Codes[:len(a.Codes)], a.Codes, slices.Equal) {
		t.Errorf("sampled codes equal the greedy ones")
	}
}

// The draws of both sides follow softmax(logits/0.9) over the 50 most
// likely codes: a chi-square test (p = 0.001) of 20000 draws from one
// talker step (after the token rules) and one predictor sub-step of the
// golden run, nothing drawn outside the top 50.
func TestSamplingDistribution(t *testing.T) {
	m := openModel(t, ckptDir(t))
	g := loadGolden(t, "cv_ryan_english_nonstream")
	r := m.Cfg.NewRequest(nil, Voice{})
	talker := g.array(t, "talker_scores")[3*3072 : 4*3072]
	cp := g.array(t, "cp_logits")[5*2048 : 6*2048]
	for _, c := range []struct {
		name   string
		sp     Sampling
		scores []float32
	}{{"talker", r.Talker, talker}, {"predictor", r.Predictor, cp}} {
		t.Run(c.name, func(t *testing.T) {
			seq, err := newSequence(c.sp, 12345, true, c.name)
			if err != nil {
				t.Fatal(err)
			}
			const n = 20000
			counts := map[int]int{}
			for i := 0; i < n; i++ {
				tok, err := seq.Sample(c.scores)
				if err != nil {
					t.Fatal(err)
				}
				counts[tok.ID]++
			}
			chiSquare(t, counts, c.scores, c.sp.Temperature, c.sp.TopK, n)
		})
	}
}

// chiSquare compares counts with softmax(scores/temp) over the topK
// largest scores, merging the least likely codes until every bin expects
// at least 5 draws.
func chiSquare(t *testing.T, counts map[int]int, scores []float32, temp float64, topK, n int) {
	t.Helper()
	ids := make([]int, len(scores))
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return scores[ids[a]] > scores[ids[b]] })
	top := ids[:topK]
	mx := float64(scores[top[0]])
	var z float64
	p := make([]float64, topK)
	for i, id := range top {
		p[i] = math.Exp((float64(scores[id]) - mx) / temp)
		z += p[i]
	}
	inTop := 0
	for _, id := range top {
		inTop += counts[id]
	}
	if inTop != n {
		t.Fatalf("%d of %d draws outside the top %d", n-inTop, n, topK)
	}
	var stat float64
	bins := 0
	var exp, obs float64
	for i, id := range top {
		exp += float64(n) * p[i] / z
		obs += float64(counts[id])
		if exp >= 5 || i == topK-1 {
			stat += (obs - exp) * (obs - exp) / exp
			bins++
			exp, obs = 0, 0
		}
	}
	df := float64(bins - 1)
	// Wilson-Hilferty: the 0.999 quantile of chi-square with df degrees.
	crit := df * math.Pow(1-2/(9*df)+3.090*math.Sqrt(2/(9*df)), 3)
	if stat > crit {
		t.Errorf("chi-square %.1f over %d bins exceeds the 0.999 quantile %.1f", stat, bins, crit)
	}
	t.Logf("chi-square %.1f over %d bins (0.999 quantile %.1f)", stat, bins, crit)
}

// OnFrame sees every frame in order; an error from it stops that request
// only, and the others in its batch get the codes they get alone.
func TestOnFrameCancel(t *testing.T) {
	m := openModel(t, ckptDir(t))
	g := loadGolden(t, "cv_ryan_english_nonstream")
	var seen [][]int
	a := g.request(m)
	a.OnFrame = func(f []int) error {
		seen = append(seen, f)
		if len(seen) == 3 {
			return errors.New("client went away")
		}
		return nil
	}
	res, err := m.Generate([]*Request{a, g.request(m)})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Stop != "canceled" || len(res[0].Codes) != 3 || !slices.EqualFunc(seen, res[0].Codes, slices.Equal) {
		t.Errorf("canceled request: stop %q, %d frames, OnFrame saw %d", res[0].Stop, len(res[0].Codes), len(seen))
	}
	if !slices.EqualFunc(res[0].Codes, g.m.Codes[:3], slices.Equal) || !slices.EqualFunc(res[1].Codes, g.m.Codes, slices.Equal) || res[1].Stop != "max_frames" {
		t.Errorf("codes %v and %v, want the golden's first 3 and all 12", res[0].Codes, res[1].Codes)
	}
}
