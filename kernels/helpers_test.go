package kernels_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/siskin-ml/siskin/tensor"
)

// allTypes are the weight types the kernels support.
var allTypes = []tensor.Type{tensor.F32, tensor.F16, tensor.BF16, tensor.Q4_0, tensor.Q4_1, tensor.Q8_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
	tensor.W4A8, tensor.W4A16, tensor.W8A8, tensor.W16A16}

// quantTypes are the quantized weight types (W4A16 among them: its
// weights are quantized, its activations are not).
var quantTypes = allTypes[3:]

// floatActs reports whether MatMul gives weights of type t the float32
// activations themselves (the reference is then Dot).
func floatActs(t tensor.Type) bool {
	return t == tensor.F32 || t == tensor.F16 || t == tensor.BF16 || t == tensor.W4A16
}

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func putHalf(b []byte, f float32) { binary.LittleEndian.PutUint16(b, tensor.Float32ToFP16(f)) }

// scaleFields sets the fp16 scale fields of one block of type t. Other
// bytes stay random: every bit pattern of the quants is valid.
func scaleFields(t tensor.Type, blk []byte, d, dmin float32) {
	switch t {
	case tensor.Q4_0, tensor.Q8_0, tensor.W4A8, tensor.W4A16, tensor.W8A8:
		putHalf(blk[0:], d)
	case tensor.Q4_1:
		putHalf(blk[0:], d)
		putHalf(blk[2:], dmin)
	case tensor.Q4_K, tensor.Q5_K:
		putHalf(blk[0:], d)
		putHalf(blk[2:], dmin)
	case tensor.Q6_K:
		putHalf(blk[208:], d)
	}
}

// randomRow returns n random elements of type t with weight-like scales
// (values of order 0.1).
func randomRow(rng *rand.Rand, t tensor.Type, n int) []byte {
	nb, err := tensor.RowBytes(t, n)
	if err != nil {
		panic(err)
	}
	b := make([]byte, nb)
	switch t {
	case tensor.F32:
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(0.1*rng.NormFloat64())))
		}
	case tensor.F16:
		for i := 0; i < n; i++ {
			putHalf(b[2*i:], float32(0.1*rng.NormFloat64()))
		}
	case tensor.BF16, tensor.W16A16:
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(b[2*i:], tensor.Float32ToBF16(float32(0.1*rng.NormFloat64())))
		}
	default:
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		bb := t.BlockBytes()
		for off := 0; off < nb; off += bb {
			d := float32(0.005 + 0.02*rng.Float64())
			dmin := d
			switch t {
			case tensor.Q4_1:
				dmin = -8 * d * float32(0.5+rng.Float64())
			case tensor.Q4_K, tensor.Q5_K:
				d /= 16 // sub-block scales go up to 63
				dmin = d * float32(rng.Float64())
			case tensor.Q6_K:
				d /= 64 // int8 sub-block scales
			}
			scaleFields(t, b[off:off+bb], d, dmin)
		}
	}
	return b
}

// integerRow returns random quantized blocks whose fp16 scales are
// integers, so every dequantized weight is a small integer.
func integerRow(rng *rand.Rand, t tensor.Type, n int) []byte {
	if t == tensor.W16A16 { // no scales: integers in [-8, 8], exact in BF16
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(b[2*i:], tensor.Float32ToBF16(float32(rng.IntN(17)-8)))
		}
		return b
	}
	b := randomRow(rng, t, n)
	bb := t.BlockBytes()
	for off := 0; off < len(b); off += bb {
		dmin := float32(1)
		if t == tensor.Q4_1 {
			dmin = -8
		}
		scaleFields(t, b[off:off+bb], 1, dmin)
	}
	return b
}

func randomVec(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// activationValues decodes quantized activations (Q8_0, Q8_1 or Q8_K) to
// float64, written from the block layouts independently of the package.
func activationValues(vt tensor.Type, xq []byte, n int) []float64 {
	out := make([]float64, n)
	switch vt {
	case tensor.Q8_0, tensor.Q8_1:
		bb, q0 := 34, 2
		if vt == tensor.Q8_1 {
			bb, q0 = 36, 4
		}
		for i := 0; i < n; i++ {
			blk := xq[i/32*bb:]
			d := float64(tensor.FP16ToFloat32(binary.LittleEndian.Uint16(blk)))
			out[i] = d * float64(int8(blk[q0+i%32]))
		}
	case tensor.Q8_K:
		for i := 0; i < n; i++ {
			blk := xq[i/256*292:]
			d := float64(math.Float32frombits(binary.LittleEndian.Uint32(blk)))
			out[i] = d * float64(int8(blk[4+i%256]))
		}
	default:
		panic("not a quantized activation type")
	}
	return out
}

func dequant(t tensor.Type, row []byte, n int) []float32 {
	w := make([]float32, n)
	if err := tensor.Dequantize(w, t, row); err != nil {
		panic(err)
	}
	return w
}

func randomMatrix(rng *rand.Rand, t tensor.Type, rows, cols int) *tensor.Matrix {
	return &tensor.Matrix{Name: "w", Type: t, Rows: rows, Cols: cols, Data: randomRow(rng, t, rows*cols)}
}

func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
