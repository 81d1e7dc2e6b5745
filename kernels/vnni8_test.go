package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// TestPackedEightRows: wherever a tier has an eight-activation-row packed
// kernel, it gives exactly the bits of the four-row kernel (itself
// bit-identical to MatVec: TestPackedKernels) on every row, for pairs of
// groups, quads of groups (the AVX-512 Q4_K and Q4_0 kernels take four
// at a time; run with them on and off) with a pair and an odd group
// after them, one block and many, with the weights before a guard page. Exact equality: the integer sums are exact and
// the float steps per row are the same.
func TestPackedEightRows(t *testing.T) {
	for _, quad := range []bool{true, false} {
		t.Run(fmt.Sprintf("quad=%v", quad), func(t *testing.T) {
			defer kernels.SetQuadVec8(kernels.SetQuadVec8(quad))
			testPackedEightRows(t)
		})
	}
}

func testPackedEightRows(t *testing.T) {
	rng := newRNG(58)
	const n = 16
	for _, tierName := range kernels.Tiers() {
		for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0, tensor.W4A8, tensor.W8A8} {
			if !kernels.PackedVec8(tierName, typ) {
				continue
			}
			colsList := []int{32, 96, 2048}
			switch typ.BlockSize() {
			case 256:
				colsList = []int{256, 1280}
			case tensor.WeightGroup:
				colsList = []int{128, 640}
			}
			for _, cols := range colsList {
				for _, rows := range []int{16, 24, 40, 56, 64} {
					t.Run(fmt.Sprintf("%s/%s/%dx%d", tierName, typ, rows, cols), func(t *testing.T) {
						defer kernels.UseTier(tierName)()
						w, q, want := fourRowTiles(t, rng, typ, rows, cols, n)
						g := rows / 8
						got := make([]float32, n*rows)
						for i := 0; i < n; i += 8 {
							if !kernels.PackedTile(w, got[i*rows:], rows, g, q, i, 8) {
								t.Fatal("no eight-row kernel")
							}
						}
						if j := sameBits(got, want); j >= 0 {
							t.Fatalf("eight rows %v, four rows %v at %d (act %d, row %d)", got[j], want[j], j, j/rows, j%rows)
						}
					})
				}
			}
		}
	}
}

// TestPackedPaddedTail: batches whose last 5-7 rows run padded to eight
// through the eight-row kernel (forced from 5 rows on for every type)
// keep every row bit-identical to MatVec, across batch sizes and thread
// counts, within tolerance of the generic reference (checkPacked).
func TestPackedPaddedTail(t *testing.T) {
	defer kernels.SetPadRows(kernels.SetPadRows(5))
	rng := newRNG(60)
	for _, tierName := range kernels.Tiers() {
		for _, typ := range kernels.PackedTypes(tierName) {
			if !kernels.PackedVec8(tierName, typ) {
				continue
			}
			cols := 416
			switch typ.BlockSize() {
			case 256:
				cols = 768
			case tensor.WeightGroup:
				cols = 384
			}
			for _, rows := range []int{9, 17, 43} {
				for _, n := range []int{6, 7, 15} {
					t.Run(fmt.Sprintf("%s/%s/%dx%d/n=%d", tierName, typ, rows, cols, n), func(t *testing.T) {
						w := randomMatrix(rng, typ, rows, cols)
						checkPacked(t, tierName, w, randomVec(rng, n*cols), n)
					})
				}
			}
		}
	}
}

// fourRowTiles prepares a random rows x cols matrix of typ (before a
// guard page), quantizes n random activation rows, and returns them with
// the four-row kernel's products of all groups (rows a multiple of 8).
func fourRowTiles(t *testing.T, rng *rand.Rand, typ tensor.Type, rows, cols, n int) (*tensor.Matrix, *kernels.QuantizedActs, []float32) {
	w := randomMatrix(rng, typ, rows, cols)
	prepareGuarded(t, w)
	q := new(kernels.QuantizedActs)
	q.Quantize(typ, randomVec(rng, n*cols), n)
	want := make([]float32, n*rows)
	for i := 0; i < n; i += 4 {
		kernels.PackedTile(w, want[i*rows:], rows, rows/8, q, i, 4)
	}
	return w, q, want
}
