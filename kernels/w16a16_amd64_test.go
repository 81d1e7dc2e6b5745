//go:build amd64 && gc && !purego

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

func needBF16(t testing.TB) {
	if !cpu.X86.HasAVX512BF16 || !supported[tierAVX512] {
		t.Skip("no AVX-512 BF16 (VDPBF16PS) on this CPU: the W16A16 assembly is not tested here")
	}
}

// specialF32 returns a float that is often one of the values where
// rounding, flushing and NaN handling differ: subnormals, zeros,
// infinities, NaNs, halfway cases and the edges of the range.
func specialF32(rng *rand.Rand) float32 {
	switch rng.IntN(12) {
	case 0:
		return math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal or zero
	case 1:
		return math.Float32frombits(rng.Uint32()) // anything, NaNs among it
	case 2:
		return math.Float32frombits(rng.Uint32()&0xffff0000 | 0x8000) // a halfway case
	case 3:
		return []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32,
			0x1p-126, -0x1p-126, float32(math.Copysign(0, -1))}[rng.IntN(8)]
	}
	return float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(12)-6)))
}

func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// TestW16A16QuantTwin: the AVX-512 activation rounding (VCVTNE2PS2BF16)
// gives the Go twin's bytes, padding included.
func TestW16A16QuantTwin(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(16, 16))
	for _, n := range []int{1, 5, 31, 32, 33, 64, 100, 1000, 2048} {
		for trial := 0; trial < 20; trial++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = specialF32(rng)
			}
			want, got := make([]byte, w16a16ActBytes(n)), make([]byte, w16a16ActBytes(n))
			for i := range got {
				got[i], want[i] = 0xa5, 0x5a // padding must be written
			}
			w16a16Quant(want, x)
			w16a16QuantAsm(got, x)
			for i := 0; i < len(got); i += 2 {
				if got[i] != want[i] || got[i+1] != want[i+1] {
					var v float32
					if i/2 < n {
						v = x[i/2]
					}
					t.Fatalf("n=%d element %d (%x): assembly %04x, twin %04x", n, i/2, math.Float32bits(v),
						binary.LittleEndian.Uint16(got[i:]), binary.LittleEndian.Uint16(want[i:]))
				}
			}
		}
	}
}

// TestW16A16VecTwin: the VDPBF16PS kernels for one and four activation
// rows give the Go twin's bits on weights and activations full of special
// values, every count of rows left over (8-row and 6-row groups) and
// ragged last chunks.
func TestW16A16VecTwin(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(16, 17))
	twin := w16a16LanesKernel()
	for _, cols := range []int{1, 17, 31, 32, 33, 64, 95, 100, 1000, 2048} {
		for _, rows := range []int{1, 6, 7, 8, 9, 13, 16, 23} {
			t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
				stride, xs := 2*cols, w16a16ActBytes(cols)
				w := make([]byte, rows*stride)
				for i := 0; i < rows*cols; i++ {
					// Mostly ordinary weights, so sums stay finite and
					// their rounding is exercised; sometimes special ones.
					f := float32(0.1 * rng.NormFloat64())
					if rng.IntN(20) == 0 {
						f = specialF32(rng)
					}
					binary.LittleEndian.PutUint16(w[2*i:], uint16(math.Float32bits(f)>>16))
				}
				x := make([]byte, 4*xs)
				for i := 0; i < 4; i++ {
					row := make([]float32, cols)
					for j := range row {
						row[j] = float32(rng.NormFloat64())
						if rng.IntN(20) == 0 {
							row[j] = specialF32(rng)
						}
					}
					w16a16Quant(x[i*xs:(i+1)*xs], row)
				}
				want := make([]float32, 4*rows)
				for i := 0; i < 4; i++ {
					twin.vec(want[i*rows:(i+1)*rows], w, stride, x[i*xs:(i+1)*xs])
					got := make([]float32, rows)
					w16a16VecAsm(got, w, stride, x[i*xs:(i+1)*xs])
					for r := range got {
						if !sameFloat(got[r], want[i*rows+r]) {
							t.Fatalf("vec act %d row %d: assembly %v, twin %v", i, r, got[r], want[i*rows+r])
						}
					}
				}
				got := make([]float32, 4*rows)
				w16a16Vec4Asm(got, rows, w, stride, rows, x, xs)
				for j := range got {
					if !sameFloat(got[j], want[j]) {
						t.Fatalf("vec4 act %d row %d: assembly %v, twin %v", j/rows, j%rows, got[j], want[j])
					}
				}
			})
		}
	}
}

// TestW16A16TwinOrder pins the lane arithmetic the twin claims: in each
// pair the odd column is added first, each step rounds, and subnormal
// inputs count as zero. With a running sum of 1 and two products of half
// an ulp, adding them one at a time keeps 1 (ties to even), while one
// rounding of both would give 1 + ulp.
func TestW16A16TwinOrder(t *testing.T) {
	one, half := uint16(0x3f80), uint16(0x3380) // 1 and 2^-24
	acc := dpbf16Step(dpbf16Step(1, half, one), half, one)
	if acc != 1 {
		t.Fatalf("two half-ulp steps from 1 gave %v, want 1", acc)
	}
	if got := dpbf16Step(0, 0x0001, one); got != 0 {
		t.Fatalf("a subnormal weight gave %v, want 0", got)
	}
	if !cpu.X86.HasAVX512BF16 || !supported[tierAVX512] {
		return
	}
	// Column 0 puts 1 in lane 0; columns 33 and 32 of the next chunk
	// add the two half-ulp products to it.
	w, x := make([]byte, 128), make([]byte, 128)
	for _, c := range []int{0, 32, 33} {
		binary.LittleEndian.PutUint16(w[2*c:], half)
		binary.LittleEndian.PutUint16(x[2*c:], one)
	}
	binary.LittleEndian.PutUint16(w[0:], one)
	out := make([]float32, 1)
	w16a16VecAsm(out, w, 128, x)
	if out[0] != 1 || dotW16A16Lanes(w, x) != 1 {
		t.Fatalf("assembly %v, twin %v, want 1", out[0], dotW16A16Lanes(w, x))
	}
}
