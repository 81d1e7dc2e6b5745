package qwen3tts

import (
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/qwen3"
	"github.com/siskin-ml/siskin/tensor"
)

// stepOut is one decoder step of a batch: the final-normed rows (all of
// them, sequence after sequence) and per sequence the logits of its last
// row.
type stepOut struct {
	normed []float32
	last   [][]float32 // normed last row per sequence
	logits [][]float32
}

// run passes counts[i] rows of x (width d.Cfg.Hidden) per cache through
// a decoder stack, its final norm, and head on each sequence's last row.
// each, if not nil, sees the residual stream after every layer.
func run(dec *qwen3.Decoder, norm []float32, caches []*kv.Cache, counts []int, x []float32, head *tensor.Matrix, each func(int, []float32)) stepOut {
	c := dec.Cfg
	b := rowBatch(caches, counts)
	dec.Run(b, x, each)
	n, h := len(b.Tokens), c.Hidden
	out := stepOut{normed: make([]float32, n*h)}
	model.RMSNormRows(out.normed, x, norm, c.Eps)
	last := make([]float32, len(caches)*h)
	r := 0
	for i, k := range counts {
		r += k
		copy(last[i*h:(i+1)*h], out.normed[(r-1)*h:r*h])
	}
	logits := make([]float32, len(caches)*head.Rows)
	model.Linear(logits, head, last, len(caches))
	for i := range caches {
		out.last = append(out.last, last[i*h:(i+1)*h:(i+1)*h])
		out.logits = append(out.logits, logits[i*head.Rows:(i+1)*head.Rows:(i+1)*head.Rows])
	}
	return out
}
