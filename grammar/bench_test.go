package grammar

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// corpusPicks returns the compiled corpus schemas ordered by size: the
// median and the largest are what the benchmarks report.
func corpusPicks(b *testing.B) (median, largest corpusSchema) {
	var ok []corpusSchema
	for _, s := range loadCorpus(b) {
		if _, err := compileSchema(s.src); err == nil {
			ok = append(ok, s)
		}
	}
	slices.SortFunc(ok, func(x, y corpusSchema) int { return len(x.src) - len(y.src) })
	return ok[len(ok)/2], ok[len(ok)-1]
}

// BenchmarkCompile is the uncached compile time (JSON Schema to grammar;
// token masks are computed per position on first use, see BenchmarkMask).
func BenchmarkCompile(b *testing.B) {
	median, largest := corpusPicks(b)
	for _, c := range []struct {
		name string
		s    corpusSchema
	}{{"median", median}, {"largest", largest}} {
		b.Run(c.name, func(b *testing.B) {
			b.Logf("%s: %s, %d bytes", c.name, c.s.name, len(c.s.src))
			for b.Loop() {
				if _, err := compileSchema(c.s.src); err != nil {
					b.Fatal(err)
				}
			}
		})
		// A schema seen before: hashed and looked up, not compiled.
		b.Run(c.name+"-cached", func(b *testing.B) {
			if _, err := FromJSONSchema(c.s.src); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := FromJSONSchema(c.s.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMaskCorpusWorst replays a recorded 64-token output of every
// compiled corpus schema (masks warm) and reports the slowest schema's
// per-token cost (FillMask and Accept), naming it in the log.
func BenchmarkMaskCorpusWorst(b *testing.B) {
	v := loadQwenVocab(b)
	bits := make([]uint64, (v.Size()+63)/64)
	worst, worstName := 0.0, ""
	for _, s := range loadCorpus(b) {
		g, err := FromJSONSchema(s.src)
		if err != nil {
			continue
		}
		ids := recordWalk(b, g, v, 64)
		replay := func() {
			m := NewMatcher(g, v)
			for _, id := range ids {
				m.FillMask(bits)
				if err := m.Accept(id); err != nil {
					b.Fatal(err)
				}
			}
		}
		replay()
		t0 := time.Now()
		for range 3 {
			replay()
		}
		if ns := float64(time.Since(t0).Nanoseconds()) / float64(3*len(ids)); ns > worst {
			worst, worstName = ns, s.name
		}
	}
	b.Logf("worst per-token mask: %s, %.0f ns/token", worstName, worst)
	for b.Loop() {
	}
	b.ReportMetric(worst, "worst-ns/token")
}

// BenchmarkMask is the per-token mask cost on the Qwen3 vocabulary
// (151,669 tokens): a recorded random output is replayed, one FillMask
// and Accept per token, with the per-position masks already computed
// (the first request of a schema pays for those once).
func BenchmarkMask(b *testing.B) {
	v := loadQwenVocab(b)
	median, largest := corpusPicks(b)
	for _, c := range []struct {
		name string
		s    corpusSchema
	}{{"median", median}, {"largest", largest}} {
		b.Run(c.name, func(b *testing.B) {
			g, err := FromJSONSchema(c.s.src)
			if err != nil {
				b.Fatal(err)
			}
			ids := recordWalk(b, g, v, 64)
			bits := make([]uint64, (v.Size()+63)/64)
			replay := func() {
				m := NewMatcher(g, v)
				for _, id := range ids {
					m.FillMask(bits)
					if err := m.Accept(id); err != nil {
						b.Fatal(err)
					}
				}
			}
			replay() // computes the masks of the positions visited
			for b.Loop() {
				replay()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
		})
	}
}

// recordWalk draws a random output of up to n tokens, ending when it may.
func recordWalk(b testing.TB, g *Grammar, v *Vocab, n int) []int {
	rng := rand.New(rand.NewPCG(7, 8))
	m := NewMatcher(g, v)
	bits := make([]uint64, (v.Size()+63)/64)
	var ids []int
	for range n {
		m.FillMask(bits)
		id := pickBit(bits, rng)
		if m.CanEnd() {
			id = int(v.ends[0])
		}
		if err := m.Accept(id); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
		if m.Done() {
			break
		}
	}
	return ids
}
