package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// Activation block sizes in bytes.
const (
	q8_0Bytes = 34  // fp16 d, 32 int8
	q8_1Bytes = 36  // fp16 d, fp16 s = d*sum(q), 32 int8
	q8_KBytes = 292 // float32 d, 256 int8, 16 int16 sums of 16 quants
)

// VecDotType is the type ggml converts activations to before a dot product
// with weights of type t: Q8_0 for Q4_0 and Q8_0, Q8_1 for Q4_1, Q8_K for
// the K-quants, and the weight type itself for F32, F16 and BF16. For
// siskin's weight-path types it is Q8_0 for W4A8 and W8A8 (blocks of 32
// inside each 128-group, so they share activations with Q4_0/Q8_0), F32
// for W4A16 (float activations, not rounded) and BF16 for W16A16.
func VecDotType(t tensor.Type) tensor.Type {
	switch t {
	case tensor.Q4_0, tensor.Q8_0, tensor.W4A8, tensor.W8A8:
		return tensor.Q8_0
	case tensor.W4A16:
		return tensor.F32
	case tensor.Q4_1:
		return tensor.Q8_1
	case tensor.Q4_K, tensor.Q5_K, tensor.Q6_K:
		return tensor.Q8_K
	case tensor.F32, tensor.F16, tensor.BF16:
		return t
	case tensor.W16A16:
		return tensor.BF16
	}
	panic(fmt.Sprintf("kernels: unsupported weight type %s", t))
}

// ActivationBytes is the size of n activations in VecDotType(t); n must
// be a whole number of that type's blocks.
func ActivationBytes(t tensor.Type, n int) int {
	b, err := tensor.RowBytes(VecDotType(t), n)
	if err != nil {
		panic("kernels: " + err.Error())
	}
	return b
}

// QuantizeActivations converts x to VecDotType(t) with ggml's reference
// rounding (quantize_row_q8_0_ref, quantize_row_q8_1_ref,
// quantize_row_q8_K_ref; fp16/bf16 by round-to-nearest-even), ready for
// DotQ with a row of type t.
func QuantizeActivations(t tensor.Type, x []float32) []byte {
	return QuantizeActivationsTo(nil, t, x)
}

// QuantizeActivationsTo is QuantizeActivations writing into dst, which is
// reused when its capacity suffices; it returns the filled slice.
func QuantizeActivationsTo(dst []byte, t tensor.Type, x []float32) []byte {
	n := ActivationBytes(t, len(x))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	switch VecDotType(t) {
	case tensor.Q8_0:
		for i := 0; i < len(x); i += 32 {
			quantQ8_0((*[q8_0Bytes]byte)(dst[i/32*q8_0Bytes:]), (*[32]float32)(x[i:]))
		}
	case tensor.Q8_1:
		for i := 0; i < len(x); i += 32 {
			quantQ8_1((*[q8_1Bytes]byte)(dst[i/32*q8_1Bytes:]), (*[32]float32)(x[i:]))
		}
	case tensor.Q8_K:
		for i := 0; i < len(x); i += tensor.QK_K {
			quantQ8_K((*[q8_KBytes]byte)(dst[i/tensor.QK_K*q8_KBytes:]), (*[tensor.QK_K]float32)(x[i:]))
		}
	case tensor.F32:
		for i, v := range x {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case tensor.F16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], tensor.Float32ToFP16(v))
		}
	case tensor.BF16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], tensor.Float32ToBF16(v))
		}
	}
	return dst
}

// absMax32 mirrors ggml's amax = MAX(amax, fabsf(v)) loop.
func absMax32(x *[32]float32) float32 {
	var amax float32
	for _, v := range x {
		a := float32(math.Abs(float64(v)))
		if !(amax > a) {
			amax = a
		}
	}
	return amax
}

// roundAway rounds half away from zero, like C's roundf. The quantizers
// only pass values within [-127.5, 127.5] or, when 1/d overflows (a block
// of subnormal activations), ±Inf and NaN: those give 0, as ggml's C
// conversion does on x86 (and Go's did there, implicitly).
func roundAway(f float32) int8 {
	r := math.Round(float64(f))
	if !(math.Abs(r) <= 127) {
		return 0
	}
	return int8(r)
}

// quantQ8_0 is quantize_row_q8_0_ref for one block: d = amax/127 stored as
// fp16, q = roundf(x * (1/d)) using the unrounded d.
func quantQ8_0(y *[q8_0Bytes]byte, x *[32]float32) {
	d := absMax32(x) / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(y[0:], tensor.Float32ToFP16(d))
	for j, v := range x {
		y[2+j] = byte(roundAway(float32(v * id)))
	}
}

// quantQ8_1 is quantize_row_q8_1_ref for one block: as Q8_0, plus s =
// fp16(sum(q) * d).
func quantQ8_1(y *[q8_1Bytes]byte, x *[32]float32) {
	d := absMax32(x) / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	sum := 0
	for j, v := range x {
		q := roundAway(float32(v * id))
		y[4+j] = byte(q)
		sum += int(q)
	}
	binary.LittleEndian.PutUint16(y[0:], tensor.Float32ToFP16(d))
	binary.LittleEndian.PutUint16(y[2:], tensor.Float32ToFP16(float32(float32(sum)*d)))
}

// nearestInt is ggml's nearest_int: adding 1.5*2^23 leaves the value
// rounded to an integer (ties to even) in the low mantissa bits. The
// argument must already be rounded to float32 by the caller, or the
// addition could fuse with the caller's multiplication.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// quantQ8_K is quantize_row_q8_K_ref for one super-block: the scale comes
// from the element of largest magnitude (the first one on ties) with its
// sign, iscale = -127/max, q = min(127, nearest_int(iscale*x)), d =
// 1/iscale (so d is negative when that element is positive), and bsums
// hold the sums of each 16 quants.
func quantQ8_K(y *[q8_KBytes]byte, x *[tensor.QK_K]float32) {
	var amax, maxv float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, maxv = a, v
		}
	}
	if amax == 0 {
		clear(y[:])
		return
	}
	iscale := -127 / maxv
	qs := y[4 : 4+tensor.QK_K]
	for j, v := range x {
		q := nearestInt(float32(iscale * v))
		qs[j] = byte(int8(min(127, q)))
	}
	for g := 0; g < tensor.QK_K/16; g++ {
		var s int16
		for _, q := range qs[16*g : 16*g+16] {
			s += int16(int8(q))
		}
		binary.LittleEndian.PutUint16(y[4+tensor.QK_K+2*g:], uint16(s))
	}
	binary.LittleEndian.PutUint32(y[0:], math.Float32bits(1/iscale))
}

// DotQ returns the dot product of one weight row of type t with
// activations xq produced by QuantizeActivations(t, ...), computed like
// ggml's generic C ggml_vec_dot_<t>_<VecDotType(t)>: integer sums per
// block or sub-block, then float32 scaling and accumulation grouped as
// there, so results agree with llama.cpp to within float rounding. For
// F32/F16/BF16 weights it is ggml's generic float dot: float32 products
// summed in float64. W4A8 and W8A8 follow Q4_0 and Q8_0 per 32-sub-block
// (the group's d standing for each sub-block's), and W4A16 is Dot.
func DotQ(t tensor.Type, row []byte, xq []byte) float32 {
	bs := t.BlockSize()
	if bs == 0 || !t.Supported() {
		panic(fmt.Sprintf("kernels: unsupported weight type %s", t))
	}
	n := len(row) / t.BlockBytes() * bs
	checkRow(t, row, n)
	if want := ActivationBytes(t, n); len(xq) != want {
		panic(fmt.Sprintf("kernels: %s row of %d elements needs %d activation bytes, got %d", t, n, want, len(xq)))
	}
	return dotQFunc(t)(row, xq)
}

type dotQFn func(row, xq []byte) float32

func dotQFunc(t tensor.Type) dotQFn {
	switch t {
	case tensor.F32:
		return dotQF32
	case tensor.F16:
		return dotQF16
	case tensor.BF16, tensor.W16A16:
		return dotQBF16
	case tensor.Q4_0:
		return dotQ4_0
	case tensor.Q4_1:
		return dotQ4_1
	case tensor.Q8_0:
		return dotQ8_0
	case tensor.Q4_K:
		return dotQ4_K
	case tensor.Q5_K:
		return dotQ5_K
	case tensor.Q6_K:
		return dotQ6_K
	case tensor.W4A8:
		return dotW4A8
	case tensor.W8A8:
		return dotW8A8
	case tensor.W4A16:
		return dotQW4A16
	}
	panic(fmt.Sprintf("kernels: unsupported weight type %s", t))
}

func fp16At(b []byte) float32 { return tensor.FP16ToFloat32(binary.LittleEndian.Uint16(b)) }

func dotQF32(row, xq []byte) float32 {
	var s float64
	for i := 0; i < len(row); i += 4 {
		w := math.Float32frombits(binary.LittleEndian.Uint32(row[i:]))
		x := math.Float32frombits(binary.LittleEndian.Uint32(xq[i:]))
		s += float64(float32(w * x))
	}
	return float32(s)
}

func dotQF16(row, xq []byte) float32 {
	var s float64
	for i := 0; i < len(row); i += 2 {
		s += float64(float32(fp16At(row[i:]) * fp16At(xq[i:])))
	}
	return float32(s)
}

func dotQBF16(row, xq []byte) float32 {
	var s float64
	for i := 0; i < len(row); i += 2 {
		w := tensor.BF16ToFloat32(binary.LittleEndian.Uint16(row[i:]))
		x := tensor.BF16ToFloat32(binary.LittleEndian.Uint16(xq[i:]))
		s += float64(float32(w * x))
	}
	return float32(s)
}

// dotQ4_0: per block sumi = sum (q-8)*q8, then sumf += sumi*dx*dy.
func dotQ4_0(row, xq []byte) float32 {
	var sumf float32
	for ib := 0; ib < len(row)/18; ib++ {
		x := (*[18]byte)(row[ib*18:])
		y := (*[q8_0Bytes]byte)(xq[ib*q8_0Bytes:])
		var s0, s1 int32
		for j := 0; j < 16; j++ {
			s0 += (int32(x[2+j]&0x0f) - 8) * int32(int8(y[2+j]))
			s1 += (int32(x[2+j]>>4) - 8) * int32(int8(y[18+j]))
		}
		sumf += float32(float32(float32(s0+s1)*fp16At(x[0:])) * fp16At(y[0:]))
	}
	return sumf
}

// dotQ4_1: per block sumi = sum q*q8, then sumf += (dx*dy)*sumi + mx*sy,
// where sy = dy*sum(q8) was stored by the quantizer.
func dotQ4_1(row, xq []byte) float32 {
	var sumf float32
	for ib := 0; ib < len(row)/20; ib++ {
		x := (*[20]byte)(row[ib*20:])
		y := (*[q8_1Bytes]byte)(xq[ib*q8_1Bytes:])
		var s0, s1 int32
		for j := 0; j < 16; j++ {
			s0 += int32(x[4+j]&0x0f) * int32(int8(y[4+j]))
			s1 += int32(x[4+j]>>4) * int32(int8(y[20+j]))
		}
		dd := fp16At(x[0:]) * fp16At(y[0:])
		sumf += float32(float32(dd*float32(s0+s1)) + float32(fp16At(x[2:])*fp16At(y[2:])))
	}
	return sumf
}

// dotQ8_0: per block sumi = sum q*q8, then sumf += sumi*(dx*dy).
func dotQ8_0(row, xq []byte) float32 {
	var sumf float32
	for ib := 0; ib < len(row)/34; ib++ {
		x := (*[34]byte)(row[ib*34:])
		y := (*[q8_0Bytes]byte)(xq[ib*q8_0Bytes:])
		var s int32
		for j := 0; j < 32; j++ {
			s += int32(int8(x[2+j])) * int32(int8(y[2+j]))
		}
		sumf += float32(float32(s) * float32(fp16At(x[0:])*fp16At(y[0:])))
	}
	return sumf
}

// dotQW4A16 is dotW4A16 on float32 activations given as little-endian
// bytes (QuantizeActivations(W4A16, x)), read one at a time because the
// bytes need not be aligned for a []float32 view.
func dotQW4A16(row, xq []byte) float32 {
	var buf [tensor.WeightGroup]float32
	var s float64
	for g := 0; g < len(xq)/4; g += tensor.WeightGroup {
		for i := range buf {
			buf[i] = math.Float32frombits(binary.LittleEndian.Uint32(xq[4*(g+i):]))
		}
		// The float64 sum continues across groups: add each group's
		// products to s in element order, as dotW4A16 does.
		s = dotW4Group(s, row[g/tensor.WeightGroup*66:], &buf)
	}
	return float32(s)
}

// dotW4A8 is dotQ4_0 with the group's d for each of its four 32-sub-blocks:
// per sub-block sumi = sum (q-8)*q8, then sumf += sumi*dw*dy, in sub-block
// order, so a W4A8 row gives the bits of the Q4_0 row holding its values.
func dotW4A8(row, xq []byte) float32 {
	var sumf float32
	for ig := 0; ig < len(row)/66; ig++ {
		x := (*[66]byte)(row[ig*66:])
		dw := fp16At(x[0:])
		for s := 0; s < 4; s++ {
			y := (*[q8_0Bytes]byte)(xq[(4*ig+s)*q8_0Bytes:])
			qs := x[2+16*s : 18+16*s]
			var s0, s1 int32
			for j := 0; j < 16; j++ {
				s0 += (int32(qs[j]&0x0f) - 8) * int32(int8(y[2+j]))
				s1 += (int32(qs[j]>>4) - 8) * int32(int8(y[18+j]))
			}
			sumf += float32(float32(float32(s0+s1)*dw) * fp16At(y[0:]))
		}
	}
	return sumf
}

// dotW8A8 is dotQ8_0 with the group's d for each 32-sub-block.
func dotW8A8(row, xq []byte) float32 {
	var sumf float32
	for ig := 0; ig < len(row)/130; ig++ {
		x := (*[130]byte)(row[ig*130:])
		dw := fp16At(x[0:])
		for s := 0; s < 4; s++ {
			y := (*[q8_0Bytes]byte)(xq[(4*ig+s)*q8_0Bytes:])
			var sum int32
			for j := 0; j < 32; j++ {
				sum += int32(int8(x[2+32*s+j])) * int32(int8(y[2+j]))
			}
			sumf += float32(float32(sum) * float32(dw*fp16At(y[0:])))
		}
	}
	return sumf
}

// The K-quant dots follow ggml's generic code: 8 integer lanes (element
// index mod 8) accumulate scale*q*q8 over a super-block; each lane is then
// scaled by d = dx*dy and added to its own float32 lane sum across
// super-blocks. For Q4_K/Q5_K the mins enter separately as -dmin*dy*
// sum(m*bsum) on a running sumf, and the 8 lane sums are added to sumf at
// the end.

// kLanes accumulates the integer lanes of one super-block given its 256
// weight quants and one scale per 16 elements.
func kLanes(a *[tensor.QK_K]int8, scale *[16]int32, q8 []byte) (lanes [8]int32) {
	for g := 0; g < 16; g++ {
		sc := scale[g]
		for l := 0; l < 16; l++ {
			e := 16*g + l
			// a*q8 fits int16 in ggml's aux16; the product is exact here too.
			lanes[l%8] += sc * (int32(a[e]) * int32(int8(q8[e])))
		}
	}
	return lanes
}

// q8KScale and q8KSum read the scale and the g-th 16-quant sum of a Q8_K
// block.
func q8KScale(y []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(y[0:])) }

func q8KSum(y []byte, g int) int32 {
	return int32(int16(binary.LittleEndian.Uint16(y[4+tensor.QK_K+2*g:])))
}

func dotQ4_K(row, xq []byte) float32 { return dotQ45K(row, xq, 144, false) }
func dotQ5_K(row, xq []byte) float32 { return dotQ45K(row, xq, 176, true) }

func dotQ45K(row, xq []byte, blockBytes int, five bool) float32 {
	var sums [8]float32
	var sumf float32
	for ib := 0; ib < len(row)/blockBytes; ib++ {
		x := row[ib*blockBytes : (ib+1)*blockBytes]
		y := xq[ib*q8_KBytes : (ib+1)*q8_KBytes]
		var a [tensor.QK_K]int8
		if five {
			unpackQ5K(&a, x[16:48], x[48:176])
		} else {
			unpackQ4K(&a, x[16:144])
		}
		var scale [16]int32
		var sumi int32
		for j := 0; j < 8; j++ {
			sc, m := tensor.ScaleMinK4(j, x[4:16])
			scale[2*j], scale[2*j+1] = int32(sc), int32(sc)
			sumi += (q8KSum(y, 2*j) + q8KSum(y, 2*j+1)) * int32(m)
		}
		yd := q8KScale(y)
		lanes := kLanes(&a, &scale, y[4:])
		d := fp16At(x[0:]) * yd
		for l := range sums {
			sums[l] += float32(d * float32(lanes[l]))
		}
		dmin := fp16At(x[2:]) * yd
		sumf -= float32(dmin * float32(sumi))
	}
	for _, s := range sums {
		sumf += s
	}
	return sumf
}

// unpackQ4K expands the nibbles of a Q4_K block: in each 64 elements the
// low nibbles of 32 bytes, then their high nibbles.
func unpackQ4K(a *[tensor.QK_K]int8, ql []byte) {
	for k := 0; k < 4; k++ {
		q := ql[32*k : 32*k+32]
		for l, b := range q {
			a[64*k+l] = int8(b & 0x0f)
			a[64*k+32+l] = int8(b >> 4)
		}
	}
}

// unpackQ5K is unpackQ4K plus the fifth bits: bit 2k of qh[l] for the low
// nibbles of 64-chunk k, bit 2k+1 for the high ones.
func unpackQ5K(a *[tensor.QK_K]int8, qh, ql []byte) {
	for k := 0; k < 4; k++ {
		q := ql[32*k : 32*k+32]
		for l, b := range q {
			h := qh[l] >> (2 * k)
			a[64*k+l] = int8(b&0x0f | (h&1)<<4)
			a[64*k+32+l] = int8(b>>4 | (h&2)<<3)
		}
	}
}

func dotQ6_K(row, xq []byte) float32 {
	var sums [8]float32
	for ib := 0; ib < len(row)/210; ib++ {
		x := (*[210]byte)(row[ib*210:])
		y := xq[ib*q8_KBytes : (ib+1)*q8_KBytes]
		var a [tensor.QK_K]int8
		for n := 0; n < 2; n++ {
			ql := x[64*n : 64*n+64]
			qh := x[128+32*n : 128+32*n+32]
			for l := 0; l < 32; l++ {
				e := 128*n + l
				a[e] = int8(ql[l]&0x0f|(qh[l]&3)<<4) - 32
				a[e+32] = int8(ql[l+32]&0x0f|(qh[l]>>2&3)<<4) - 32
				a[e+64] = int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				a[e+96] = int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			}
		}
		var scale [16]int32
		for g := range scale {
			scale[g] = int32(int8(x[192+g]))
		}
		yd := q8KScale(y)
		lanes := kLanes(&a, &scale, y[4:])
		d := fp16At(x[208:]) * yd
		for l := range sums {
			sums[l] += float32(d * float32(lanes[l]))
		}
	}
	var sumf float32
	for _, s := range sums {
		sumf += s
	}
	return sumf
}
