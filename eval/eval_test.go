package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
)

func TestLogSoftmaxExact(t *testing.T) {
	// Four equal logits: each log-probability is exactly -log 4.
	lp := LogSoftmax(make([]float64, 4), []float32{3, 3, 3, 3})
	for i, v := range lp {
		if v != -math.Log(4) {
			t.Errorf("lp[%d] = %v, want %v", i, v, -math.Log(4))
		}
	}
	// Huge logits neither overflow nor lose the gap between them.
	lp = LogSoftmax(make([]float64, 2), []float32{1000, 999})
	want0 := -math.Log1p(math.Exp(-1))
	if math.Abs(lp[0]-want0) > 1e-15 || math.Abs(lp[1]-(want0-1)) > 1e-12 {
		t.Errorf("lp = %v, want [%v %v]", lp, want0, want0-1)
	}
}

func TestKL(t *testing.T) {
	for _, c := range []struct {
		name string
		p, q []float32
		want float64
		tol  float64
	}{
		{"identical", []float32{1.5, -2, 0.25, 7}, []float32{1.5, -2, 0.25, 7}, 0, 0},
		{"shift invariant", []float32{1, 2, 3}, []float32{101, 102, 103}, 0, 1e-15},
		// P = (1/2, 1/2), Q = (1/(1+e^2), e^2/(1+e^2)).
		{"two tokens", []float32{0, 0}, []float32{0, 2},
			0.5*math.Log(0.5*(1+math.Exp(2))) + 0.5*math.Log(0.5*(1+math.Exp(2))/math.Exp(2)), 1e-15},
		// P = (1/4, 3/4) from logits 0 and ln 3 (rounded to float32),
		// Q uniform: sum p log(p / (1/2)).
		{"uniform q", []float32{0, float32(math.Log(3))}, []float32{5, 5}, func() float64 {
			e := math.Exp(float64(float32(math.Log(3))))
			p0, p1 := 1/(1+e), e/(1+e)
			return p0*math.Log(2*p0) + p1*math.Log(2*p1)
		}(), 1e-15},
		// Nearly one-hot and swapped: KL = 100 (p0 - p1) = 100 tanh(50).
		{"swapped peaks", []float32{100, 0}, []float32{0, 100}, 100 * math.Tanh(50), 1e-12},
		// P puts zero mass (after underflow) where Q has it all: terms
		// with p = 0 add nothing; the rest is finite.
		{"underflow", []float32{0, -2000}, []float32{-2000, 0}, 2000, 1e-9},
	} {
		got := KL(c.p, c.q)
		if math.IsNaN(got) || math.Abs(got-c.want) > c.tol {
			t.Errorf("%s: KL = %.17g, want %.17g", c.name, got, c.want)
		}
	}
	if KL([]float32{0, 0}, []float32{0, 2}) == KL([]float32{0, 2}, []float32{0, 0}) {
		t.Error("KL should not be symmetric on this pair")
	}
}

// script is a fake model over a vocabulary of 4: at each position it
// scores the tokens with row(pos) so tests control every argmax and KL.
type script struct {
	vocab int
	row   func(pos int) []float32
}

func (s *script) Config() *model.Config { return &model.Config{Arch: "fake", Vocab: s.vocab} }
func (s *script) NewCache() *kv.Cache {
	return &kv.Cache{Layers: []*kv.Layer{kv.NewLayer(1, 0)}}
}
func (s *script) WeightBytes() int64 { return 0 }
func (s *script) HeldBytes() int64   { return 0 }
func (s *script) ForwardBatch(seqs []model.Seq) ([][]float32, error) {
	var out [][]float32
	for _, q := range seqs {
		l, err := s.Forward(q.Cache, q.Tokens, q.AllLogits)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
func (s *script) Forward(c *kv.Cache, tokens []int, all bool) ([]float32, error) {
	for range tokens {
		c.Layers[0].Append([]float32{0}, []float32{0})
	}
	return s.row(c.Len() - 1), nil
}

// onehot scores token id at 2 and the rest at 0.
func onehot(id int) []float32 {
	r := make([]float32, 4)
	r[id] = 2
	return r
}

func TestRunCounts(t *testing.T) {
	// The reference always prefers token pos%4. The model agrees except
	// at positions 3 and 5 (absolute), where it prefers token 0 (and at
	// position 4, where the logits are uniform: argmax 0, lowest id).
	ref := &script{vocab: 4, row: func(pos int) []float32 { return onehot(pos % 4) }}
	m := &script{vocab: 4, row: func(pos int) []float32 {
		switch pos {
		case 3, 5:
			return onehot(0)
		case 4:
			return []float32{1, 1, 1, 1}
		}
		return onehot(pos % 4)
	}}
	// Prompt A has 2 tokens: measured positions 1..6 (6 new tokens),
	// the reference continues 1,2,3,0,1,2. Model argmax 1,2,0,0,0,2:
	// matches at 1,2,4(0==0),6 -> 4 of 6, first divergence after 2.
	// Prompt B has 7 tokens: positions 6..11, all matching.
	rep, err := Run(ref, m, []string{"a", "b"}, [][]int{{9, 9}, {1, 1, 1, 1, 1, 1, 1}}, Options{NewTokens: 6})
	if err != nil {
		t.Fatal(err)
	}
	a, b := rep.PerPrompt[0], rep.PerPrompt[1]
	if got, want := a.Reference, []int{1, 2, 3, 0, 1, 2}; !equal(got, want) {
		t.Errorf("reference continuation %v, want %v", got, want)
	}
	if a.Positions != 6 || a.Top1Matches != 4 || a.TokensToDivergence != 2 || a.FullMatch || a.Top1Agreement != 4.0/6 {
		t.Errorf("prompt a: %+v", a)
	}
	if b.Positions != 6 || b.Top1Matches != 6 || b.TokensToDivergence != 6 || !b.FullMatch || b.MeanKL != 0 || b.MaxKL != 0 {
		t.Errorf("prompt b: %+v", b)
	}
	// KL at the mismatches: P = onehot(k), Q = onehot(0) (k = 3 at pos 3,
	// k = 1 at pos 5) and, at pos 4, P = onehot(0), Q uniform.
	swap := KL(onehot(3), onehot(0))
	unif := KL(onehot(0), []float32{1, 1, 1, 1})
	wantA := (2*swap + unif) / 6
	if math.Abs(a.MeanKL-wantA) > 1e-15 || a.MaxKL != swap {
		t.Errorf("prompt a KL mean %v max %v, want %v %v", a.MeanKL, a.MaxKL, wantA, swap)
	}
	// Closed form of the swapped one-hots: p = e^2/(e^2+3) on the peak,
	// 1/(e^2+3) elsewhere; KL = (p - 1/(e^2+3)) * 2.
	e2 := math.Exp(2)
	if want := 2 * (e2 - 1) / (e2 + 3); math.Abs(swap-want) > 1e-15 {
		t.Errorf("swap KL %v, want %v", swap, want)
	}
	if rep.Positions != 12 || rep.Top1Matches != 10 || rep.Top1Agreement != 10.0/12 ||
		rep.FullMatches != 1 || rep.MeanTokensToDivergence != 4 || math.Abs(rep.MeanKL-wantA/2) > 1e-15 || rep.MaxKL != swap {
		t.Errorf("summary: %+v", rep)
	}
}

func TestRunSelfIsExact(t *testing.T) {
	ref := &script{vocab: 4, row: func(pos int) []float32 { return []float32{float32(pos), 1.25, -3, 0.5} }}
	rep, err := Run(ref, ref, []string{"x"}, [][]int{{0}}, Options{NewTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Top1Agreement != 1 || rep.MeanKL != 0 || rep.FullMatches != 1 || rep.MeanTokensToDivergence != 5 {
		t.Errorf("%+v", rep)
	}
}

func TestRunErrors(t *testing.T) {
	ref := &script{vocab: 4, row: onehot}
	for _, c := range []struct {
		texts []string
		ids   [][]int
		n     int
		want  string
	}{
		{[]string{"x"}, [][]int{{}}, 3, "empty after tokenization"},
		{[]string{"x"}, [][]int{{1}}, 0, "at least 1"},
		{nil, nil, 3, "no prompts"},
	} {
		_, err := Run(ref, ref, c.texts, c.ids, Options{NewTokens: c.n})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.ids, err, c.want)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCompatibleRefusesOtherVocabOrArch(t *testing.T) {
	a := &script{vocab: 4, row: onehot}
	b := &script{vocab: 5, row: onehot}
	if err := Compatible(a, b, nil, nil); err == nil || !strings.Contains(err.Error(), "vocabularies differ: reference 4 logits, model 5") {
		t.Errorf("vocab: %v", err)
	}
	c := &archScript{script{vocab: 4, row: onehot}}
	if err := Compatible(a, c, nil, nil); err == nil || !strings.Contains(err.Error(), `architectures differ: reference "fake", model "other"`) {
		t.Errorf("arch: %v", err)
	}
}

type archScript struct{ script }

func (s *archScript) Config() *model.Config { return &model.Config{Arch: "other", Vocab: s.vocab} }
