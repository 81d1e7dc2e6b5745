//go:build amd64 && gc && !purego

package kernels

import (
	"encoding/binary"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// dotLanes is the floats of a row one step of dot4Rows takes (two YMM
// registers).
const dotLanes = 16

//go:noescape
func f32ToF16AVX2(dst []uint16, src []float32)

// f32ToF16AVX2Row rounds 8 values at a time in assembly, Go the rest.
func f32ToF16AVX2Row(dst []uint16, src []float32) {
	i := len(src) &^ 7
	if i > 0 {
		f32ToF16AVX2(dst[:i], src[:i])
	}
	f32ToF16Go(dst[i:], src[i:])
}

//go:noescape
func dequantQ8AVX2(dst []float32, src []byte, blocks int)

// quantQ8AVX2Row is QuantizeRowQ8 through the activation quantizer
// quantQ8aAVX2, whose blocks have quantQ8_0's scale and quants (laid out
// for the matrix kernels: quants, then per-block sums, then the scale as
// a float32), eight blocks at a time through a buffer on the stack. A
// block holding a NaN may differ from the twin's (garbage either way:
// see TestQuantActsSpecialValues).
func quantQ8AVX2Row(dst []byte, src []float32) {
	const group = 8
	var buf [group * 72]byte
	for len(src) > 0 {
		nb := min(group, len(src)/32)
		quantQ8aAVX2(buf[:nb*72], src[:nb*32])
		for b := range nb {
			blk := dst[b*q8_0Bytes : (b+1)*q8_0Bytes]
			d := math.Float32frombits(binary.LittleEndian.Uint32(buf[64*nb+4*b:]))
			binary.LittleEndian.PutUint16(blk, tensor.Float32ToFP16(d)) // exact: d is an fp16 value
			copy(blk[2:], buf[32*b:32*b+32])
		}
		src, dst = src[nb*32:], dst[nb*q8_0Bytes:]
	}
}

// dequantQ8AVX2Row is DequantRowQ8 in assembly (exact, as the Go twin).
func dequantQ8AVX2Row(dst []float32, src []byte) {
	if n := len(dst) / 32; n > 0 {
		dequantQ8AVX2(dst, src, n)
	}
}
