package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
)

// TestRowsThreads: RMSNormRows, AddRows and ApplyRows give the same bits
// on one thread and on several (rows split between them), and the same
// as the kernels applied to each row in turn; exact equality, since each
// row is computed by one thread with the same code.
func TestRowsThreads(t *testing.T) {
	const n, d, f = 96, 2048, 1536
	rng := rand.New(rand.NewPCG(7, 8))
	vec := func(m int) []float32 {
		v := make([]float32, m)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	x, w, gate, up := vec(n*d), vec(d), vec(n*f), vec(n*f)
	want := make([]float32, n*d)
	for i := 0; i < n; i++ {
		kernels.RMSNorm(want[i*d:(i+1)*d], x[i*d:(i+1)*d], w, 1e-6)
	}
	wantAdd := slices.Clone(x)
	kernels.Add(wantAdd, want)
	wantAct := slices.Clone(gate)
	kernels.SiLUMul(wantAct, up)
	defer kernels.SetThreads(0)
	for _, threads := range []int{1, 2, 3, 8} {
		kernels.SetThreads(threads)
		if threads > 1 && (!rowsParallel(n, d) || !rowsParallel(n, f)) {
			t.Fatalf("%d threads: the rows were not split", threads)
		}
		got := make([]float32, n*d)
		RMSNormRows(got, x, w, 1e-6)
		if !sameBits(got, want) {
			t.Fatalf("%d threads: RMSNormRows differs from the rows one by one", threads)
		}
		sum := slices.Clone(x)
		AddRows(sum, got, n)
		if !sameBits(sum, wantAdd) {
			t.Fatalf("%d threads: AddRows differs from kernels.Add", threads)
		}
		act := slices.Clone(gate)
		ApplyRows(act, up, n, kernels.SiLUMul)
		if !sameBits(act, wantAct) {
			t.Fatalf("%d threads: ApplyRows(SiLUMul) differs from kernels.SiLUMul", threads)
		}
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}
