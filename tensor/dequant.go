package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Dequantize expands src, consecutive elements of type t, into dst. len(dst)
// must be a whole number of t's blocks and len(src) exactly the bytes they
// take. The result is bit-identical to ggml's dequantize_row_* (and to
// gguf-py): the same float32 operations in the same order.
//
// Go may fuse x*y+z into one FMA, even across statements; ggml's
// reference rounds the product first, so every product that feeds an
// addition or subtraction below, directly or through a variable, is
// wrapped in an explicit float32() conversion, which the spec says forbids
// fusion.
func Dequantize(dst []float32, t Type, src []byte) error {
	if !t.Supported() {
		return fmt.Errorf("dequantize: unsupported tensor type %s", t)
	}
	want, err := RowBytes(t, len(dst))
	if err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	if len(src) != want {
		return fmt.Errorf("dequantize: %d %s elements take %d bytes, got %d", len(dst), t, want, len(src))
	}
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = FP16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case BF16, W16A16:
		for i := range dst {
			dst[i] = BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case Q4_0:
		for i := 0; i < len(dst); i += 32 {
			dequantQ4_0((*[32]float32)(dst[i:]), (*[18]byte)(src[i/32*18:]))
		}
	case Q4_1:
		for i := 0; i < len(dst); i += 32 {
			dequantQ4_1((*[32]float32)(dst[i:]), (*[20]byte)(src[i/32*20:]))
		}
	case Q8_0:
		for i := 0; i < len(dst); i += 32 {
			dequantQ8_0((*[32]float32)(dst[i:]), (*[34]byte)(src[i/32*34:]))
		}
	case Q4_K:
		for i := 0; i < len(dst); i += QK_K {
			dequantQ4_K((*[QK_K]float32)(dst[i:]), (*[144]byte)(src[i/QK_K*144:]))
		}
	case Q5_K:
		for i := 0; i < len(dst); i += QK_K {
			dequantQ5_K((*[QK_K]float32)(dst[i:]), (*[176]byte)(src[i/QK_K*176:]))
		}
	case Q6_K:
		for i := 0; i < len(dst); i += QK_K {
			dequantQ6_K((*[QK_K]float32)(dst[i:]), (*[210]byte)(src[i/QK_K*210:]))
		}
	case W4A8, W4A16:
		for i := 0; i < len(dst); i += WeightGroup {
			dequantW4((*[WeightGroup]float32)(dst[i:]), (*[66]byte)(src[i/WeightGroup*66:]))
		}
	case W8A8:
		for i := 0; i < len(dst); i += WeightGroup {
			dequantW8((*[WeightGroup]float32)(dst[i:]), (*[130]byte)(src[i/WeightGroup*130:]))
		}
	default:
		return fmt.Errorf("dequantize: no dequantizer for %s", t)
	}
	return nil
}

func fp16At(b []byte) float32 { return FP16ToFloat32(binary.LittleEndian.Uint16(b)) }

// Q4_0 block: fp16 d, 16 bytes of nibbles. Element j is the low nibble of
// byte j, element j+16 its high nibble; value (q-8)*d.
func dequantQ4_0(y *[32]float32, b *[18]byte) {
	d := fp16At(b[0:])
	qs := b[2:]
	for j := 0; j < 16; j++ {
		y[j] = float32(int(qs[j]&0x0f)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

// W4 block (W4A8, W4A16): fp16 d, four Q4_0-ordered 16-byte sub-blocks.
func dequantW4(y *[WeightGroup]float32, b *[66]byte) {
	d := fp16At(b[0:])
	for s := 0; s < 4; s++ {
		qs := b[2+16*s:]
		for j := 0; j < 16; j++ {
			y[32*s+j] = float32(int(qs[j]&0x0f)-8) * d
			y[32*s+j+16] = float32(int(qs[j]>>4)-8) * d
		}
	}
}

// W8A8 block: fp16 d, 128 int8; value q*d.
func dequantW8(y *[WeightGroup]float32, b *[130]byte) {
	d := fp16At(b[0:])
	for j := 0; j < WeightGroup; j++ {
		y[j] = float32(int8(b[2+j])) * d
	}
}

// Q4_1 block: fp16 d, fp16 m, 16 bytes of nibbles; value q*d + m.
func dequantQ4_1(y *[32]float32, b *[20]byte) {
	d := fp16At(b[0:])
	m := fp16At(b[2:])
	qs := b[4:]
	for j := 0; j < 16; j++ {
		y[j] = float32(float32(qs[j]&0x0f)*d) + m
		y[j+16] = float32(float32(qs[j]>>4)*d) + m
	}
}

// Q8_0 block: fp16 d, 32 int8; value q*d.
func dequantQ8_0(y *[32]float32, b *[34]byte) {
	d := fp16At(b[0:])
	for j := 0; j < 32; j++ {
		y[j] = float32(int8(b[2+j])) * d
	}
}

// ScaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from the
// 12 packed scale bytes of a Q4_K or Q5_K block: j<4 keeps them in the low
// 6 bits of bytes j and j+4; j>=4 splits them into a nibble of byte j+4 and
// the top 2 bits of bytes j-4 (scale) and j (min).
func ScaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0x0f | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// Q4_K block: fp16 d, fp16 dmin, 12 scale bytes, 128 bytes of nibbles.
// Each 64 elements use 32 bytes: low nibbles for sub-block 2k, high for
// 2k+1; value d*sc*q - dmin*m, rounded as ggml does: d1 = d*sc, m1 =
// dmin*m, y = d1*q - m1.
func dequantQ4_K(y *[QK_K]float32, b *[144]byte) {
	d := fp16At(b[0:])
	dmin := fp16At(b[2:])
	scales := b[4:16]
	q := b[16:144]
	for k := 0; k < 4; k++ {
		sc, m := ScaleMinK4(2*k, scales)
		d1, m1 := float32(d*float32(sc)), float32(dmin*float32(m))
		sc, m = ScaleMinK4(2*k+1, scales)
		d2, m2 := float32(d*float32(sc)), float32(dmin*float32(m))
		qq := q[32*k : 32*k+32]
		out := y[64*k : 64*k+64]
		for l := 0; l < 32; l++ {
			out[l] = float32(d1*float32(qq[l]&0x0f)) - m1
			out[l+32] = float32(d2*float32(qq[l]>>4)) - m2
		}
	}
}

// Q5_K block: fp16 d, fp16 dmin, 12 scale bytes, 32 bytes qh, 128 bytes of
// nibbles. Like Q4_K, with a fifth bit from qh: bit 2k of qh[l] for the low
// nibble of 64-chunk k, bit 2k+1 for the high nibble.
func dequantQ5_K(y *[QK_K]float32, b *[176]byte) {
	d := fp16At(b[0:])
	dmin := fp16At(b[2:])
	scales := b[4:16]
	qh := b[16:48]
	ql := b[48:176]
	for k := 0; k < 4; k++ {
		sc, m := ScaleMinK4(2*k, scales)
		d1, m1 := float32(d*float32(sc)), float32(dmin*float32(m))
		sc, m = ScaleMinK4(2*k+1, scales)
		d2, m2 := float32(d*float32(sc)), float32(dmin*float32(m))
		u1, u2 := byte(1)<<(2*k), byte(2)<<(2*k)
		qq := ql[32*k : 32*k+32]
		out := y[64*k : 64*k+64]
		for l := 0; l < 32; l++ {
			lo, hi := qq[l]&0x0f, qq[l]>>4
			if qh[l]&u1 != 0 {
				lo += 16
			}
			if qh[l]&u2 != 0 {
				hi += 16
			}
			out[l] = float32(d1*float32(lo)) - m1
			out[l+32] = float32(d2*float32(hi)) - m2
		}
	}
}

// Q6_K block: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16
// int8 scales, fp16 d. Per 128 elements: 64 ql bytes, 32 qh bytes, 8
// scales, element e of the chunk using scale e/16; value d*sc*(q-32).
func dequantQ6_K(y *[QK_K]float32, b *[210]byte) {
	d := fp16At(b[208:])
	for n := 0; n < 2; n++ {
		ql := b[64*n : 64*n+64]
		qh := b[128+32*n : 128+32*n+32]
		sc := b[192+8*n : 192+8*n+8]
		out := y[128*n : 128*n+128]
		for l := 0; l < 32; l++ {
			is := l / 16
			q1 := int8(ql[l]&0x0f|(qh[l]>>0&3)<<4) - 32
			q2 := int8(ql[l+32]&0x0f|(qh[l]>>2&3)<<4) - 32
			q3 := int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q4 := int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			out[l] = d * float32(int8(sc[is])) * float32(q1)
			out[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
			out[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
			out[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
		}
	}
}
