package kernels

import (
	"encoding/binary"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// W16A16 (tensor.W16A16): BF16 weights times activations rounded to BF16,
// as llama.cpp computes BF16 weights. The generic tier is DotQ on BF16
// activations (products exact, summed in float64). The AVX-512 BF16
// kernels (w16a16_avx512_amd64.s, from kernels/_gen/w16a16.go) use
// VDPBF16PS; the functions below are their twin, step for step, which the
// tests hold them to bit for bit.

// w16a16Chunk is the columns one VDPBF16PS takes: 16 lanes of two.
const w16a16Chunk = 32

// w16a16ActBytes is the size of a row of cols activations in the AVX-512
// kernels' layout: BF16, padded with zeros to a whole chunk, so that the
// kernels load whole chunks of activations and mask only the weights.
func w16a16ActBytes(cols int) int {
	return 2 * ((cols + w16a16Chunk - 1) / w16a16Chunk * w16a16Chunk)
}

// bf16Flushed is VCVTNE2PS2BF16 on one float: round to nearest even,
// NaN kept quiet, and inputs below the normal range to a zero of their
// sign (the instruction treats them as zero).
func bf16Flushed(f float32) uint16 {
	u := math.Float32bits(f)
	switch {
	case u&0x7fffffff > 0x7f800000:
		return uint16(u>>16) | 0x40
	case u&0x7f800000 == 0:
		return uint16(u>>16) & 0x8000
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// w16a16Quant writes x in the kernels' activation layout into dst
// (w16a16ActBytes(len(x)) bytes).
func w16a16Quant(dst []byte, x []float32) {
	for i, v := range x {
		binary.LittleEndian.PutUint16(dst[2*i:], bf16Flushed(v))
	}
	clear(dst[2*len(x) : w16a16ActBytes(len(x))])
}

// bf16DAZ widens a BF16 input of VDPBF16PS: below the normal range it is
// a zero of its sign.
func bf16DAZ(b uint16) float64 {
	if b&0x7f80 == 0 {
		b &= 0x8000
	}
	return float64(math.Float32frombits(uint32(b) << 16))
}

// flushF32 is VDPBF16PS's output: results below the normal range become a
// zero of their sign.
func flushF32(f float32) float32 {
	if u := math.Float32bits(f); u&0x7f800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return f
}

// dpbf16Step is one of VDPBF16PS's two FMAs in a lane: the product of two
// BF16 values is exact in float64, and a float64 sum of it and a float32
// rounds to float32 as one rounding would (double rounding is harmless
// when the wider format has more than twice the bits plus two).
func dpbf16Step(acc float32, w, x uint16) float32 {
	return flushF32(float32(float64(acc) + bf16DAZ(w)*bf16DAZ(x)))
}

// dotW16A16Lanes is the AVX-512 kernels' dot product of a W16A16 row
// with activations in their layout (xa at least w16a16ActBytes long).
func dotW16A16Lanes(row, xa []byte) float32 {
	cols := len(row) / 2
	at := func(b []byte, j int) uint16 {
		if j >= cols { // the masked part of the last chunk
			return 0
		}
		return binary.LittleEndian.Uint16(b[2*j:])
	}
	var acc [16]float32
	for c := 0; c < cols; c += w16a16Chunk {
		for l := range acc {
			j := c + 2*l
			acc[l] = dpbf16Step(acc[l], at(row, j+1), binary.LittleEndian.Uint16(xa[2*j+2:]))
			acc[l] = dpbf16Step(acc[l], at(row, j), binary.LittleEndian.Uint16(xa[2*j:]))
		}
	}
	var s [8]float32
	for l := range s {
		s[l] = acc[l] + acc[l+8]
	}
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}

// w16a16LanesKernel is the Go twin as a kernel (the tests' reference for
// the assembly, and a tier's kernel where it has no assembly of its own).
func w16a16LanesKernel() *matKernel {
	return &matKernel{
		actBytes: w16a16ActBytes,
		quant:    w16a16Quant,
		vec: func(out []float32, w []byte, stride int, x []byte) {
			for r := range out {
				out[r] = dotW16A16Lanes(w[r*stride:(r+1)*stride], x)
			}
		},
	}
}

// HasW16A16 reports whether the tier in use multiplies W16A16 weights
// with kernels of its own (VDPBF16PS on AVX-512 BF16), or is the generic
// tier, whose reference runs every type. The other SIMD tiers would fall
// back to that reference, tens of times slower than their BF16 kernels.
func HasW16A16() bool {
	t := tier(current.Load())
	return t == tierGeneric || kernelSets[t][tensor.W16A16] != nil
}
