// Package kernels is siskin's math: dot products of weight rows (any
// supported tensor.Type) with activations, matrix-vector and
// matrix-matrix products, and the elementwise and row operations of a
// transformer.
//
// Dot, DotQ and the generic tier of MatVec/MatMul are the pure-Go
// reference, always compiled: the oracle that the SIMD kernels are tested
// against, so it favours plain, checkable code over speed. MatVec and
// MatMul dispatch at start-up to the best tier the CPU runs (tier.go:
// "avx2" on amd64 with AVX2+FMA+F16C, in assembly, per matrix rather than
// per row); SISKIN_KERNELS=generic|avx2 pins one, and the build tag purego
// leaves only Go. The SIMD tiers compute the same integer sums exactly and
// differ from the reference only in the order of float additions (bounds
// in tier_test.go); within a tier, results do not depend on the thread
// count and a batched MatMul row equals MatVec bit for bit. Products run
// on a persistent worker pool (pool.go, sized by SetThreads).
//
// Two numeric paths exist for quantized weights:
//   - the float path (Dot, MatVecFloat) dequantizes the weights and
//     multiplies them with float32 activations, accumulating in float64;
//   - the llama.cpp path (QuantizeActivations, DotQ, MatVec, MatMul)
//     quantizes the activations to 8 bits first and reproduces ggml's
//     generic C vec_dot_* functions, because llama.cpp's logits, the
//     goldens for quantized models, are computed that way.
//
// Go may fuse x*y+z into one FMA, even across statements, which ggml's
// reference does not do; products that feed an addition are therefore
// wrapped in explicit float32()/float64() conversions, which forbid fusion.
//
// Kernels panic on inconsistent lengths, like an index out of range: they
// are called by code that has already validated its shapes.
package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// dotChunk is how many elements Dot dequantizes at a time: one K-quant
// super-block, or 8 blocks of the 32-element types. It lives on the stack.
const dotChunk = tensor.QK_K

// Dot returns the dot product of one weight row of type t (the bytes of
// len(x) elements) with the float32 activations x. Products are exact in
// float64 and summed in float64 in element order, then rounded once; for
// quantized types the weights are first dequantized bit-exactly as ggml
// does. It does not allocate.
func Dot(t tensor.Type, row []byte, x []float32) float32 {
	checkRow(t, row, len(x))
	switch t {
	case tensor.F32:
		return dotF32(row, x)
	case tensor.F16:
		return dotF16(row, x)
	case tensor.BF16:
		return dotBF16(row, x)
	}
	return dotQuant(t, row, x)
}

type dotFn func(row []byte, x []float32) float32

func dotFunc(t tensor.Type) dotFn {
	switch t {
	case tensor.F32:
		return dotF32
	case tensor.F16:
		return dotF16
	case tensor.BF16:
		return dotBF16
	}
	return func(row []byte, x []float32) float32 { return dotQuant(t, row, x) }
}

// checkRow panics unless row holds exactly n elements of type t.
func checkRow(t tensor.Type, row []byte, n int) {
	if !t.Supported() {
		panic(fmt.Sprintf("kernels: unsupported weight type %s", t))
	}
	want, err := tensor.RowBytes(t, n)
	if err != nil {
		panic("kernels: " + err.Error())
	}
	if len(row) != want {
		panic(fmt.Sprintf("kernels: %s row of %d elements needs %d bytes, got %d", t, n, want, len(row)))
	}
}

// The products of two float32 values are exact in float64, so a fused
// multiply-add here would give the same result; no conversion is needed.

func dotF32(row []byte, x []float32) float32 {
	var s float64
	for i, xv := range x {
		s += float64(math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))) * float64(xv)
	}
	return float32(s)
}

func dotF16(row []byte, x []float32) float32 {
	var s float64
	for i, xv := range x {
		s += float64(tensor.FP16ToFloat32(binary.LittleEndian.Uint16(row[2*i:]))) * float64(xv)
	}
	return float32(s)
}

func dotBF16(row []byte, x []float32) float32 {
	var s float64
	for i, xv := range x {
		s += float64(tensor.BF16ToFloat32(binary.LittleEndian.Uint16(row[2*i:]))) * float64(xv)
	}
	return float32(s)
}

func dotQuant(t tensor.Type, row []byte, x []float32) float32 {
	bs, bb := t.BlockSize(), t.BlockBytes()
	var buf [dotChunk]float32
	var s float64
	for off := 0; off < len(x); off += dotChunk {
		m := min(dotChunk, len(x)-off) // a whole number of blocks: dotChunk is a multiple of every block size
		w := buf[:m]
		if err := tensor.Dequantize(w, t, row[off/bs*bb:(off+m)/bs*bb]); err != nil {
			panic("kernels: " + err.Error())
		}
		xs := x[off : off+m]
		for i, wv := range w {
			s += float64(wv) * float64(xs[i])
		}
	}
	return float32(s)
}
