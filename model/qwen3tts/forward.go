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
	// The memory of last and logits, for a run into this one.
	lastBuf, logitsBuf []float32
}

// run passes counts[i] rows of x (width d.Cfg.Hidden) per cache through
// a decoder stack, its final norm, and head on each sequence's last row.
// each, if not nil, sees the residual stream after every layer. The
// result lives in into's memory when into is not nil (valid until the
// next run into it: the predictor's sub-steps reuse one), else in new.
func run(dec *qwen3.Decoder, norm []float32, caches []*kv.Cache, counts []int, x []float32, head *tensor.Matrix, each func(int, []float32), into *stepOut) stepOut {
	c := dec.Cfg
	b := rowBatch(caches, counts)
	dec.Run(b, x, each)
	n, h := len(b.Tokens), c.Hidden
	var out stepOut
	if into != nil {
		out = *into
	}
	out.normed = resize(out.normed, n*h)
	model.RMSNormRows(out.normed, x, norm, c.Eps)
	last := resize(out.lastBuf, len(caches)*h)
	r := 0
	for i, k := range counts {
		r += k
		copy(last[i*h:(i+1)*h], out.normed[(r-1)*h:r*h])
	}
	logits := resize(out.logitsBuf, len(caches)*head.Rows)
	model.Linear(logits, head, last, len(caches))
	out.last, out.logits = out.last[:0], out.logits[:0]
	for i := range caches {
		out.last = append(out.last, last[i*h:(i+1)*h:(i+1)*h])
		out.logits = append(out.logits, logits[i*head.Rows:(i+1)*head.Rows:(i+1)*head.Rows])
	}
	out.lastBuf, out.logitsBuf = last, logits
	if into != nil {
		*into = out
	}
	return out
}

// resize returns s with length n, reusing its memory when it has room.
func resize(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}
