//go:build arm64 && gc && !purego

package kernels

// The attention vector kernels in NEON (vec_arm64.s, vecmulti_arm64.s,
// vecmulti16_arm64.s). A dot product sums in the order of vecDotAVX2:
// two 4-lane accumulators (elements 8s+0..3 and 8s+4..7, FMLA), added
// lane-wise, then (t0+t1)+(t2+t3), then the last len%8 products one at a
// time (FMADD). Every dot kernel here (one key, four keys, four queries,
// f16 keys) keeps that order, so the bit-identities of the doc comments
// hold within the tier (and the NEON bits equal the AVX2 ones). An axpy
// is one fused multiply-add per element, in any blocking.

//go:noescape
func vecDotNEON(a, b []float32) float32

//go:noescape
func vecAxpyNEON(y, x []float32, s float32)

// dot4KeysNEON: out[i] = vecDotNEON(q, k[i*stride:]) * scale for
// len(out) (a multiple of 4) keys, four at a time; len(q) a positive
// multiple of 8.
//
//go:noescape
func dot4KeysNEON(out, q, k []float32, stride int, scale float32)

//go:noescape
func axpyRowsNEON(y, p, v []float32, stride int)

// dotRowsNEON takes four keys at a time when it can.
func dotRowsNEON(out, q, k []float32, stride int, scale float32) {
	w, i := len(q), 0
	if w > 0 && w%8 == 0 && len(out) >= 4 {
		i = len(out) &^ 3
		dot4KeysNEON(out[:i], q, k, stride, scale)
	}
	for ; i < len(out); i++ {
		out[i] = vecDotNEON(q, k[i*stride:i*stride+w]) * scale
	}
}
