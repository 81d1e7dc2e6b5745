package grammar

import (
	"os"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
)

// BenchmarkMaskVsDecode times, in one run and alternating, a decode step
// of the model at $SISKIN_BENCH_MODEL (e.g. a `siskin synth --arch qwen3
// --shape 1.7b` file) at batch 1 and 8, and the per-token mask of the
// median corpus schema on the Qwen3 vocabulary; it reports the mask as a
// share of the step.
func BenchmarkMaskVsDecode(b *testing.B) {
	path := os.Getenv("SISKIN_BENCH_MODEL")
	if path == "" {
		b.Skip("set SISKIN_BENCH_MODEL to a model file (siskin synth --arch qwen3 --shape 1.7b)")
	}
	l, err := load.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	m := l.Model
	v := loadQwenVocab(b)
	median, _ := corpusPicks(b)
	g, err := FromJSONSchema(median.src)
	if err != nil {
		b.Fatal(err)
	}
	ids := recordWalk(b, g, v, 64)
	bits := make([]uint64, (v.Size()+63)/64)
	for _, batch := range []int{1, 8} {
		b.Run(map[int]string{1: "batch1", 8: "batch8"}[batch], func(b *testing.B) {
			seqs := make([]model.Seq, batch)
			for i := range seqs {
				seqs[i] = model.Seq{Cache: m.NewCache(), Tokens: []int{5 + i}}
			}
			var tDecode, tMask time.Duration
			masks := 0
			mt := NewMatcher(g, v)
			step := 0
			for b.Loop() {
				t0 := time.Now()
				if _, err := m.ForwardBatch(seqs); err != nil {
					b.Fatal(err)
				}
				tDecode += time.Since(t0)
				t0 = time.Now()
				for range batch { // one mask per sequence
					if step == len(ids) {
						mt, step = NewMatcher(g, v), 0
					}
					mt.FillMask(bits)
					if err := mt.Accept(ids[step]); err != nil {
						b.Fatal(err)
					}
					step++
					masks++
				}
				tMask += time.Since(t0)
			}
			b.ReportMetric(float64(tMask)/float64(tDecode)*100, "mask%ofstep")
			b.ReportMetric(float64(tMask.Nanoseconds())/float64(masks), "ns/mask")
		})
	}
}
