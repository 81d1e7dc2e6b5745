package kernels

import (
	"encoding/binary"
	"math"
)

// siskin's weight-path types (tensor.W4A8, W4A16, W8A8) in the SIMD
// tiers. W4A8 and W8A8 share their activations with Q4_0 and Q8_0
// (VecDotType Q8_0), so a QuantizedActs made for either serves both: in a
// tier whose Q4_0/Q8_0 kernels read the q8a layout (actlayout.go), the
// W4A8/W8A8 kernels must read q8a too. q8aWeightKernels gives them Go
// kernels on q8a for matrices that were not prepared (the generic
// arithmetic: exactly DotQ, since q8a's float32 d is the Q8_0 fp16 d
// widened); prepared matrices use the tier's packed Q4_0/Q8_0 kernels,
// packGroup having rewritten each 128-group as four 32-blocks.

// q8aWeightKernels returns the W4A8 and W8A8 kernels of a tier whose
// 32-block activations are q8a made by quant; packed4 and packed8 are its
// packed Q4_0 and Q8_0 kernels (nil if none).
func q8aWeightKernels(quant func(dst []byte, x []float32), packed4, packed8 *packedKernel) (w4a8, w8a8 *matKernel) {
	w4a8 = &matKernel{actBytes: q8aBytes, quant: quant, vec: q8aRows(66, dotW4A8q8a), packed: packed4}
	w8a8 = &matKernel{actBytes: q8aBytes, quant: quant, vec: q8aRows(130, dotW8A8q8a), packed: packed8}
	return w4a8, w8a8
}

// q8aRows wraps a one-row dot on q8a activations (nb 32-blocks) for rows
// of gb-byte groups.
func q8aRows(gb int, dot func(row, x []byte, nb int) float32) func(out []float32, w []byte, stride int, x []byte) {
	return func(out []float32, w []byte, stride int, x []byte) {
		nb := stride / gb * 4
		x = x[:72*nb] // panics (like an index) on short activations
		for r := range out {
			out[r] = dot(w[r*stride:(r+1)*stride], x, nb)
		}
	}
}

// q8aBlock returns the quants and d of 32-block b of a q8a row of nb
// blocks.
func q8aBlock(x []byte, nb, b int) ([]byte, float32) {
	return x[32*b : 32*b+32], math.Float32frombits(binary.LittleEndian.Uint32(x[64*nb+4*b:]))
}

// dotW4A8q8a is dotW4A8 reading q8a activations.
func dotW4A8q8a(row, x []byte, nb int) float32 {
	var sumf float32
	for b := 0; b < nb; b++ {
		g := row[b/4*66:]
		qs := g[2+16*(b%4) : 18+16*(b%4)]
		y, dy := q8aBlock(x, nb, b)
		var s0, s1 int32
		for j := 0; j < 16; j++ {
			s0 += (int32(qs[j]&0x0f) - 8) * int32(int8(y[j]))
			s1 += (int32(qs[j]>>4) - 8) * int32(int8(y[16+j]))
		}
		sumf += float32(float32(float32(s0+s1)*fp16At(g)) * dy)
	}
	return sumf
}

// dotW8A8q8a is dotW8A8 reading q8a activations.
func dotW8A8q8a(row, x []byte, nb int) float32 {
	var sumf float32
	for b := 0; b < nb; b++ {
		g := row[b/4*130:]
		qs := g[2+32*(b%4) : 34+32*(b%4)]
		y, dy := q8aBlock(x, nb, b)
		var s int32
		for j := 0; j < 32; j++ {
			s += int32(int8(qs[j])) * int32(int8(y[j]))
		}
		sumf += float32(float32(s) * float32(fp16At(g)*dy))
	}
	return sumf
}
