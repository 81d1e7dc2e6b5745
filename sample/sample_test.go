package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var inf = float32(math.Inf(-1))

func seq(t testing.TB, p Params, prompt []int) *Sequence {
	t.Helper()
	s, err := NewSequence(p, prompt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// logitsOf turns probabilities into logits.
func logitsOf(probs ...float64) []float32 {
	l := make([]float32, len(probs))
	for i, p := range probs {
		l[i] = float32(math.Log(p))
	}
	return l
}

// processed is l after steps 2-6 of Sample (masks, bias, penalties).
func processed(s *Sequence, l []float32) []float32 {
	l = slices.Clone(l)
	s.process(l)
	return l
}

// kept is the sorted ids that steps 8-10 let through.
func kept(s *Sequence, l []float32) []int {
	var ids []int
	for _, c := range s.filter(l, new(scratch)) {
		ids = append(ids, int(c.id))
	}
	slices.Sort(ids)
	return ids
}

func sameLogits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] && math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func TestAllowedTokenIDs(t *testing.T) {
	p := Defaults()
	p.AllowedTokenIDs = []int{3, 1, 3}
	s := seq(t, p, nil)
	sameLogits(t, "allowed", processed(s, []float32{1, 2, 3, 4, 5}), []float32{inf, 2, inf, 4, inf})
}

func TestBadWords(t *testing.T) {
	p := Defaults()
	p.BadTokenIDs = []int{0}
	p.BadWords = [][]int{{2, 4}, {1}, {3, 2, 4}}
	s := seq(t, p, nil)
	l := []float32{1, 1, 1, 1, 1}
	sameLogits(t, "start", processed(s, l), []float32{inf, inf, 1, 1, 1})
	s.accept(2) // output ends with 2: the bad word 2,4 bans 4
	sameLogits(t, "after 2", processed(s, l), []float32{inf, inf, 1, 1, inf})
	s.accept(3)
	sameLogits(t, "after 2 3", processed(s, l), []float32{inf, inf, 1, 1, 1})
	s.accept(2) // 3,2 matches the prefix of 3,2,4 and 2 that of 2,4
	sameLogits(t, "after 2 3 2", processed(s, l), []float32{inf, inf, 1, 1, inf})
}

func TestMinTokens(t *testing.T) {
	p := Defaults()
	p.MinTokens = 2
	p.StopTokenIDs = []int{4}
	p.EOSTokenIDs = []int{0}
	s := seq(t, p, nil)
	l := []float32{5, 1, 1, 1, 5}
	for range 2 {
		sameLogits(t, "before min_tokens", processed(s, l), []float32{inf, 1, 1, 1, inf})
		if tok, err := s.Sample(l); err != nil || tok.ID == 0 || tok.ID == 4 {
			t.Fatalf("sampled %v, %v before min_tokens", tok.ID, err)
		}
	}
	sameLogits(t, "after min_tokens", processed(s, l), l)
	if s.modifies() {
		t.Error("nothing should touch the logits once min_tokens is reached")
	}
}

func TestLogitBias(t *testing.T) {
	p := Defaults()
	p.LogitBias = map[int]float32{1: 0.5, 2: -1000}
	s := seq(t, p, nil)
	sameLogits(t, "bias", processed(s, []float32{0, 1, 2}), []float32{0, 1.5, 2 - MaxLogitBias})
}

func TestRepetitionPenalty(t *testing.T) {
	p := Defaults()
	p.RepetitionPenalty = 2
	s := seq(t, p, []int{0, 1, 1})
	l := []float32{2, -2, 2, -2, 3}
	// Positive logits are divided, the others multiplied.
	sameLogits(t, "prompt", processed(s, l), []float32{1, -4, 2, -2, 3})
	s.accept(2)
	s.accept(0) // in prompt and output: penalised once
	s.accept(0)
	sameLogits(t, "prompt+output", processed(s, l), []float32{1, -4, 1, -2, 3})
}

func TestFrequencyPresencePenalty(t *testing.T) {
	p := Defaults()
	p.FrequencyPenalty = 0.5
	p.PresencePenalty = 0.25
	s := seq(t, p, []int{3}) // the prompt does not count for these two
	for _, id := range []int{1, 1, 2} {
		s.accept(id)
	}
	sameLogits(t, "freq+presence", processed(s, make([]float32, 4)), []float32{0, -1.25, -0.75, 0})

	// All three on one token: repetition first, then frequency, presence.
	p = Defaults()
	p.RepetitionPenalty, p.FrequencyPenalty, p.PresencePenalty = 2, 1, 0.5
	s = seq(t, p, nil)
	s.accept(0)
	sameLogits(t, "all penalties", processed(s, []float32{3, 3}), []float32{3/2.0 - 1 - 0.5, 3})
}

func TestTemperature(t *testing.T) {
	p := Defaults()
	p.Temperature = 2
	s := seq(t, p, nil)
	c := s.filter([]float32{2, 0, inf}, new(scratch))
	if len(c) != 2 || c[0].w != 1 || math.Abs(c[1].w-math.Exp(-1)) > 1e-9 {
		t.Fatalf("weights at T=2: %v, want [1 e^-1]", c)
	}

	p.Temperature = 1e-3
	if s := seq(t, p, nil); s.greedy || s.p.Temperature != MinTemperature {
		t.Errorf("temperature 1e-3: greedy %v, T %v; vLLM raises it to %v", s.greedy, s.p.Temperature, MinTemperature)
	}
	p.Temperature = 1e-6
	if s := seq(t, p, nil); !s.greedy {
		t.Error("temperature 1e-6 should be greedy")
	}
}

func TestMinP(t *testing.T) {
	p := Defaults()
	p.MinP = 0.25 // of the top probability 0.5: keep p >= 0.125
	l := logitsOf(0.3, 0.5, 0.05, 0.15)
	if got := kept(seq(t, p, nil), l); !slices.Equal(got, []int{0, 1, 3}) {
		t.Errorf("min_p 0.25 kept %v, want [0 1 3]", got)
	}
	p.MinP = 1
	if got := kept(seq(t, p, nil), l); !slices.Equal(got, []int{1}) {
		t.Errorf("min_p 1 kept %v, want [1]", got)
	}
}

func TestTopK(t *testing.T) {
	for _, c := range []struct {
		l    []float32
		k    int
		want []int
	}{
		{[]float32{1, 3, 3, 2, 0}, 2, []int{1, 2}},
		{[]float32{1, 3, 3, 2, 0}, 3, []int{1, 2, 3}},
		{[]float32{1, 3, 2, 2, 0}, 2, []int{1, 2, 3}}, // ties with the k-th stay, as in vLLM
		{[]float32{1, 3, 2, 2, 0}, 1, []int{1}},
		{[]float32{1, 3, inf, 2, 0}, 9, []int{0, 1, 3, 4}},
		{[]float32{1, 3, 2, 2, 0}, 0, []int{0, 1, 2, 3, 4}},
		{[]float32{1, 3, 2, 2, 0}, -1, []int{0, 1, 2, 3, 4}},
	} {
		p := Defaults()
		p.TopK = c.k
		if got := kept(seq(t, p, nil), c.l); !slices.Equal(got, c.want) {
			t.Errorf("top_k %d of %v kept %v, want %v", c.k, c.l, got, c.want)
		}
	}
}

func TestTopP(t *testing.T) {
	l := logitsOf(0.2, 0.4, 0.1, 0.3)
	for _, c := range []struct {
		p    float64
		want []int
	}{
		{0.35, []int{1}},          // 0.4 alone crosses 0.35
		{0.5, []int{1, 3}},        // 0.4 < 0.5, so 0.3 is kept and crosses it
		{0.75, []int{0, 1, 3}},    // 0.7 < 0.75 keeps 0.2
		{0.95, []int{0, 1, 2, 3}}, // 0.9 < 0.95 keeps 0.1
		{1, []int{0, 1, 2, 3}},
	} {
		p := Defaults()
		p.TopP = c.p
		if got := kept(seq(t, p, nil), l); !slices.Equal(got, c.want) {
			t.Errorf("top_p %v kept %v, want %v", c.p, got, c.want)
		}
	}
	// Equal probabilities are taken lowest id first.
	p := Defaults()
	p.TopP = 0.5
	if got := kept(seq(t, p, nil), []float32{1, 1, 1, 1, inf}); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("top_p 0.5 of four equal tokens kept %v, want [0 1]", got)
	}
}

// The order vLLM applies the steps in shows in the results.
func TestOrder(t *testing.T) {
	// logit_bias before penalties: (4-2)/2 = 1 beats 0.5; the other way
	// round it would be 4/2-2 = 0 and token 1 would win.
	p := Defaults()
	p.Temperature = 0
	p.LogitBias = map[int]float32{0: -2}
	p.RepetitionPenalty = 2
	if tok, _ := seq(t, p, []int{0}).Sample([]float32{4, 0.5}); tok.ID != 0 {
		t.Errorf("bias then repetition penalty: got token %d, want 0", tok.ID)
	}

	// Temperature before min_p: at T=2 token 1 has p1/p0 = e^-0.5 = 0.61,
	// above min_p 0.5; min_p before temperature would see e^-1 = 0.37.
	p = Defaults()
	p.Temperature = 2
	p.MinP = 0.5
	if got := kept(seq(t, p, nil), []float32{0, -1}); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("temperature then min_p kept %v, want [0 1]", got)
	}

	// top_k before top_p: top_k 2 leaves 0.625/0.375 and top_p 0.6 keeps
	// only the first; top_p first would keep 0.5+0.3.
	p = Defaults()
	p.TopK, p.TopP = 2, 0.6
	l := logitsOf(0.5, 0.3, 0.2)
	if got := kept(seq(t, p, nil), l); !slices.Equal(got, []int{0}) {
		t.Errorf("top_k then top_p kept %v, want [0]", got)
	}

	// min_p before top_p: min_p 0.5 drops 0.2 (< 0.25), leaving the same
	// 0.625/0.375, so top_p 0.6 keeps one token.
	p = Defaults()
	p.MinP, p.TopP = 0.5, 0.6
	if got := kept(seq(t, p, nil), l); !slices.Equal(got, []int{0}) {
		t.Errorf("min_p then top_p kept %v, want [0]", got)
	}

	// min_tokens masks before logit_bias is added: a masked EOS stays -inf.
	p = Defaults()
	p.Temperature = 0
	p.MinTokens = 1
	p.EOSTokenIDs = []int{1}
	p.LogitBias = map[int]float32{1: 100}
	if tok, _ := seq(t, p, nil).Sample([]float32{0, 1}); tok.ID != 0 {
		t.Errorf("min_tokens with a biased EOS: got token %d, want 0", tok.ID)
	}
}

func TestGreedy(t *testing.T) {
	p := Defaults()
	p.Temperature = 0
	s := seq(t, p, nil)
	for _, c := range []struct {
		l    []float32
		want int
	}{
		{[]float32{1, 3, 3}, 1},
		{[]float32{inf, inf, 2}, 2},
		{[]float32{float32(math.NaN()), 1, 1}, 1},
	} {
		if tok, err := s.Sample(c.l); err != nil || tok.ID != c.want {
			t.Errorf("greedy %v: got %d, %v; want %d", c.l, tok.ID, err, c.want)
		}
	}
	if Argmax([]float32{1, 3, 3}) != 1 {
		t.Error("Argmax ties should go to the lowest index")
	}
}

func TestNoToken(t *testing.T) {
	for _, temp := range []float64{0, 1} {
		p := Defaults()
		p.Temperature = temp
		p.AllowedTokenIDs = []int{2}
		p.BadTokenIDs = []int{2}
		if _, err := seq(t, p, nil).Sample([]float32{1, 2, 3}); !errors.Is(err, ErrNoToken) {
			t.Errorf("temperature %v, all masked: got %v, want ErrNoToken", temp, err)
		}
	}
}

// Sample reads the caller's logits and never writes them.
func TestLogitsUntouched(t *testing.T) {
	p := Defaults()
	p.Temperature, p.TopK, p.TopP, p.MinP = 0.8, 3, 0.9, 0.01
	p.RepetitionPenalty, p.FrequencyPenalty, p.PresencePenalty = 1.3, 0.5, 0.5
	p.LogitBias = map[int]float32{1: 3}
	p.BadTokenIDs = []int{2}
	p.Logprobs, p.TopLogprobs = true, 2
	s := seq(t, p, []int{0, 1})
	l := randomLogits(rand.New(rand.NewPCG(1, 2)), 64, 3)
	orig := slices.Clone(l)
	for range 5 {
		if _, err := s.Sample(l); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(l, orig) {
		t.Error("Sample changed the caller's logits")
	}
}

func randomLogits(r *rand.Rand, n int, scale float64) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * scale)
	}
	return l
}

// run samples n tokens, each step from logits made from the step and the
// previous token, like a model would.
func run(t *testing.T, s *Sequence, n int) []int {
	t.Helper()
	var out []int
	prev := 0
	for i := range n {
		l := randomLogits(rand.New(rand.NewPCG(uint64(i), uint64(prev))), 500, 2)
		tok, err := s.Sample(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tok.ID)
		prev = tok.ID
	}
	return out
}

func seededParams(seed uint64) Params {
	p := Defaults()
	p.Temperature, p.TopP, p.TopK = 1.2, 0.95, 100
	p.FrequencyPenalty, p.RepetitionPenalty = 0.3, 1.1
	p.Seed, p.Seeded = seed, true
	return p
}

func TestSeeded(t *testing.T) {
	a := run(t, seq(t, seededParams(42), []int{1, 2}), 100)
	b := run(t, seq(t, seededParams(42), []int{1, 2}), 100)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different tokens:\n%v\n%v", a, b)
	}
	c := run(t, seq(t, seededParams(43), []int{1, 2}), 100)
	if slices.Equal(a, c) {
		t.Fatal("seeds 42 and 43 gave the same 100 tokens")
	}
	// Any 64-bit value is a seed (reading int64 -1 as none is the HTTP
	// layer's business).
	d := run(t, seq(t, seededParams(math.MaxUint64), nil), 20)
	e := run(t, seq(t, seededParams(math.MaxUint64), nil), 20)
	if !slices.Equal(d, e) {
		t.Fatal("seed 2^64-1 is not reproducible")
	}
}

func TestUnseeded(t *testing.T) {
	p := Defaults()
	SetServerSeed(7)
	a1, a2 := seq(t, p, nil).Seed(), seq(t, p, nil).Seed()
	SetServerSeed(7)
	b1 := seq(t, p, nil).Seed()
	if a1 == a2 || a1 != b1 {
		t.Errorf("server seeds: %x %x then %x; want two distinct, then the first again", a1, a2, b1)
	}
	SetServerSeed(rand.Uint64())
}

// A sequence's tokens do not depend on other sequences sampled between
// its steps.
func TestBatchInvariance(t *testing.T) {
	alone := run(t, seq(t, seededParams(5), []int{3}), 60)

	a := seq(t, seededParams(5), []int{3})
	others := []*Sequence{seq(t, seededParams(5), nil), seq(t, seededParams(6), []int{3}), seq(t, Defaults(), nil)}
	var got []int
	prev := 0
	for i := range 60 {
		for j, o := range others[:1+i%3] {
			if _, err := o.Sample(randomLogits(rand.New(rand.NewPCG(uint64(i), uint64(j+100))), 500, 2)); err != nil {
				t.Fatal(err)
			}
		}
		tok, err := a.Sample(randomLogits(rand.New(rand.NewPCG(uint64(i), uint64(prev))), 500, 2))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tok.ID)
		prev = tok.ID
	}
	if !slices.Equal(alone, got) {
		t.Fatalf("interleaving changed the tokens:\n%v\n%v", alone, got)
	}
}

// chiSquare samples n tokens from l with p and compares the counts with
// the expected probabilities (0 for tokens that must never come up).
func chiSquare(t *testing.T, p Params, l []float32, want []float64, n int) {
	t.Helper()
	s := seq(t, p, nil)
	counts := make([]int, len(l))
	for range n {
		tok, err := s.Sample(l)
		if err != nil {
			t.Fatal(err)
		}
		counts[tok.ID]++
	}
	stat := 0.0
	for i, c := range counts {
		if want[i] == 0 {
			if c != 0 {
				t.Fatalf("token %d drawn %d times, want never", i, c)
			}
			continue
		}
		e := want[i] * float64(n)
		stat += (float64(c) - e) * (float64(c) - e) / e
	}
	// Loose: the 0.1% critical value for up to 4 degrees of freedom is
	// 18.5; the draws are seeded so this never flakes.
	if stat > 25 {
		t.Errorf("chi-square %.1f too large: counts %v for probabilities %v", stat, counts, want)
	}
}

func TestDistribution(t *testing.T) {
	p := Defaults()
	p.Seed, p.Seeded = 2024, true
	l := logitsOf(0.1, 0.2, 0.3, 0.4)
	chiSquare(t, p, l, []float64{0.1, 0.2, 0.3, 0.4}, 40000)

	// After filtering, the kept tokens' probabilities renormalise.
	p.TopK = 2
	chiSquare(t, p, l, []float64{0, 0, 3.0 / 7, 4.0 / 7}, 20000)

	// Temperature 2: p_i proportional to sqrt(q_i).
	p = Defaults()
	p.Temperature = 2
	p.Seed, p.Seeded = 99, true
	z := 1 + math.Sqrt(2) + math.Sqrt(3) + 2
	chiSquare(t, p, l, []float64{1 / z, math.Sqrt(2) / z, math.Sqrt(3) / z, 2 / z}, 40000)
}

func TestExpNeg(t *testing.T) {
	worst := 0.0
	for x := 0.0; x > -105; x -= 0.0137 {
		worst = max(worst, math.Abs(expNeg(x)/math.Exp(x)-1))
	}
	if worst > 1e-9 {
		t.Errorf("expNeg relative error up to %g", worst)
	}
	if expNeg(0) != 1 || expNeg(-106) != 0 {
		t.Errorf("expNeg(0) = %v, expNeg(-106) = %v", expNeg(0), expNeg(-106))
	}
}

// The race's shortcut never changes the winner.
func TestRaceShortcut(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		c := make([]cand, 1+r.IntN(200))
		for i := range c {
			c[i] = cand{math.Exp(-r.Float64() * 30), int32(i * 3)}
		}
		key := r.Uint64()
		best, want := math.Inf(1), int32(-1)
		for _, x := range c {
			if v := -math.Log(uniform(key, x.id)) / x.w; v < best {
				best, want = v, x.id
			}
		}
		if got := race(c, key); got != want {
			t.Fatalf("trial %d: race picked %d, full scan %d", trial, got, want)
		}
	}
}

// topK and topP match a sort of everything, on inputs with many ties.
func TestSelectionMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 500 {
		n := 1 + r.IntN(300)
		c := make([]cand, n)
		for i := range c {
			// Powers of two, so sums are exact in any order.
			c[i] = cand{math.Ldexp(1, -r.IntN(6)), int32(i)}
		}
		r.Shuffle(n, func(i, j int) { c[i], c[j] = c[j], c[i] })
		sorted := slices.Clone(c)
		slices.SortFunc(sorted, byRank)

		k := r.IntN(n + 2)
		wantK := sorted
		if k > 0 && k < n {
			wantK = slices.DeleteFunc(slices.Clone(sorted), func(x cand) bool { return x.w < sorted[k-1].w })
		}
		gotK := topK(slices.Clone(c), k)
		if !sameSet(gotK, wantK) {
			t.Fatalf("trial %d: top_k %d kept %d tokens, want %d", trial, k, len(gotK), len(wantK))
		}

		p := r.Float64()
		total := 0.0
		for _, x := range sorted {
			total += x.w
		}
		var wantP []cand
		acc := 0.0
		for _, x := range sorted {
			if acc >= p*total {
				break
			}
			wantP = append(wantP, x)
			acc += x.w
		}
		if gotP := topP(slices.Clone(c), p, total); !sameSet(gotP, wantP) {
			t.Fatalf("trial %d: top_p %v kept %d tokens, want %d", trial, p, len(gotP), len(wantP))
		}
	}
}

// The whole of steps 8-10 (with the binade prefilter) keeps what a
// straightforward sort of the vocabulary keeps.
func TestFilterMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for trial := range 300 {
		n := 1 + r.IntN(10000)
		l := make([]float32, n)
		for i := range l {
			switch trial % 3 {
			case 0: // a language model: bulk and favourites
				l[i] = float32(r.NormFloat64() * 2)
				if r.IntN(200) == 0 {
					l[i] += 15
				}
			case 1: // flat
				l[i] = float32(r.NormFloat64() * 0.3)
			case 2: // quantised, many ties, some masked
				l[i] = float32(r.IntN(8))
				if r.IntN(10) == 0 {
					l[i] = inf
				}
			}
		}
		p := Defaults()
		p.Temperature = []float64{0.3, 1, 1.7}[r.IntN(3)]
		if r.IntN(3) == 0 {
			p.MinP = r.Float64() * 0.2
		}
		switch r.IntN(3) {
		case 0:
			p.TopK = 1 + r.IntN(min(n+5, 50))
		case 1:
			p.TopK = 1 + r.IntN(n+5) // past maxHeapK too
		}
		if r.IntN(3) != 0 {
			p.TopP = 0.05 + 0.95*r.Float64()
		}
		s := seq(t, p, nil)

		m := l[argmax(l)]
		var all []cand
		for i, v := range l {
			if v > inf {
				if v >= float32(float64(m)+max(math.Log(p.MinP), -104)*s.p.Temperature) {
					w := expNeg((float64(v) - float64(m)) / s.p.Temperature)
					all = append(all, cand{w, int32(i)})
				}
			}
		}
		slices.SortFunc(all, byRank)
		want := all
		if p.TopK > 0 && p.TopK < len(all) {
			kth := all[p.TopK-1].w
			want = slices.DeleteFunc(slices.Clone(all), func(x cand) bool { return x.w < kth })
		}
		if p.TopP < 1 {
			total := 0.0
			for _, x := range want {
				total += x.w
			}
			acc, keep := 0.0, 0
			for _, x := range want {
				if acc >= p.TopP*total {
					break
				}
				acc += x.w
				keep++
			}
			want = want[:keep]
		}
		if got := s.filter(l, new(scratch)); !sameSet(got, want) {
			t.Fatalf("trial %d (n %d, T %v, min_p %v, top_k %d, top_p %v): kept %d tokens, want %d",
				trial, n, p.Temperature, p.MinP, p.TopK, p.TopP, len(got), len(want))
		}
	}
}

func sameSet(a, b []cand) bool {
	ids := func(c []cand) []int32 {
		var out []int32
		for _, x := range c {
			out = append(out, x.id)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(ids(a), ids(b))
}

func TestLogprobs(t *testing.T) {
	l := []float32{1, 3, 0.5, 3, -2, inf, 2}
	p := Defaults()
	p.Temperature, p.TopK = 0.5, 2
	p.RepetitionPenalty, p.PresencePenalty = 1.5, 1
	p.LogitBias = map[int]float32{6: 10} // makes 6 the greedy pick: 12 > 3
	p.Logprobs, p.TopLogprobs = true, 4
	p.Temperature = 0
	s := seq(t, p, []int{1})
	tok, err := s.Sample(l)
	if err != nil {
		t.Fatal(err)
	}
	// log_softmax of the raw logits, untouched by bias, penalty, top-k.
	sum := 0.0
	for _, v := range l {
		sum += math.Exp(float64(v))
	}
	lp := func(i int) float32 { return float32(float64(l[i]) - math.Log(sum)) }
	if tok.ID != 6 || tok.Logprob != lp(6) || tok.Rank != 3 {
		t.Errorf("got id %d logprob %v rank %d; want 6, %v, 3", tok.ID, tok.Logprob, tok.Rank, lp(6))
	}
	want := []TopLogprob{{1, lp(1)}, {3, lp(3)}, {6, lp(6)}, {0, lp(0)}}
	if !slices.Equal(tok.Top, want) {
		t.Errorf("top logprobs %v, want %v", tok.Top, want)
	}

	// Ties rank as vLLM counts them: every token >= the chosen one.
	p = Defaults()
	p.Temperature = 0
	p.Logprobs = true
	tok, _ = seq(t, p, nil).Sample([]float32{3, 3, 1})
	if tok.ID != 0 || tok.Rank != 2 || tok.Top != nil {
		t.Errorf("tie: id %d rank %d top %v; want 0, 2, none", tok.ID, tok.Rank, tok.Top)
	}

	// TopLogprobs beyond the vocabulary returns the whole vocabulary.
	p.TopLogprobs = 10
	if tok, _ := seq(t, p, nil).Sample([]float32{3, 3, 1}); len(tok.Top) != 3 || tok.Top[0].ID != 0 || tok.Top[1].ID != 1 {
		t.Errorf("top 10 of 3: %v", tok.Top)
	}

	// Not asked: nothing computed.
	if tok, _ := seq(t, Defaults(), nil).Sample(l); tok.Logprob != 0 || tok.Rank != 0 || tok.Top != nil {
		t.Errorf("logprobs not asked for, got %+v", tok)
	}
}

func TestTopN(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for range 100 {
		l := make([]float32, 1+r.IntN(100))
		for i := range l {
			l[i] = float32(r.IntN(10))
		}
		n := 1 + r.IntN(len(l))
		idx := make([]int32, len(l))
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortStableFunc(idx, func(a, b int32) int {
			switch {
			case l[a] > l[b]:
				return -1
			case l[a] < l[b]:
				return 1
			}
			return 0
		})
		if got := topN(l, n); !slices.Equal(got, idx[:n]) {
			t.Fatalf("topN(%v, %d) = %v, want %v", l, n, got, idx[:n])
		}
	}
}

func TestValidation(t *testing.T) {
	for _, c := range []struct {
		param string
		edit  func(*Params)
		msg   string
	}{
		{"temperature", func(p *Params) { p.Temperature = -0.5 }, "temperature must be non-negative, got -0.5"},
		{"temperature", func(p *Params) { p.Temperature = math.NaN() }, "temperature must be non-negative, got NaN"},
		{"temperature", func(p *Params) { p.Temperature = math.Inf(1) }, "temperature must be a finite number, got +Inf"},
		{"top_p", func(p *Params) { p.TopP = 1.5 }, "top_p must be in (0, 1], got 1.5"},
		{"top_p", func(p *Params) { p.TopP = 0 }, "top_p must be in (0, 1], got 0"},
		{"top_k", func(p *Params) { p.TopK = -2 }, "top_k must be 0 (disable), or at least 1, got -2"},
		{"min_p", func(p *Params) { p.MinP = 1.1 }, "min_p must be in [0, 1], got 1.1"},
		{"presence_penalty", func(p *Params) { p.PresencePenalty = -2.5 }, "presence_penalty must be in [-2, 2], got -2.5"},
		{"frequency_penalty", func(p *Params) { p.FrequencyPenalty = 3 }, "frequency_penalty must be in [-2, 2], got 3"},
		{"repetition_penalty", func(p *Params) { p.RepetitionPenalty = 0 }, "repetition_penalty must be greater than zero, got 0"},
		{"repetition_penalty", func(p *Params) { p.RepetitionPenalty = math.Inf(1) }, "repetition_penalty must be a finite number, got +Inf"},
		{"min_tokens", func(p *Params) { p.MinTokens = -1 }, "min_tokens must be greater than or equal to 0, got -1"},
		{"top_logprobs", func(p *Params) { p.Logprobs, p.TopLogprobs = true, -1 }, "top_logprobs must be non-negative, got -1"},
		{"top_logprobs", func(p *Params) { p.TopLogprobs = 2 }, "top_logprobs needs logprobs to be true"},
		{"allowed_token_ids", func(p *Params) { p.AllowedTokenIDs = []int{} }, "allowed_token_ids must not be empty"},
		{"allowed_token_ids", func(p *Params) { p.AllowedTokenIDs = []int{1, -3} }, "allowed_token_ids contains negative token ids [-3]"},
		{"logit_bias", func(p *Params) { p.LogitBias = map[int]float32{2: float32(math.NaN())} }, "logit_bias for token 2 must be a number, got NaN"},
		{"bad_words", func(p *Params) { p.BadWords = [][]int{{}} }, "bad_words cannot contain an empty entry"},
		{"stop_token_ids", func(p *Params) { p.StopTokenIDs = []int{-1} }, "stop_token_ids contains negative token ids [-1]"},
	} {
		p := Defaults()
		c.edit(&p)
		_, err := NewSequence(p, nil)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != c.param || err.Error() != c.msg {
			t.Errorf("%s: got %v, want %q", c.param, err, c.msg)
		}
	}
	if _, err := NewSequence(Defaults(), nil); err != nil {
		t.Errorf("defaults: %v", err)
	}
	p := Defaults()
	p.TopK = -1
	if _, err := NewSequence(p, nil); err != nil {
		t.Errorf("top_k -1 is vLLM's old 'off': %v", err)
	}
}

// Token ids are checked against the vocabulary once it is known.
func TestVocabChecks(t *testing.T) {
	for _, c := range []struct {
		param string
		edit  func(*Params)
	}{
		{"logit_bias", func(p *Params) { p.LogitBias = map[int]float32{9: 1, 2: 1, 5: 1} }},
		{"allowed_token_ids", func(p *Params) { p.AllowedTokenIDs = []int{1, 5} }},
		{"bad_words", func(p *Params) { p.BadWords = [][]int{{1, 7}} }},
		{"stop_token_ids", func(p *Params) { p.StopTokenIDs = []int{5} }},
		{"eos_token_id", func(p *Params) { p.EOSTokenIDs = []int{5} }},
	} {
		p := Defaults()
		c.edit(&p)
		s := seq(t, p, nil)
		_, err := s.Sample(make([]float32, 5))
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != c.param || !strings.Contains(err.Error(), "vocabulary size 5") {
			t.Errorf("%s: Sample error %v", c.param, err)
		}
		if err2 := p.Validate(5); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%s: Validate(5) = %v, Sample %v", c.param, err2, err)
		}
	}
	p := Defaults()
	p.RepetitionPenalty = 1.2
	var pe *ParamError
	if _, err := seq(t, p, []int{0, 7}).Sample(make([]float32, 5)); !errors.As(err, &pe) || pe.Param != "prompt" {
		t.Errorf("prompt id 7 in a vocabulary of 5: %v", err)
	}
	p = Defaults()
	p.LogitBias = map[int]float32{9: 1, 2: 1, 5: 1}
	if err := p.Validate(5); err.Error() != "logit_bias contains out-of-vocab token ids [5 9] (vocabulary size 5)" {
		t.Errorf("message: %v", err)
	}
}

// The command line's sampler keeps its lenient reading of Params.
func TestLegacySampler(t *testing.T) {
	l := randomLogits(rand.New(rand.NewPCG(1, 1)), 100, 2)
	if got := New(Params{}).Next(l); got != Argmax(l) {
		t.Errorf("zero Params: %d, want the argmax %d", got, Argmax(l))
	}
	draw := func() []int {
		s := New(Params{Temperature: 1, TopP: 0.9, Seed: 42})
		var out []int
		for range 20 {
			out = append(out, s.Next(l))
		}
		return out
	}
	if a, b := draw(), draw(); !slices.Equal(a, b) {
		t.Errorf("seeded sampler not reproducible: %v, %v", a, b)
	}
	New(Params{Temperature: -1, TopP: 0, TopK: -5}) // must not panic
}

// benchLogits look like a language model's: a bulk around 0 and a
// handful of favourites well above it, so that top_p 0.9 keeps about ten.
func benchLogits(n int) []float32 {
	r := rand.New(rand.NewPCG(11, 12))
	l := randomLogits(r, n, 2)
	for i := range 20 {
		l[r.IntN(n)] = float32(18 - i/2)
	}
	return l
}

func benchmarkSample(b *testing.B, p Params, l []float32) {
	p.Seed, p.Seeded = 1, true
	s := seq(b, p, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sample(l); err != nil {
			b.Fatal(err)
		}
	}
}

// Qwen's vocabulary of 151936 tokens, top_p 0.9.
func BenchmarkSampleTopP(b *testing.B) {
	p := Defaults()
	p.TopP = 0.9
	benchmarkSample(b, p, benchLogits(151936))
}

// Flat logits: the nucleus is most of the vocabulary.
func BenchmarkSampleTopPFlat(b *testing.B) {
	p := Defaults()
	p.TopP = 0.9
	benchmarkSample(b, p, randomLogits(rand.New(rand.NewPCG(1, 2)), 151936, 1))
}

func BenchmarkSampleTopPPenaltiesLogprobs(b *testing.B) {
	p := Defaults()
	p.TopP, p.TopK = 0.9, 50
	p.RepetitionPenalty, p.FrequencyPenalty = 1.1, 0.5
	p.Logprobs, p.TopLogprobs = true, 5
	s := seq(b, p, []int{1, 2, 3, 4, 5, 6, 7, 8})
	for i := range 200 {
		s.accept(i * 7)
	}
	l := benchLogits(151936)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sample(l); err != nil {
			b.Fatal(err)
		}
	}
}

// Qwen's generation_config defaults: top_k 20, top_p 0.8, temperature 0.7.
func BenchmarkSampleQwenDefaults(b *testing.B) {
	p := Defaults()
	p.Temperature, p.TopK, p.TopP = 0.7, 20, 0.8
	benchmarkSample(b, p, benchLogits(151936))
}

func BenchmarkSampleGreedy(b *testing.B) {
	p := Defaults()
	p.Temperature = 0
	benchmarkSample(b, p, benchLogits(151936))
}
