package kernels

import (
	"encoding/binary"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// The SIMD tiers read activations in their own layouts, with the same
// numbers as ggml's Q8_0 and Q8_K blocks but with the quants of all blocks
// contiguous (aligned 32-byte loads) and the per-block fields precomputed
// in the form the kernels consume. A row is padded to a multiple of 64
// bytes so that the rows of a batch stay aligned.
//
// q8a, for Q4_0 and Q8_0 weights (nb blocks of 32):
//
//	[nb][32]int8 quants | [nb][16]int16 -8*(q[2j]+q[2j+1]) (Q4_0's offset
//	of 8, added to the pair sums of VPMADDUBSW) | [nb]float32 d (the fp16
//	d of Q8_0, widened) | [nb]int32 -8*sum(q) (the offset for the packed
//	Q4_0 kernels)
//
// q8ka, for K-quant weights (nb super-blocks of 256):
//
//	[nb][256]int8 quants | [nb]float32 d | [nb][16]int16 sums of 16 quants |
//	[nb][8]int16 sums of 32 quants

func roundUp64(n int) int { return (n + 63) &^ 63 }

func q8aBytes(cols int) int  { return roundUp64(cols / 32 * 72) }
func q8kaBytes(cols int) int { return roundUp64(cols / tensor.QK_K * 308) }

// quantQ8a quantizes x (a whole number of 32-blocks) like
// QuantizeActivations(Q8_0) into the q8a layout.
func quantQ8a(dst []byte, x []float32) {
	nb := len(x) / 32
	dst = dst[:72*nb]
	var blk [q8_0Bytes]byte
	for b := 0; b < nb; b++ {
		quantQ8_0(&blk, (*[32]float32)(x[32*b:]))
		copy(dst[32*b:32*b+32], blk[2:])
		var sum int32
		for j := 0; j < 16; j++ {
			c := -8 * (int16(int8(blk[2+2*j])) + int16(int8(blk[3+2*j])))
			binary.LittleEndian.PutUint16(dst[32*nb+32*b+2*j:], uint16(c))
			sum += int32(c)
		}
		binary.LittleEndian.PutUint32(dst[64*nb+4*b:], math.Float32bits(fp16At(blk[:])))
		binary.LittleEndian.PutUint32(dst[68*nb+4*b:], uint32(sum))
	}
}

// quantQ8ka quantizes x (a whole number of super-blocks) like
// QuantizeActivations(Q4_K) into the q8ka layout.
func quantQ8ka(dst []byte, x []float32) {
	nb := len(x) / tensor.QK_K
	dst = dst[:308*nb]
	var blk [q8_KBytes]byte
	for b := 0; b < nb; b++ {
		quantQ8_K(&blk, (*[tensor.QK_K]float32)(x[tensor.QK_K*b:]))
		copy(dst[256*b:256*b+256], blk[4:260])
		copy(dst[256*nb+4*b:], blk[0:4])
		copy(dst[260*nb+32*b:260*nb+32*b+32], blk[260:292])
		for j := 0; j < 8; j++ {
			s := q8KSum(blk[:], 2*j) + q8KSum(blk[:], 2*j+1)
			binary.LittleEndian.PutUint16(dst[292*nb+16*b+2*j:], uint16(int16(s)))
		}
	}
}
