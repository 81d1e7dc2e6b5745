package quantize

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// The row quantizers below reproduce ggml's reference quantizers
// (quantize_row_*_ref in ggml-quants.c), which is what llama-quantize runs
// when no importance matrix is given, so that a file made here has the same
// bytes as one made by llama.cpp from the same float32 weights.
//
// Bit-exactness rules, as in tensor.Dequantize: every float32 operation is
// done in the same order as in C, and every product that feeds an addition
// or subtraction is wrapped in an explicit float32() conversion, which the
// Go spec says forbids fusing it into an FMA (Go fuses on arm64 and on
// amd64 with GOAMD64=v3; ggml-base is built without FMA contraction).

// Supported reports whether QuantizeRow can produce type t.
func Supported(t tensor.Type) bool {
	switch t {
	case tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K:
		return true
	}
	return false
}

// QuantizeRow encodes src as consecutive elements of type t into dst.
// len(src) must be a whole number of t's blocks and len(dst) exactly the
// bytes they take.
func QuantizeRow(dst []byte, t tensor.Type, src []float32) error {
	want, err := tensor.RowBytes(t, len(src))
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if len(dst) != want {
		return fmt.Errorf("quantize: %d %s elements take %d bytes, got %d", len(src), t, want, len(dst))
	}
	le := binary.LittleEndian
	switch t {
	case tensor.F32:
		for i, v := range src {
			le.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case tensor.F16:
		for i, v := range src {
			le.PutUint16(dst[2*i:], tensor.Float32ToFP16(v))
		}
	case tensor.BF16:
		for i, v := range src {
			le.PutUint16(dst[2*i:], tensor.Float32ToBF16(v))
		}
	case tensor.Q8_0:
		for i := 0; i < len(src); i += 32 {
			quantQ8_0((*[34]byte)(dst[i/32*34:]), (*[32]float32)(src[i:]))
		}
	case tensor.Q4_0:
		for i := 0; i < len(src); i += 32 {
			quantQ4_0((*[18]byte)(dst[i/32*18:]), (*[32]float32)(src[i:]))
		}
	case tensor.Q4_1:
		for i := 0; i < len(src); i += 32 {
			quantQ4_1((*[20]byte)(dst[i/32*20:]), (*[32]float32)(src[i:]))
		}
	case tensor.Q4_K:
		var s kScratch
		for i := 0; i < len(src); i += tensor.QK_K {
			s.quantQ4_K((*[144]byte)(dst[i/tensor.QK_K*144:]), (*[tensor.QK_K]float32)(src[i:]))
		}
	case tensor.Q5_K:
		var s kScratch
		for i := 0; i < len(src); i += tensor.QK_K {
			s.quantQ5_K((*[176]byte)(dst[i/tensor.QK_K*176:]), (*[tensor.QK_K]float32)(src[i:]))
		}
	case tensor.Q6_K:
		for i := 0; i < len(src); i += tensor.QK_K {
			quantQ6_K((*[210]byte)(dst[i/tensor.QK_K*210:]), (*[tensor.QK_K]float32)(src[i:]))
		}
	default:
		return fmt.Errorf("quantize: no quantizer for %s", t)
	}
	return nil
}

// nearestInt rounds to the nearest integer, ties to even, the way ggml's
// nearest_int does (adding 1.5*2^23 and reading the mantissa). Callers pass
// products through float32() so the addition here cannot fuse with them.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

func putFP16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, tensor.Float32ToFP16(f)) }

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

func sqrt32(f float32) float32 { return float32(math.Sqrt(float64(f))) } // exact: sqrt of a float32 in float64 rounds once more without error

// Q8_0: fp16 scale amax/127, then 32 int8 values rounded half away from zero
// (C roundf).
func quantQ8_0(y *[34]byte, x *[32]float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putFP16(y[0:], d)
	for j, v := range x {
		y[2+j] = byte(int8(math.Round(float64(v * id))))
	}
}

// Q4_0: the scale is the signed value of largest magnitude over -8, so that
// value maps exactly to quant 0; quants are (x/d + 8.5) truncated, at most
// 15. Element j goes to the low nibble of byte j, element j+16 to its high
// nibble.
func quantQ4_0(y *[18]byte, x *[32]float32) {
	var amax, mx float32
	for _, v := range x {
		if amax < abs32(v) {
			amax = abs32(v)
			mx = v
		}
	}
	d := mx / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putFP16(y[0:], d)
	for j := 0; j < 16; j++ {
		x0 := float32(x[j] * id)
		x1 := float32(x[16+j] * id)
		q0 := min(15, int32(x0+8.5))
		q1 := min(15, int32(x1+8.5))
		y[2+j] = byte(q0) | byte(q1)<<4
	}
}

// Q4_1: scale (max-min)/15 and offset min, both fp16; quants
// ((x-min)/d + 0.5) truncated, at most 15.
func quantQ4_1(y *[20]byte, x *[32]float32) {
	lo, hi := float32(math.MaxFloat32), float32(-math.MaxFloat32)
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	d := (hi - lo) / 15
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putFP16(y[0:], d)
	putFP16(y[2:], lo)
	for j := 0; j < 16; j++ {
		x0 := float32((x[j] - lo) * id)
		x1 := float32((x[16+j] - lo) * id)
		q0 := min(15, int32(x0+0.5))
		q1 := min(15, int32(x1+0.5))
		y[4+j] = byte(q0) | byte(q1)<<4
	}
}

// kScratch holds the per-super-block working arrays of the K quantizers.
type kScratch struct {
	L      [tensor.QK_K]uint8
	xt, wt [32][8]float32 // sub-block values and weights, transposed
	lt     [32][8]uint8
	scales [8]float32
	mins   [8]float32
}

// packScalesMins quantizes eight sub-block scales and mins to 6 bits against
// their maxima and packs them the K-quant way (12 bytes), returning the
// fp16-rounded super-block scale and min scale.
func (s *kScratch) packScalesMins(sc *[12]byte, dOut, dminOut []byte) {
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		if s.scales[j] > maxScale {
			maxScale = s.scales[j]
		}
		if s.mins[j] > maxMin {
			maxMin = s.mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	*sc = [12]byte{}
	for j := 0; j < 8; j++ {
		ls := min(63, uint8(nearestInt(float32(invScale*s.scales[j]))))
		lm := min(63, uint8(nearestInt(float32(invMin*s.mins[j]))))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xF | (lm&0xF)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putFP16(dOut, maxScale/63)
	putFP16(dminOut, maxMin/63)
}

// scaleMinK4 unpacks sub-block j's 6-bit scale and min (get_scale_min_k4).
func scaleMinK4(j int, q *[12]byte) (uint8, uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// subBlocks runs make_qkx2_quants on the eight 32-element sub-blocks with
// weights av_x + |x|, av_x the sub-block's RMS, then requantizes each
// element against the packed (rounded) scales, as q4_K and q5_K do.
func (s *kScratch) subBlocks(x *[tensor.QK_K]float32, nmax int, rmin float32, nstep int, sc *[12]byte, dB, dminB []byte) {
	for j := 0; j < 8; j++ {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / 32)
		for l, v := range xs {
			s.xt[l][j] = v
			s.wt[l][j] = avX + abs32(v)
		}
	}
	makeQKX2x8(int32(nmax), &s.xt, &s.wt, &s.lt, &s.scales, &s.mins, rmin, 0.1, nstep)
	for j := 0; j < 8; j++ {
		for l := range 32 {
			s.L[32*j+l] = s.lt[l][j]
		}
	}
	s.packScalesMins(sc, dB, dminB)
	d0 := tensor.FP16ToFloat32(binary.LittleEndian.Uint16(dB))
	m0 := tensor.FP16ToFloat32(binary.LittleEndian.Uint16(dminB))
	for j := 0; j < 8; j++ {
		scj, mj := scaleMinK4(j, sc)
		d := d0 * float32(scj)
		if d == 0 {
			continue
		}
		dm := float32(m0 * float32(mj))
		for ii := 0; ii < 32; ii++ {
			l := nearestInt((x[32*j+ii] + dm) / d)
			s.L[32*j+ii] = uint8(max(0, min(int32(nmax), l)))
		}
	}
}

// Q4_K block: fp16 d, fp16 dmin, 12 bytes of packed 6-bit scales and mins,
// 128 bytes of nibbles (64 elements per 32 bytes: low nibbles first 32,
// high nibbles the next 32).
func (s *kScratch) quantQ4_K(y *[144]byte, x *[tensor.QK_K]float32) {
	s.subBlocks(x, 15, -1, 20, (*[12]byte)(y[4:16]), y[0:2], y[2:4])
	q := y[16:]
	for j := 0; j < tensor.QK_K; j += 64 {
		for l := 0; l < 32; l++ {
			q[l] = s.L[j+l] | s.L[j+l+32]<<4
		}
		q = q[32:]
	}
}

// Q5_K block: d, dmin, 12 scale bytes, 32 bytes of high bits, 128 bytes of
// low nibbles.
func (s *kScratch) quantQ5_K(y *[176]byte, x *[tensor.QK_K]float32) {
	s.subBlocks(x, 31, -0.5, 15, (*[12]byte)(y[4:16]), y[0:2], y[2:4])
	qh := y[16:48]
	ql := y[48:]
	clear(qh)
	m1, m2 := uint8(1), uint8(2)
	for n := 0; n < tensor.QK_K; n += 64 {
		for j := 0; j < 32; j++ {
			l1 := s.L[n+j]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			l2 := s.L[n+j+32]
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[j] = l1 | l2<<4
		}
		m1 <<= 2
		m2 <<= 2
		ql = ql[32:]
	}
}

// groupMaxEps is ggml's GROUP_MAX_EPS: below it a group counts as zero.
const groupMaxEps = 1e-15

// Q6_K block: 128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 int8
// scales (one per 16 elements), fp16 d.
func quantQ6_K(y *[210]byte, x *[tensor.QK_K]float32) {
	var L [tensor.QK_K]int8
	var scales [16]float32
	var maxScale, maxAbsScale float32
	// make_qx_quants on the sixteen 16-element groups, eight at a time.
	for g := 0; g < 2; g++ {
		var xt [16][8]float32
		var lt [16][8]int8
		for b := range 8 {
			for i := range 16 {
				xt[i][b] = x[16*(8*g+b)+i]
			}
		}
		makeQX8(32, &xt, &lt, (*[8]float32)(scales[8*g:]))
		for b := range 8 {
			for i := range 16 {
				L[16*(8*g+b)+i] = lt[i][b]
			}
		}
	}
	for ib := 0; ib < 16; ib++ {
		if as := abs32(scales[ib]); as > maxAbsScale {
			maxAbsScale = as
			maxScale = scales[ib]
		}
	}
	if maxAbsScale < groupMaxEps {
		*y = [210]byte{}
		return
	}
	ql, qh, ysc := y[0:128], y[128:192], y[192:208]
	iscale := -128 / maxScale
	putFP16(y[208:], 1/iscale)
	for ib := 0; ib < 16; ib++ {
		ysc[ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
	}
	d0 := tensor.FP16ToFloat32(binary.LittleEndian.Uint16(y[208:]))
	for j := 0; j < 16; j++ {
		d := d0 * float32(int8(ysc[j]))
		if d == 0 {
			continue
		}
		for ii := 0; ii < 16; ii++ {
			l := nearestInt(x[16*j+ii] / d)
			L[16*j+ii] = int8(max(-32, min(31, l)) + 32)
		}
	}
	for j := 0; j < tensor.QK_K; j += 128 {
		for l := 0; l < 32; l++ {
			q1 := uint8(L[j+l]) & 0xF
			q2 := uint8(L[j+l+32]) & 0xF
			q3 := uint8(L[j+l+64]) & 0xF
			q4 := uint8(L[j+l+96]) & 0xF
			ql[l] = q1 | q3<<4
			ql[l+32] = q2 | q4<<4
			qh[l] = uint8(L[j+l])>>4 | (uint8(L[j+l+32])>>4)<<2 | (uint8(L[j+l+64])>>4)<<4 | (uint8(L[j+l+96])>>4)<<6
		}
		ql = ql[64:]
		qh = qh[32:]
	}
}
