package qwen3

import (
	"fmt"

	"github.com/siskin-ml/siskin/ledger"
	"github.com/siskin-ml/siskin/model"
)

// RegisterMemory adds the heap the model holds besides its mapped
// weights: the float32 norm vectors (with the per-head q and k norms) and
// the RoPE table.
func (m *Model) RegisterMemory(l *ledger.Ledger) {
	vecs := append([][]float32{m.outNorm}, m.dec.Norms()...)
	model.AddVectors(l, "norm vectors (float32)", vecs...)
	model.AddRoPE(l, fmt.Sprintf("RoPE table (rot %d)", m.dec.Rope.Rot()), m.dec.Rope)
}
