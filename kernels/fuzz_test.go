package kernels_test

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// Differential fuzz tests, one per SIMD kernel: weights and activations
// built from the fuzzer's bytes go through every tier's kernel (vec and
// vec4, in guarded buffers) and are compared with the generic reference
// (checkKernel). The corpus is in testdata/fuzz; run one with, e.g.,
// go test -fuzz FuzzDotQ4K ./kernels/.

func FuzzDotQ4_0(f *testing.F)  { fuzzDot(f, tensor.Q4_0) }
func FuzzDotQ8_0(f *testing.F)  { fuzzDot(f, tensor.Q8_0) }
func FuzzDotQ4K(f *testing.F)   { fuzzDot(f, tensor.Q4_K) }
func FuzzDotQ5K(f *testing.F)   { fuzzDot(f, tensor.Q5_K) }
func FuzzDotQ6K(f *testing.F)   { fuzzDot(f, tensor.Q6_K) }
func FuzzDotF32(f *testing.F)   { fuzzDot(f, tensor.F32) }
func FuzzDotF16(f *testing.F)   { fuzzDot(f, tensor.F16) }
func FuzzDotBF16(f *testing.F)  { fuzzDot(f, tensor.BF16) }
func FuzzDotW4A8(f *testing.F)  { fuzzDot(f, tensor.W4A8) }
func FuzzDotW4A16(f *testing.F) { fuzzDot(f, tensor.W4A16) }
func FuzzDotW8A8(f *testing.F)  { fuzzDot(f, tensor.W8A8) }

// FuzzDotW16A16: the VDPBF16PS kernels treat subnormal inputs as zero,
// which the generic reference does not, so the weights' subnormals are
// flushed here; TestW16A16VecTwin covers them against the Go twin.
func FuzzDotW16A16(f *testing.F) { fuzzDot(f, tensor.W16A16) }

// FuzzPacked*: the packed kernels (through Prepare, MatMul and MatVec,
// every tier that has them) on matrices and activations built from the
// fuzzer's bytes: within tolerance of the generic reference, MatMul rows
// bit-identical to MatVec, independent of the thread count (checkPacked).
func FuzzPackedQ4_0(f *testing.F) { fuzzPacked(f, tensor.Q4_0) }
func FuzzPackedQ8_0(f *testing.F) { fuzzPacked(f, tensor.Q8_0) }
func FuzzPackedQ4K(f *testing.F)  { fuzzPacked(f, tensor.Q4_K) }
func FuzzPackedQ5K(f *testing.F)  { fuzzPacked(f, tensor.Q5_K) }
func FuzzPackedQ6K(f *testing.F)  { fuzzPacked(f, tensor.Q6_K) }
func FuzzPackedW4A8(f *testing.F) { fuzzPacked(f, tensor.W4A8) }
func FuzzPackedW8A8(f *testing.F) { fuzzPacked(f, tensor.W8A8) }

func fuzzPacked(f *testing.F, typ tensor.Type) {
	f.Add([]byte{1, 2, 3}, uint8(0), uint8(0), uint8(0))
	f.Add([]byte("\xff\x80\x7f\x00\x01\xfe"), uint8(12), uint8(3), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, rowsSeed, colsSeed, nSeed uint8) {
		rows := 1 + int(rowsSeed)%40
		cols := (1 + int(colsSeed)%6) * typ.BlockSize()
		n := 1 + int(nSeed)%9
		stride, _ := tensor.RowBytes(typ, cols)
		wb := fuzzBytes(data, rows*stride, 0)
		sanitizeWeights(typ, wb)
		xb := fuzzBytes(data, n*cols, 0x5a)
		x := make([]float32, n*cols)
		for i := 0; i < n; i++ {
			scale := float32(math.Ldexp(1, int(xb[i])%24-12))
			for j := 0; j < cols; j++ {
				x[i*cols+j] = float32(int8(xb[i*cols+j])) * scale
			}
		}
		for _, tierName := range kernels.Tiers() {
			if !slices.Contains(kernels.PackedTypes(tierName), typ) {
				continue
			}
			w := &tensor.Matrix{Name: "w", Type: typ, Rows: rows, Cols: cols, Data: wb}
			checkPacked(t, tierName, w, x, n)
		}
	})
}

func fuzzDot(f *testing.F, typ tensor.Type) {
	f.Add([]byte{1, 2, 3}, uint8(0), uint8(0))
	f.Add([]byte("\xff\x80\x7f\x00\x01\xfe"), uint8(4), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, rowsSeed, colsSeed uint8) {
		rows := 1 + int(rowsSeed)%9
		cols := (1 + int(colsSeed)%12) * typ.BlockSize()
		if typ.BlockSize() == 1 {
			cols = 1 + int(colsSeed)%200
		}
		stride, _ := tensor.RowBytes(typ, cols)
		w := fuzzBytes(data, rows*stride, 0)
		sanitizeWeights(typ, w)
		var xs [4][]float32
		xb := fuzzBytes(data, 4*cols, 0x5a)
		for i := range xs {
			xs[i] = make([]float32, cols)
			scale := float32(math.Ldexp(1, int(xb[i])%24-12))
			for j := range xs[i] {
				xs[i][j] = float32(int8(xb[i*cols+j])) * scale
			}
		}
		for _, tierName := range kernels.Tiers() {
			checkKernel(t, tierName, typ, rows, cols, w, xs)
		}
	})
}

// fuzzBytes stretches data to n bytes (the fuzzer's input repeated, each
// pass mixed with a counter so the repeats differ).
func fuzzBytes(data []byte, n int, salt byte) []byte {
	b := make([]byte, n)
	if len(data) == 0 {
		return b
	}
	for i := range b {
		b[i] = data[i%len(data)] ^ byte(i/len(data))*0x9d ^ salt
	}
	return b
}

// finiteHalf clears an fp16's top exponent bit when the exponent is all
// ones (Inf/NaN), keeping every finite pattern.
func finiteHalf(b []byte) {
	if h := binary.LittleEndian.Uint16(b); h&0x7c00 == 0x7c00 {
		binary.LittleEndian.PutUint16(b, h&^0x4000)
	}
}

// sanitizeWeights keeps arbitrary bit patterns but makes the float
// fields finite and of moderate size, so sums cannot overflow.
func sanitizeWeights(typ tensor.Type, w []byte) {
	switch typ {
	case tensor.F32:
		for i := 0; i < len(w); i += 4 {
			v := binary.LittleEndian.Uint32(w[i:])
			if e := v >> 23 & 0xff; e > 127+20 {
				v = v&^(0xff<<23) | (127+20)<<23
			}
			binary.LittleEndian.PutUint32(w[i:], v)
		}
	case tensor.BF16, tensor.W16A16:
		for i := 0; i < len(w); i += 2 {
			v := binary.LittleEndian.Uint16(w[i:])
			if e := v >> 7 & 0xff; e > 127+20 {
				v = v&^(0xff<<7) | (127+20)<<7
			}
			if typ == tensor.W16A16 && v&0x7f80 == 0 {
				v &= 0x8000
			}
			binary.LittleEndian.PutUint16(w[i:], v)
		}
	case tensor.F16:
		for i := 0; i < len(w); i += 2 {
			finiteHalf(w[i:])
		}
	default:
		bb := typ.BlockBytes()
		for off := 0; off < len(w); off += bb {
			blk := w[off : off+bb]
			switch typ {
			case tensor.Q4_0, tensor.Q8_0, tensor.W4A8, tensor.W4A16, tensor.W8A8:
				finiteHalf(blk)
			case tensor.Q4_K, tensor.Q5_K:
				finiteHalf(blk)
				finiteHalf(blk[2:])
			case tensor.Q6_K:
				finiteHalf(blk[208:])
			}
		}
	}
}
