package weightpath

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/siskin-ml/siskin/tensor"
)

// rmsError quantizes x to typ and returns the RMS of the reconstruction
// error relative to the RMS of x.
func rmsError(t *testing.T, typ tensor.Type, x []float32) float64 {
	t.Helper()
	n, err := tensor.RowBytes(typ, len(x))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if err := QuantizeRow(b, typ, x); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, len(x))
	if err := tensor.Dequantize(y, typ, b); err != nil {
		t.Fatal(err)
	}
	var e, s float64
	for i := range x {
		d := float64(x[i] - y[i])
		e += d * d
		s += float64(x[i]) * float64(x[i])
	}
	return math.Sqrt(e / s)
}

func gaussian(seed uint64, n int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * 0.02
	}
	return x
}

// The scale search must beat the plain absmax/8 scale (llama.cpp's Q4_0
// rule at group 128) on Gaussian weights, and W8A8 must be near its
// 8-bit bound.
func TestQuantizeError(t *testing.T) {
	x := gaussian(1, 128*256)
	w4 := rmsError(t, tensor.W4A8, x)
	// The same rule as Q4_0 (d = max/-8) at group 128, for comparison.
	naive := naiveW4(x)
	t.Logf("relative RMS error: W4 search %.4f, W4 absmax %.4f, W8 %.5f", w4, naive, rmsError(t, tensor.W8A8, x))
	if w4 >= naive*0.985 {
		t.Errorf("scale search error %.4f is not 1.5%% below the absmax rule's %.4f", w4, naive)
	}
	// Gaussian groups of 128 have max ≈ 2.8σ..3.5σ; a uniform 4-bit grid
	// over that range has error ≈ step/√12 ≈ 0.1σ. 0.13 leaves headroom.
	if w4 > 0.13 {
		t.Errorf("W4 relative RMS error %.4f > 0.13", w4)
	}
	if w8 := rmsError(t, tensor.W8A8, x); w8 > 0.01 {
		t.Errorf("W8 relative RMS error %.5f > 0.01", w8)
	}
}

func naiveW4(x []float32) float64 {
	var e, s float64
	for g := 0; g < len(x); g += 128 {
		var maxv float32
		for _, v := range x[g : g+128] {
			if abs(v) > abs(maxv) {
				maxv = v
			}
		}
		d := fp16Round(maxv / -8)
		for _, v := range x[g : g+128] {
			q := float32(0)
			if d != 0 {
				q = clamp(round(v/d), -8, 7)
			}
			r := float64(v - q*d)
			e += r * r
			s += float64(v) * float64(v)
		}
	}
	return math.Sqrt(e / s)
}

// Exactly representable groups come back exactly; zeros stay zero.
func TestQuantizeExact(t *testing.T) {
	x := make([]float32, 256)
	for i := range 128 {
		x[i] = float32(i%16-8) * 0.25
	}
	b := make([]byte, 2*66)
	if err := QuantizeRow(b, tensor.W4A16, x); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, 256)
	if err := tensor.Dequantize(y, tensor.W4A16, b); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("element %d: %g came back as %g", i, x[i], y[i])
		}
	}
}

func TestQuantizeRowErrors(t *testing.T) {
	if err := QuantizeRow(make([]byte, 66), tensor.W4A8, make([]float32, 100)); err == nil {
		t.Error("a row of 100 elements was accepted")
	}
	if err := QuantizeRow(make([]byte, 18*4), tensor.Q4_0, make([]float32, 128)); err == nil {
		t.Error("Q4_0 was accepted as a weight-path type")
	}
	if err := QuantizeRow(make([]byte, 65), tensor.W4A8, make([]float32, 128)); err == nil {
		t.Error("a short destination was accepted")
	}
}

func BenchmarkQuantizeW4(b *testing.B) {
	x := gaussian(2, 128*64)
	dst := make([]byte, 66*64)
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		QuantizeRow(dst, tensor.W4A8, x)
	}
}
