package spark2_5

import (
	"fmt"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/ledger"
	"github.com/siskin-ml/siskin/model"
)

// RegisterMemory adds the heap the model holds besides its mapped
// weights: the float32 norm vectors and one RoPE table per layer type.
func (m *Model) RegisterMemory(l *ledger.Ledger) {
	vecs := [][]float32{m.outNorm}
	seen := map[*kernels.RoPETable]bool{}
	for _, ly := range m.layers {
		vecs = append(vecs, ly.attnNorm, ly.ffnNorm)
		if seen[ly.rope] {
			continue
		}
		seen[ly.rope] = true
		kind := "full"
		if ly.window > 0 {
			kind = "sliding"
		}
		model.AddRoPE(l, fmt.Sprintf("RoPE table, %s layers (rot %d)", kind, ly.rope.Rot()), ly.rope)
	}
	model.AddVectors(l, "norm vectors (float32)", vecs...)
}
