package grammar

import (
	"math/rand/v2"
	"slices"
	"testing"
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
	}
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
func recordWalk(b *testing.B, g *Grammar, v *Vocab, n int) []int {
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
