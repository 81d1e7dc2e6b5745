package kernels_test

import (
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// A matrix given packed bytes by Adopt multiplies exactly as the matrix
// they were prepared for, and is not counted in PreparedBytes.
func TestAdopt(t *testing.T) {
	rng := newRNG(7)
	for _, typ := range []tensor.Type{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q6_K, tensor.F16} {
		w := randomMatrix(rng, typ, 21, 512)
		if kernels.PackedLayout(typ) == "" {
			if err := kernels.Adopt(w, nil); err == nil {
				t.Errorf("%s: Adopt succeeded in the %s tier, which does not pack it", typ, kernels.Tier())
			}
			continue
		}
		kernels.Prepare(w)
		packed := append([]byte(nil), kernels.Packed(w)...)
		kernels.Release(w)
		before := kernels.PreparedBytes()
		v := &tensor.Matrix{Name: "adopted", Type: typ, Rows: w.Rows, Cols: w.Cols, Data: w.Data}
		if err := kernels.Adopt(v, packed[:len(packed)-1]); err == nil {
			t.Fatalf("%s: Adopt accepted a short packed copy", typ)
		}
		if err := kernels.Adopt(v, packed); err != nil {
			t.Fatal(err)
		}
		if kernels.PreparedBytes() != before {
			t.Errorf("%s: adopting changed PreparedBytes by %d", typ, kernels.PreparedBytes()-before)
		}
		x := randomVec(rng, 3*w.Cols)
		got, want := make([]float32, 3*w.Rows), make([]float32, 3*w.Rows)
		kernels.MatMul(got, v, x, 3)
		kernels.Prepare(w)
		kernels.MatMul(want, w, x, 3)
		kernels.Release(w)
		kernels.Release(v)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: out[%d] = %g adopted, %g prepared", typ, i, got[i], want[i])
			}
		}
		if kernels.PreparedBytes() != before {
			t.Errorf("%s: PreparedBytes %d after release, want %d", typ, kernels.PreparedBytes(), before)
		}
	}
}
