package kernels_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// prepareGuarded prepares w with its packed copy ending at an unmapped
// page (so a kernel reading past the end faults) and releases it when
// the test ends.
func prepareGuarded(t testing.TB, w *tensor.Matrix) {
	t.Helper()
	restore := kernels.UsePackAlloc(func(n int) []byte { return guarded(t, n) })
	kernels.Prepare(w)
	restore()
	t.Cleanup(func() { kernels.Release(w) })
}

// checkPacked multiplies the prepared matrix w by the activation rows x
// (n of them) in tier tierName through MatMul, in buffers with sentinels
// on both sides, and checks: every result within tolerance of the generic
// reference, MatVec bit-identical to every MatMul row, the same results
// for every batch size and thread count.
func checkPacked(t testing.TB, tierName string, w *tensor.Matrix, x []float32, n int) {
	t.Helper()
	defer kernels.UseTier(tierName)()
	defer kernels.SetThreads(0)
	if !kernels.IsPrepared(w) {
		prepareGuarded(t, w)
		if !kernels.IsPrepared(w) {
			t.Fatalf("%s %s: Prepare did nothing", tierName, w.Type)
		}
	}
	rows, cols := w.Rows, w.Cols
	run := func(m, threads int) []float32 {
		kernels.SetThreads(threads)
		buf := make([]float32, m*rows+2)
		for j := range buf {
			buf[j] = sentinel
		}
		kernels.MatMul(buf[1:1+m*rows], w, x[:m*cols], m)
		if buf[0] != sentinel || buf[m*rows+1] != sentinel {
			t.Fatalf("%s %s %dx%d: MatMul wrote outside its output", tierName, w.Type, rows, cols)
		}
		return buf[1 : 1+m*rows]
	}
	all := run(n, 1)
	for _, th := range []int{2, 3} {
		if j := sameBits(run(n, th), all); j >= 0 {
			t.Fatalf("%s %s %dx%d: %d threads differ at %d", tierName, w.Type, rows, cols, th, j)
		}
	}
	for _, m := range []int{1, 3, 4, 5, 8} {
		if m < n {
			if j := sameBits(run(m, 2), all[:m*rows]); j >= 0 {
				t.Fatalf("%s %s %dx%d: batch of %d differs from batch of %d at %d", tierName, w.Type, rows, cols, m, n, j)
			}
		}
	}
	one := make([]float32, rows)
	for i := 0; i < n; i++ {
		xi := x[i*cols : (i+1)*cols]
		kernels.MatVec(one, w, xi)
		if j := sameBits(one, all[i*rows:(i+1)*rows]); j >= 0 {
			t.Fatalf("%s %s %dx%d: MatMul row %d differs from MatVec at %d: %v vs %v", tierName, w.Type, rows, cols, i, j, all[i*rows+j], one[j])
		}
		xq := kernels.QuantizeActivations(w.Type, xi)
		for r := 0; r < rows; r++ {
			want := reference(w.Type, w.Row(r), xi, xq)
			tol := tolerance(w.Type, cols, termBound(w.Type, w.Row(r), xi, xq))
			if got := one[r]; math.IsNaN(float64(got)) || math.Abs(float64(got)-float64(want)) > tol {
				t.Fatalf("%s %s %dx%d act %d row %d: %v, generic %v (|d| %.3g > tol %.3g)",
					tierName, w.Type, rows, cols, i, r, got, want, math.Abs(float64(got)-float64(want)), tol)
			}
		}
	}
}

// TestPackedKernels: every tier's packed kernels on ragged row counts
// (incomplete last groups) and several block counts.
func TestPackedKernels(t *testing.T) {
	rng := newRNG(40)
	for _, tierName := range kernels.Tiers() {
		for _, typ := range kernels.PackedTypes(tierName) {
			// 416 and 576: 13 and 18 blocks, every pass the AVX-512 Q4_0
			// and Q8_0 one-row kernels make (Q4_0: one, two, four, eight,
			// eight twice; Q8_0: one, two, four, four several times).
			colsList := []int{32, 64, 96, 416, 576}
			switch typ.BlockSize() {
			case 256:
				colsList = []int{256, 512, 768, 1280}
			case tensor.WeightGroup:
				colsList = []int{128, 256, 384, 640}
			}
			for _, cols := range colsList {
				for _, rows := range []int{1, 7, 8, 9, 16, 17, 43} {
					t.Run(fmt.Sprintf("%s/%s/%dx%d", tierName, typ, rows, cols), func(t *testing.T) {
						w := randomMatrix(rng, typ, rows, cols)
						const n = 9
						checkPacked(t, tierName, w, randomVec(rng, n*cols), n)
					})
				}
			}
		}
	}
}

// TestPackedExactIntegers: with integer scales and exactly quantized
// activations, the packed kernels give the exact products.
func TestPackedExactIntegers(t *testing.T) {
	rng := newRNG(41)
	const rows, cols, n = 13, 1024, 6
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		for _, typ := range kernels.PackedTypes(tierName) {
			if !slices.Contains(quantTypes, typ) {
				continue // float weights: TestPackedKernels
			}
			w := &tensor.Matrix{Name: "w", Type: typ, Rows: rows, Cols: cols, Data: integerRow(rng, typ, rows*cols)}
			prepareGuarded(t, w)
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(rng.IntN(7) - 3)
			}
			for b := 0; b < len(x); b += 32 {
				x[b+rng.IntN(32)] = -127
			}
			out := make([]float32, n*rows)
			kernels.MatMul(out, w, x, n)
			for i := 0; i < n; i++ {
				for r := 0; r < rows; r++ {
					wr := dequant(typ, w.Row(r), cols)
					var want float64
					for e, v := range wr {
						want += float64(v) * float64(x[i*cols+e])
					}
					if got := out[i*rows+r]; float64(got) != want {
						t.Errorf("%s %s act %d row %d: %v, want %v", tierName, typ, i, r, got, want)
					}
				}
			}
		}
		restore()
	}
}

// TestPreparedRegistry: Prepare is idempotent, accounts its bytes, is
// ignored by other tiers and after Release.
func TestPreparedRegistry(t *testing.T) {
	rng := newRNG(42)
	base := kernels.PreparedBytes()
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		for _, typ := range kernels.PackedTypes(tierName) {
			w := randomMatrix(rng, typ, 20, 512)
			if kernels.Prepare(w) != w || !kernels.IsPrepared(w) {
				t.Fatalf("%s %s: not prepared", tierName, typ)
			}
			want := int64(24 * w.RowStride()) // 3 groups of 8 rows
			switch typ {                      // packed as Q4_0/Q8_0: the group's d once per 32
			case tensor.W4A8:
				want = 24 * 512 / 32 * 18
			case tensor.W8A8:
				want = 24 * 512 / 32 * 34
			}
			if got := kernels.PreparedBytes() - base; got != want {
				t.Errorf("%s %s: PreparedBytes grew by %d, want %d", tierName, typ, got, want)
			}
			kernels.Prepare(w)
			if got := kernels.PreparedBytes() - base; got != want {
				t.Errorf("%s %s: preparing twice: %d bytes", tierName, typ, got)
			}
			func() {
				defer kernels.UseTier("generic")()
				if kernels.IsPrepared(w) {
					t.Errorf("%s %s: prepared matrix used by the generic tier", tierName, typ)
				}
				// The generic tier reads the original bytes.
				x := randomVec(rng, 512)
				out := make([]float32, 20)
				kernels.MatVec(out, w, x)
				var xq []byte
				if slices.Contains(quantTypes, typ) {
					xq = kernels.QuantizeActivations(typ, x)
				}
				for r := range out {
					if want := reference(typ, w.Row(r), x, xq); out[r] != want {
						t.Fatalf("%s %s: generic on a prepared matrix: row %d = %v, want %v", tierName, typ, r, out[r], want)
					}
				}
			}()
			kernels.Release(w)
			if kernels.IsPrepared(w) || kernels.PreparedBytes() != base {
				t.Errorf("%s %s: Release left %d bytes", tierName, typ, kernels.PreparedBytes()-base)
			}
		}
		restore()
	}
}

// TestPackedWeightPath: a prepared W4A8 (W8A8) matrix is packed into the
// very bytes of the prepared Q4_0 (Q8_0) matrix of the same values (in
// tiers that do not pack Q4_0/Q8_0: of its row-major rows), and so
// multiplies to the same bits, in every tier with packed kernels;
// ReadBytes counts its row-major bytes before Prepare, the packed ones
// after.
func TestPackedWeightPath(t *testing.T) {
	rng := newRNG(43)
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		for _, c := range []struct {
			typ, ggml tensor.Type
			conv      func([]byte) []byte
		}{{tensor.W4A8, tensor.Q4_0, w4AsQ4_0}, {tensor.W8A8, tensor.Q8_0, w8AsQ8_0}} {
			if !slices.Contains(kernels.PackedTypes(tierName), c.typ) {
				continue
			}
			for _, rows := range []int{5, 8, 21} {
				const cols, n = 640, 6
				w := randomMatrix(rng, c.typ, rows, cols)
				g := &tensor.Matrix{Name: "g", Type: c.ggml, Rows: rows, Cols: cols, Data: c.conv(w.Data)}
				if got := kernels.ReadBytes(w); got != int64(len(w.Data)) {
					t.Fatalf("%s %s %d rows: ReadBytes %d before Prepare, want its %d row-major bytes", tierName, c.typ, rows, got, len(w.Data))
				}
				prepareGuarded(t, w)
				var pg []byte
				if slices.Contains(kernels.PackedTypes(tierName), c.ggml) {
					prepareGuarded(t, g)
					pg = kernels.PackedData(g)
				} else {
					// The tier's Q4_0/Q8_0 kernels read row-major rows
					// (arm64): the copy is g's rows, the last group
					// padded with zero rows.
					pg = append(slices.Clone(g.Data), make([]byte, (8-rows%8)%8*g.RowStride())...)
				}
				pw := kernels.PackedData(w)
				if pw == nil || string(pw) != string(pg) {
					t.Fatalf("%s %s %d rows: packed bytes differ from %s's (%d vs %d bytes)", tierName, c.typ, rows, c.ggml, len(pw), len(pg))
				}
				// Products stream the packed copy, larger than the rows.
				if got := kernels.ReadBytes(w); got != int64(len(pw)) || got <= int64(len(w.Data)) {
					t.Fatalf("%s %s %d rows: ReadBytes %d, packed %d bytes, row-major %d", tierName, c.typ, rows, got, len(pw), len(w.Data))
				}
				x := randomVec(rng, n*cols)
				got, want := make([]float32, n*rows), make([]float32, n*rows)
				kernels.MatMul(got, w, x, n)
				kernels.MatMul(want, g, x, n)
				if j := sameBits(got, want); j >= 0 {
					t.Fatalf("%s %s %d rows: MatMul differs from %s at %d", tierName, c.typ, rows, c.ggml, j)
				}
			}
		}
		restore()
	}
}
