package kernels_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// A matrix held only packed (built by a Packer group by group, or adopted
// with nil Data) multiplies exactly as the prepared row-major matrix, in
// every batch size and through MatMulQ; Row and MatVecFloat give back its
// rows exactly, the incomplete last group's included; it counts in
// PreparedBytes until released; and another tier refuses it.
func TestPackedOnly(t *testing.T) {
	rng := newRNG(11)
	for _, typ := range []tensor.Type{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q6_K, tensor.W4A8, tensor.W8A8, tensor.F16, tensor.W4A16} {
		cols := 512
		for _, rows := range []int{8, 21, 3} {
			w := randomMatrix(rng, typ, rows, cols)
			k := kernels.NewPacker(typ, rows, cols)
			if kernels.PackedLayout(typ) == "" {
				if k != nil {
					t.Errorf("%s: a Packer in the %s tier, which does not pack it", typ, kernels.Tier())
				}
				continue
			}
			stride := w.RowStride()
			for g := k.Groups() - 1; g >= 0; g-- { // any order
				k.Group(g, w.Data[8*g*stride:(8*g+k.GroupRows(g))*stride])
			}
			kernels.Prepare(w)
			if !bytes.Equal(k.Data(), kernels.Packed(w)) {
				t.Fatalf("%s %dx%d: the Packer's copy differs from Prepare's", typ, rows, cols)
			}
			before := kernels.PreparedBytes()
			v := &tensor.Matrix{Name: "packed-only", Type: typ, Rows: rows, Cols: cols}
			k.Register(v)
			if got := kernels.PreparedBytes() - before; got != int64(len(k.Data())) {
				t.Errorf("%s: registering added %d to PreparedBytes, want %d", typ, got, len(k.Data()))
			}
			// The same bytes adopted (a mapped cache file) work alike.
			a := &tensor.Matrix{Name: "adopted-only", Type: typ, Rows: rows, Cols: cols}
			if err := kernels.Adopt(a, k.Data()); err != nil {
				t.Fatal(err)
			}
			n := 9
			x := randomVec(rng, n*cols)
			want := make([]float32, n*rows)
			kernels.MatMul(want, w, x, n)
			for _, m := range []*tensor.Matrix{v, a} {
				got := make([]float32, n*rows)
				kernels.MatMul(got, m, x, n)
				if j := sameBits(got, want); j >= 0 {
					t.Fatalf("%s %dx%d %s: MatMul differs at %d", typ, rows, cols, m.Name, j)
				}
				var q kernels.QuantizedActs
				q.Quantize(typ, x, n)
				kernels.MatMulQ(got, m, &q)
				if j := sameBits(got, want); j >= 0 {
					t.Fatalf("%s %dx%d %s: MatMulQ differs at %d", typ, rows, cols, m.Name, j)
				}
				kernels.MatVec(got[:rows], m, x[:cols])
				if j := sameBits(got[:rows], want[:rows]); j >= 0 {
					t.Fatalf("%s %dx%d %s: MatVec differs at %d", typ, rows, cols, m.Name, j)
				}
				buf := make([]byte, stride)
				for r := 0; r < rows; r++ {
					if !bytes.Equal(kernels.Row(buf, m, r), w.Row(r)) {
						t.Fatalf("%s %dx%d %s: row %d unpacked wrong", typ, rows, cols, m.Name, r)
					}
				}
				fw, fm := make([]float32, rows), make([]float32, rows)
				kernels.MatVecFloat(fw, w, x[:cols])
				kernels.MatVecFloat(fm, m, x[:cols])
				if j := sameBits(fm, fw); j >= 0 {
					t.Fatalf("%s %dx%d %s: MatVecFloat differs at %d", typ, rows, cols, m.Name, j)
				}
			}
			// Its only copy is in this tier's layout: the generic tier
			// must refuse it rather than read nothing.
			if kernels.Tier() != "generic" {
				func() {
					defer kernels.UseTier("generic")()
					defer func() {
						if r := recover(); r == nil || !strings.Contains(r.(string), "packed for the") {
							t.Errorf("%s: a packed-only matrix in the generic tier: %v", typ, r)
						}
					}()
					kernels.MatMul(make([]float32, rows), v, x[:cols], 1)
				}()
			}
			kernels.Release(w)
			kernels.Release(a)
			kernels.Release(v)
			if got := kernels.PreparedBytes(); got != before-int64(len(k.Data())) {
				t.Errorf("%s: PreparedBytes %d after release, want %d", typ, got, before-int64(len(k.Data())))
			}
		}
	}
}
