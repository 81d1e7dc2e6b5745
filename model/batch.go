package model

import (
	"fmt"
	"github.com/siskin-ml/siskin/tensor"

	"github.com/siskin-ml/siskin/kv"
)

// Seq is one sequence's share of a batched forward step: its cache and the
// tokens that follow what the cache holds.
type Seq struct {
	Cache     *kv.Cache
	Tokens    []int
	AllLogits bool // logits for every token, otherwise only for the last
	// Hidden asks for the final normalized hidden states (Config.Hidden
	// per row, the rows AllLogits picks) instead of logits: embeddings.
	Hidden bool
}

// Batch lays the tokens of several sequences out as the rows of one set
// of activations, so every weight matrix is read once per step for all of
// them.
type Batch struct {
	Seqs    []Seq
	Tokens  []int       // all rows' tokens, sequence after sequence
	Pos     []int       // each row's position in its sequence
	Cache   []*kv.Cache // each row's cache
	Row0    []int       // index of the first row of each row's sequence
	OutRows []int       // rows whose logits are returned, in order
	MaxLen  int         // longest sequence after this step
}

// NewBatch checks the tokens and lays out the rows.
func (c *Config) NewBatch(seqs []Seq) (*Batch, error) {
	if len(seqs) == 0 {
		return nil, fmt.Errorf("empty batch")
	}
	b := &Batch{Seqs: seqs}
	for i, s := range seqs {
		if err := c.CheckTokens(s.Tokens); err != nil {
			return nil, fmt.Errorf("sequence %d: %w", i, err)
		}
		// Attention rounds a step's rows once for the whole batch.
		if t := s.Cache.Type(); t != seqs[0].Cache.Type() {
			return nil, fmt.Errorf("sequence %d: %s cache in a batch of %s caches", i, t, seqs[0].Cache.Type())
		}
		start, row0 := s.Cache.Len(), len(b.Tokens)
		for j, t := range s.Tokens {
			if s.AllLogits || j == len(s.Tokens)-1 {
				b.OutRows = append(b.OutRows, len(b.Tokens))
			}
			b.Tokens = append(b.Tokens, t)
			b.Pos = append(b.Pos, start+j)
			b.Cache = append(b.Cache, s.Cache)
			b.Row0 = append(b.Row0, row0)
		}
		b.MaxLen = max(b.MaxLen, start+len(s.Tokens))
	}
	return b, nil
}

// Gather copies the rows of x (width d) whose logits are wanted into dst.
func (b *Batch) Gather(dst, x []float32, d int) []float32 {
	dst = dst[:len(b.OutRows)*d]
	for i, r := range b.OutRows {
		copy(dst[i*d:(i+1)*d], x[r*d:(r+1)*d])
	}
	return dst
}

// Split cuts the logits of the output rows into one slice per sequence.
func (b *Batch) Split(logits []float32, vocab int) [][]float32 {
	out := make([][]float32, len(b.Seqs))
	off := 0
	for i, s := range b.Seqs {
		n := 1
		if s.AllLogits {
			n = len(s.Tokens)
		}
		out[i] = logits[off*vocab : (off+n)*vocab : (off+n)*vocab]
		off += n
	}
	return out
}

// Head is the output head the decoder models share: the final RMSNorm
// (weights norm) of the output rows x (width d), then per sequence the
// logits through output, or the normed rows themselves for a sequence
// that asked for Hidden. A batch without Hidden sequences runs exactly
// the norm and one matrix product over all output rows.
func (b *Batch) Head(x []float32, d int, norm []float32, eps float32, output *tensor.Matrix, vocab int) [][]float32 {
	no := len(b.OutRows)
	rows := make([]int, len(b.Seqs)) // output rows per sequence
	hidden := false
	for i, s := range b.Seqs {
		rows[i] = 1
		if s.AllLogits {
			rows[i] = len(s.Tokens)
		}
		hidden = hidden || s.Hidden
	}
	// The gathered rows, and the normed ones unless a sequence keeps
	// them, are scratch (see GetScratch: fresh memory every step cost
	// page faults).
	bufs, free := TakeScratch(no*d, no*d)
	defer free()
	x = b.Gather(bufs[0], x, d)
	h := bufs[1]
	if hidden {
		h = make([]float32, no*d) // returned to the sequences that asked
	}
	RMSNormRows(h, x, norm, eps)
	want := h // the rows that need logits, in order
	if hidden {
		want = nil
		off := 0
		for i, s := range b.Seqs {
			if !s.Hidden {
				want = append(want, h[off*d:(off+rows[i])*d]...)
			}
			off += rows[i]
		}
	}
	logits := newLogits(len(want) / d * vocab)
	if len(want) > 0 {
		Linear(logits, output, want, len(want)/d)
	}
	out := make([][]float32, len(b.Seqs))
	off, lo := 0, 0
	for i, s := range b.Seqs {
		if s.Hidden {
			out[i] = h[off*d : (off+rows[i])*d : (off+rows[i])*d]
		} else {
			out[i] = logits[lo*vocab : (lo+rows[i])*vocab : (lo+rows[i])*vocab]
			lo += rows[i]
		}
		off += rows[i]
	}
	return out
}
