package kernels_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// TestDotMatchesDequantized: Dot must equal dequantizing the whole row and
// summing the exact float64 products in element order: tolerance zero.
func TestDotMatchesDequantized(t *testing.T) {
	rng := newRNG(1)
	for _, typ := range allTypes {
		for _, n := range []int{256, 768, 2048} {
			for trial := 0; trial < 5; trial++ {
				row := randomRow(rng, typ, n)
				x := randomVec(rng, n)
				w := dequant(typ, row, n)
				var want float64
				for i := range w {
					want += float64(w[i]) * float64(x[i])
				}
				if got := kernels.Dot(typ, row, x); got != float32(want) {
					t.Errorf("%s n=%d: Dot = %v, want %v", typ, n, got, float32(want))
				}
			}
		}
	}
}

// TestDotQAgainstFloat64: DotQ against the float64 dot of the dequantized
// weights with the dequantized 8-bit activations. The only differences are
// DotQ's float32 scaling and accumulation and the float32 rounding of the
// dequantized weights (which for the K-quants can cancel: d*sc*q -
// dmin*m), so the tolerance is 1e-6 of sum |block max weight * a_i|
// (observed: about 1e-8).
func TestDotQAgainstFloat64(t *testing.T) {
	rng := newRNG(2)
	for _, typ := range allTypes {
		vt := kernels.VecDotType(typ)
		worst := 0.0
		for _, n := range []int{256, 1024, 4096} {
			for trial := 0; trial < 10; trial++ {
				row := randomRow(rng, typ, n)
				x := randomVec(rng, n)
				xq := kernels.QuantizeActivations(typ, x)
				w := dequant(typ, row, n)
				var a []float64
				if vt == typ || vt == tensor.F32 || vt == tensor.BF16 { // float types: activations in the weight's own type (F32 for W4A16, BF16 for W16A16)
					a = make([]float64, n)
					for i, v := range dequant(vt, xq, n) {
						a[i] = float64(v)
					}
				} else {
					a = activationValues(vt, xq, n)
				}
				bs := max(typ.BlockSize(), 32)
				var want, scale float64
				for b := 0; b < n; b += bs {
					var amax float64
					for _, v := range w[b : b+bs] {
						amax = max(amax, math.Abs(float64(v)))
					}
					for i := b; i < b+bs; i++ {
						want += float64(w[i]) * a[i]
						scale += amax * math.Abs(a[i])
					}
				}
				if typ == tensor.Q4_1 {
					// ggml applies the min through s = fp16(d*sum(q)) of
					// the Q8_1 block, not the exact sum of the activations.
					for b := 0; b < n/32; b++ {
						m := float64(tensor.FP16ToFloat32(binary.LittleEndian.Uint16(row[20*b+2:])))
						sy := float64(tensor.FP16ToFloat32(binary.LittleEndian.Uint16(xq[36*b+2:])))
						var sa float64
						for _, v := range a[32*b : 32*b+32] {
							sa += v
						}
						want += m * (sy - sa)
					}
				}
				got := float64(kernels.DotQ(typ, row, xq))
				err := math.Abs(got - want)
				worst = max(worst, err/scale)
				if err > 1e-6*scale {
					t.Errorf("%s n=%d: DotQ = %v, float64 reference %v (|d| %.3g, scale %.3g)", typ, n, got, want, err, scale)
				}
			}
		}
		t.Logf("%s: worst |DotQ-ref|/scale = %.2g", typ, worst)
	}
}

// TestDotQExactIntegers: with integer weight scales and activations that
// quantize exactly (each block holds -127, so d = 1 for every Q8 flavour),
// all arithmetic is exact and DotQ must equal the integer dot product.
// This pins down the packing, the sub-block scales and the mins path.
func TestDotQExactIntegers(t *testing.T) {
	rng := newRNG(3)
	const n = 512
	for _, typ := range quantTypes {
		for trial := 0; trial < 20; trial++ {
			row := integerRow(rng, typ, n)
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.IntN(7) - 3)
			}
			for b := 0; b < n; b += 32 {
				x[b+rng.IntN(32)] = -127
			}
			xq := kernels.QuantizeActivations(typ, x)
			w := dequant(typ, row, n)
			var want float64
			for i := range w {
				want += float64(w[i]) * float64(x[i])
			}
			if want != math.Trunc(want) || math.Abs(want) > 1<<24 {
				t.Fatalf("%s: test values not small integers: %v", typ, want)
			}
			if got := kernels.DotQ(typ, row, xq); float64(got) != want {
				t.Errorf("%s trial %d: DotQ = %v, want %v", typ, trial, got, want)
			}
		}
	}
}

// TestQuantizeActivations checks the 8-bit formats: round-trip error
// bounds, rounding modes, the Q8_1 sum and the Q8_K sign and block sums.
func TestQuantizeActivations(t *testing.T) {
	rng := newRNG(4)
	const n = 1024
	for _, typ := range []tensor.Type{tensor.Q8_0, tensor.Q4_1, tensor.Q4_K} {
		vt := kernels.VecDotType(typ)
		for trial := 0; trial < 20; trial++ {
			x := randomVec(rng, n)
			for i := range x {
				x[i] *= float32(1 + 100*float64(trial%3)) // several magnitudes
			}
			xq := kernels.QuantizeActivations(typ, x)
			if len(xq) != kernels.ActivationBytes(typ, n) {
				t.Fatalf("%s: %d bytes", vt, len(xq))
			}
			a := activationValues(vt, xq, n)
			bs := vt.BlockSize()
			for b := 0; b < n; b += bs {
				var amax float64
				for _, v := range x[b : b+bs] {
					amax = max(amax, math.Abs(float64(v)))
				}
				// Half a step, plus for the fp16 d of Q8_0/Q8_1 the
				// rounding of d times up to 127 steps.
				bound := 0.5 * amax / 127 * (1 + 1e-6)
				if vt != tensor.Q8_K {
					bound += amax / 1024
				}
				for i := b; i < b+bs; i++ {
					if e := math.Abs(a[i] - float64(x[i])); e > bound {
						t.Fatalf("%s: element %d: %v -> %v, error %.3g > %.3g", vt, i, x[i], a[i], e, bound)
					}
				}
			}
			switch vt {
			case tensor.Q8_1:
				for b := 0; b < n/32; b++ {
					blk := xq[36*b:]
					sum := 0
					for _, q := range blk[4:36] {
						sum += int(int8(q))
					}
					d := tensor.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
					// s is computed from the unrounded d, so allow one fp16
					// rounding of d on top of s's own.
					s := tensor.FP16ToFloat32(binary.LittleEndian.Uint16(blk[2:]))
					if math.Abs(float64(s)-float64(sum)*float64(d)) > math.Abs(float64(sum)*float64(d))/512+1e-6 {
						t.Fatalf("Q8_1 block %d: s = %v, sum*d = %v", b, s, float64(sum)*float64(d))
					}
				}
			case tensor.Q8_K:
				for b := 0; b < n/256; b++ {
					blk := xq[292*b:]
					for g := 0; g < 16; g++ {
						sum := 0
						for _, q := range blk[4+16*g : 4+16*g+16] {
							sum += int(int8(q))
						}
						if got := int(int16(binary.LittleEndian.Uint16(blk[260+2*g:]))); got != sum {
							t.Fatalf("Q8_K block %d: bsum[%d] = %d, want %d", b, g, got, sum)
						}
					}
				}
			}
		}
	}

	// Rounding: with a block maximum of magnitude 127 every Q8 flavour has
	// d = 1, so x = ±2.5 shows the tie rule. Q8_0/Q8_1 use roundf (half
	// away from zero); Q8_K uses nearest_int (half to even), and its d has
	// the opposite sign of the largest-magnitude element.
	x := make([]float32, 256)
	x[0], x[1], x[2], x[3] = -127, 2.5, -2.5, 3.5
	q80 := kernels.QuantizeActivations(tensor.Q8_0, x)
	if got := [3]int8{int8(q80[3]), int8(q80[4]), int8(q80[5])}; got != [3]int8{3, -3, 4} {
		t.Errorf("Q8_0 ties: %v, want [3 -3 4]", got)
	}
	q8k := kernels.QuantizeActivations(tensor.Q4_K, x)
	d := math.Float32frombits(binary.LittleEndian.Uint32(q8k))
	if got := [4]int8{int8(q8k[4]), int8(q8k[5]), int8(q8k[6]), int8(q8k[7])}; d != 1 || got != [4]int8{-127, 2, -2, 4} {
		t.Errorf("Q8_K: d = %v, q = %v, want 1, [-127 2 -2 4]", d, got)
	}
	x[0] = 127
	q8k = kernels.QuantizeActivations(tensor.Q4_K, x)
	d = math.Float32frombits(binary.LittleEndian.Uint32(q8k))
	if got := int8(q8k[4]); d != -1 || got != -127 {
		t.Errorf("Q8_K positive max: d = %v, q0 = %d, want -1, -127", d, got)
	}
	// All zero: d = 0 and zero quants, no NaN.
	for _, typ := range quantTypes {
		xq := kernels.QuantizeActivations(typ, make([]float32, 256))
		for i, b := range xq {
			if b != 0 {
				t.Errorf("%s: zero input gave byte %d = %#x", typ, i, b)
				break
			}
		}
	}
}

func TestDotNoAllocs(t *testing.T) {
	rng := newRNG(5)
	const n = 1024
	x := randomVec(rng, n)
	for _, typ := range allTypes {
		row := randomRow(rng, typ, n)
		xq := kernels.QuantizeActivations(typ, x)
		if a := testing.AllocsPerRun(20, func() { kernels.Dot(typ, row, x) }); a != 0 {
			t.Errorf("%s: Dot allocates %v times", typ, a)
		}
		if a := testing.AllocsPerRun(20, func() { kernels.DotQ(typ, row, xq) }); a != 0 {
			t.Errorf("%s: DotQ allocates %v times", typ, a)
		}
		buf := make([]byte, len(xq))
		if a := testing.AllocsPerRun(20, func() { kernels.QuantizeActivationsTo(buf, typ, x) }); a != 0 {
			t.Errorf("%s: QuantizeActivationsTo allocates %v times", typ, a)
		}
	}
}

func TestDotPanicsOnBadLength(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("short row", func() { kernels.Dot(tensor.Q4_0, make([]byte, 17), make([]float32, 32)) })
	mustPanic("partial block", func() { kernels.Dot(tensor.Q4_K, make([]byte, 144), make([]float32, 128)) })
	mustPanic("unsupported", func() { kernels.Dot(tensor.Q5_0, make([]byte, 22), make([]float32, 32)) })
	mustPanic("short xq", func() { kernels.DotQ(tensor.Q4_K, make([]byte, 144), make([]byte, 291)) })
}
