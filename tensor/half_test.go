package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/siskin-ml/siskin/tensor"
)

// halfValue decodes binary16 arithmetically (not by bit moving), as an
// independent check of FP16ToFloat32.
func halfValue(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 31
	m := float64(h & 1023)
	switch e {
	case 0:
		return sign * m * math.Pow(2, -24)
	case 31:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + m/1024) * math.Pow(2, float64(e-15))
}

func TestFP16AllValues(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := tensor.FP16ToFloat32(h)
		want := halfValue(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("%#04x: %v, want NaN", h, f)
			}
			if back := tensor.Float32ToFP16(f); back&0x7fff != 0x7e00 {
				t.Fatalf("%#04x: NaN narrowed to %#04x", h, back)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("%#04x: %v, want %v", h, f, want)
		}
		if back := tensor.Float32ToFP16(f); back != h {
			t.Fatalf("%#04x round trip gave %#04x", h, back)
		}
	}
}

// nearestHalf rounds x to the nearest binary16 by search over the
// neighbouring representable values, ties to the even bit pattern.
func nearestHalf(x float32) uint16 {
	sign := uint16(0)
	ax := float64(x)
	if ax < 0 || (ax == 0 && math.Signbit(ax)) {
		sign, ax = 0x8000, -ax
	}
	if ax >= 65520 { // half max 65504 plus half an ulp (16)
		return sign | 0x7c00
	}
	best := uint16(0)
	bestErr := math.Inf(1)
	for h := uint16(0); h < 0x7c00; h++ {
		err := math.Abs(halfValue(h) - ax)
		if err < bestErr || (err == bestErr && h&1 == 0) {
			best, bestErr = h, err
		}
	}
	return sign | best
}

func TestFloat32ToFP16Rounding(t *testing.T) {
	// Midpoints and near-midpoints between consecutive halves, across
	// subnormals, normals and the overflow edge.
	for _, h := range []uint16{0, 1, 2, 3, 0x3ff, 0x400, 0x401, 0x3c00, 0x3c01, 0x7bfe, 0x7bff} {
		lo, hi := halfValue(h), halfValue(h+1)
		if h == 0x7bff {
			hi = 65536
		}
		mid := float32((lo + hi) / 2)
		for _, x := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9), -mid} {
			if got, want := tensor.Float32ToFP16(x), nearestHalf(x); got != want {
				t.Errorf("Float32ToFP16(%g) = %#04x, want %#04x", x, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		x := float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-25)))
		if got, want := tensor.Float32ToFP16(x), nearestHalf(x); got != want {
			t.Errorf("Float32ToFP16(%g) = %#04x, want %#04x", x, got, want)
		}
	}
	if got := tensor.Float32ToFP16(float32(math.Inf(-1))); got != 0xfc00 {
		t.Errorf("-Inf -> %#04x", got)
	}
	if got := tensor.Float32ToFP16(1e10); got != 0x7c00 {
		t.Errorf("1e10 -> %#04x", got)
	}
	if got := tensor.Float32ToFP16(1e-10); got != 0 {
		t.Errorf("1e-10 -> %#04x", got)
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80},              // 1
		{0x3f808000, 0x3f80},              // tie, even stays
		{0x3f818000, 0x3f82},              // tie, odd rounds up
		{0x3f808001, 0x3f81},              // above tie
		{0x7f7fffff, 0x7f80},              // max float rounds to inf
		{0x80000000, 0x8000},              // -0
		{0x7f800001, 0x7f80 | 64},         // signalling NaN made quiet
		{0xffc00000, 0xffc0},              // quiet NaN kept
		{0x00000001, 0x0000},              // subnormal rounds to zero
		{0x00008000 | 0x00010000, 0x0002}, // subnormal tie to even
	}
	for _, c := range cases {
		if got := tensor.Float32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	for i := 0; i < 1<<16; i++ {
		f := tensor.BF16ToFloat32(uint16(i))
		if math.Float32bits(f) != uint32(i)<<16 {
			t.Fatalf("BF16ToFloat32(%#04x) = %#08x", i, math.Float32bits(f))
		}
		if !math.IsNaN(float64(f)) && tensor.Float32ToBF16(f) != uint16(i) {
			t.Fatalf("bf16 %#04x round trip failed", i)
		}
	}
}
