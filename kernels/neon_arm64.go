//go:build arm64 && gc && !purego

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// The arm64 tiers: "neon" (Advanced SIMD, every arm64 CPU), "dotprod"
// (the same kernels with SDOT for the int8 dot products) and "i8mm"
// (dotprod with SMMLA 2x2-tile kernels for the 4-row Q4_0/Q8_0 products,
// mm_neon_arm64.s). They differ only in how a block's integer sum is
// formed (SMULL/SMLAL/SADDLP, SDOT or SMMLA), which is exact either way,
// so they give the same bits. Each
// kernel walks whole row ranges in assembly; the Go wrappers below check
// every bound the assembly relies on. Activations use the q8a and q8ka
// layouts of actlayout.go (only the quants, d and, for the K-quants, the
// 32-quant sums are read). Q8_0, Q4_0 and the K-quants also have 4-row
// kernels (a weight row loaded once for four activation rows, for MatMul)
// whose results equal the one-row kernels' bit for bit.
//
// Float rounding: the 32-blocks add d_w*d_x*sum per block into 4 float
// lanes (block b into lane b%4, blocks past the last multiple of 4 into a
// scalar); the K-quants add d*yd*(scaled sub-block sums) into 4 lanes per
// super-block; float weights accumulate in 16 lanes (8 past the last
// multiple of 16 elements). These are within the bounds of tier_test.go.

func neonKernels(dot, mm bool) map[tensor.Type]*matKernel {
	q8_0, q8_0x4 := q8_0VecNEON, q8_0Vec4NEON
	q4_0, q4_0x4 := q4_0VecNEON, q4_0Vec4NEON
	q4k, q5k, q6k := q4kVecNEON, q5kVecNEON, q6kVecNEON
	q4kx4, q5kx4, q6kx4 := q4kVec4NEON, q5kVec4NEON, q6kVec4NEON
	if dot {
		q8_0, q8_0x4 = q8_0VecDot, q8_0Vec4Dot
		q4_0, q4_0x4 = q4_0VecDot, q4_0Vec4Dot
		q4k, q5k, q6k = q4kVecDot, q5kVecDot, q6kVecDot
		q4kx4, q5kx4, q6kx4 = q4kVec4Dot, q5kVec4Dot, q6kVec4Dot
	}
	m := map[tensor.Type]*matKernel{
		tensor.F32:   {float: true, vec: neonFloatVec(4, neonF32At, f32VecNEON)},
		tensor.F16:   {float: true, vec: neonFloatVec(2, neonF16At, f16VecNEON)},
		tensor.BF16:  {float: true, vec: neonFloatVec(2, neonBF16At, bf16VecNEON)},
		tensor.W4A16: {float: true, vec: w4a16Vec(w4a16VecNEON)}, // no 4-row form: MatMul runs it once per activation row
		tensor.Q8_0: {actBytes: q8aBytes, quant: quantQ8a,
			vec: neonBlockVec(34, 68, q8_0), vec4: neonBlockVec4(34, 68, q8_0x4)},
		tensor.Q4_0: {actBytes: q8aBytes, quant: quantQ8a,
			vec: neonBlockVec(18, 68, q4_0), vec4: neonBlockVec4(18, 68, q4_0x4)},
		tensor.Q4_K: {actBytes: q8kaBytes, quant: quantQ8ka,
			vec: neonBlockVec(144, 308, q4k), vec4: neonBlockVec4(144, 308, q4kx4)},
		tensor.Q5_K: {actBytes: q8kaBytes, quant: quantQ8ka,
			vec: neonBlockVec(176, 308, q5k), vec4: neonBlockVec4(176, 308, q5kx4)},
		tensor.Q6_K: {actBytes: q8kaBytes, quant: quantQ8ka,
			vec: neonBlockVec(210, 308, q6k), vec4: neonBlockVec4(210, 308, q6kx4)},
	}
	if mm {
		m[tensor.Q8_0].vec4 = neonMMVec4(34, 68, q8_0Vec4MM, q8_0x4)
		m[tensor.Q4_0].vec4 = neonMMVec4(18, 68, q4_0Vec4MM, q4_0x4)
	}
	// W4A8/W8A8 read q8a like Q4_0/Q8_0 (so they share QuantizedActs):
	// prepared, they run as the Q4_0/Q8_0 rows holding the same values;
	// not prepared, with Go kernels (weightpath.go).
	m[tensor.W4A8], m[tensor.W8A8] = q8aWeightKernels(quantQ8a,
		neonPacked(18, m[tensor.Q4_0]), neonPacked(34, m[tensor.Q8_0]))
	return m
}

// neonPacked runs weights packed by packRowMajor into row-major blocks of
// bb bytes with k, the tier's row-major kernel for those blocks: a run of
// groups is a matrix of 8*groups rows.
func neonPacked(bb int, k *matKernel) *packedKernel {
	return &packedKernel{
		pack: packRowMajor,
		vec1: func(out []float32, w []byte, groups, blocks int, x []byte) {
			k.vec(out[:packRows*max(groups, 0)], w, blocks*bb, x)
		},
		vec4: func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int) {
			k.vec4(out, ostride, w, blocks*bb, packRows*groups, x, xstride)
		},
	}
}

type neonVecAsm func(out []float32, w []byte, stride, blocks int, x []byte)
type neonVec4Asm func(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

// neonBlockVec wraps a one-activation-row kernel for weights of bb-byte
// blocks with activations of xb bytes per block (in the kernel's layout).
func neonBlockVec(bb, xb int, f neonVecAsm) func(out []float32, w []byte, stride int, x []byte) {
	return func(out []float32, w []byte, stride int, x []byte) {
		nb := stride / bb
		rows := len(out)
		if rows == 0 {
			return
		}
		if stride != nb*bb || len(w) < rows*stride || len(x) < nb*xb {
			panic(fmt.Sprintf("kernels: bad kernel arguments: %d rows, stride %d, %d weight bytes, %d activation bytes", rows, stride, len(w), len(x)))
		}
		if nb == 0 {
			clear(out)
			return
		}
		f(out, w, stride, nb, x)
	}
}

// neonBlockVec4 wraps a four-activation-row kernel like neonBlockVec.
func neonBlockVec4(bb, xb int, f neonVec4Asm) func(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int) {
	return func(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int) {
		nb := stride / bb
		if rows <= 0 {
			return
		}
		if stride != nb*bb || len(w) < rows*stride || ostride < rows || len(out) < 3*ostride+rows ||
			xstride < nb*xb || len(x) < 3*xstride+nb*xb {
			panic(fmt.Sprintf("kernels: bad kernel arguments: %d rows, stride %d, %d weight bytes, %d activation bytes", rows, stride, len(w), len(x)))
		}
		if nb == 0 {
			for i := 0; i < 4; i++ {
				clear(out[i*ostride : i*ostride+rows])
			}
			return
		}
		f(out, ostride, w, stride, rows, nb, x, xstride)
	}
}

// neonMMVec4 wraps a 2x2-tile kernel mm (even row counts) for rows of
// bb-byte blocks; an odd last row goes to the four-row kernel f, whose
// results mm's equal bit for bit.
func neonMMVec4(bb, xb int, mm, f neonVec4Asm) func(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int) {
	even, one := neonBlockVec4(bb, xb, mm), neonBlockVec4(bb, xb, f)
	return func(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int) {
		if e := rows &^ 1; e > 0 {
			even(out, ostride, w, stride, e, x, xstride)
		}
		if rows > 0 && rows&1 != 0 {
			one(out[rows-1:], ostride, w[(rows-1)*stride:], stride, 1, x, xstride)
		}
	}
}

func neonF32At(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}
func neonF16At(b []byte, i int) float32 { return fp16At(b[2*i:]) }
func neonBF16At(b []byte, i int) float32 {
	return tensor.BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
}

type neonFloatAsm func(out []float32, w []byte, stride, chunks int, x []float32)

// neonFloatVec wraps a float-weight kernel (eb bytes per element) that
// handles the first 8*chunks elements of each row; the last cols%8
// products are added in order here (float32 products, no fusion).
func neonFloatVec(eb int, at func([]byte, int) float32, f neonFloatAsm) func(out []float32, w []byte, stride int, x []byte) {
	return func(out []float32, w []byte, stride int, xb []byte) {
		x := bytesF32(xb)
		cols, rows := stride/eb, len(out)
		if rows == 0 {
			return
		}
		if stride != cols*eb || len(w) < rows*stride || len(x) < cols {
			panic(fmt.Sprintf("kernels: bad kernel arguments: %d rows, stride %d, %d weight bytes, %d activations", rows, stride, len(w), len(x)))
		}
		x = x[:cols]
		chunks := cols / 8
		if chunks > 0 {
			f(out, w, stride, chunks, x)
		} else {
			clear(out)
		}
		for r := range out {
			row := w[r*stride : (r+1)*stride]
			s := out[r]
			for i := 8 * chunks; i < cols; i++ {
				s += float32(at(row, i) * x[i])
			}
			out[r] = s
		}
	}
}

//go:noescape
func q8_0VecNEON(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q8_0VecDot(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q8_0Vec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q8_0Vec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q4_0VecNEON(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q4_0VecDot(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q4_0Vec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q4_0Vec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q8_0Vec4MM(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q4_0Vec4MM(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q4kVecNEON(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q4kVecDot(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q4kVec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q4kVec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q5kVecNEON(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q5kVecDot(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q5kVec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q5kVec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q6kVecNEON(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q6kVecDot(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q6kVec4NEON(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q6kVec4Dot(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func f32VecNEON(out []float32, w []byte, stride, chunks int, x []float32)

//go:noescape
func f16VecNEON(out []float32, w []byte, stride, chunks int, x []float32)

//go:noescape
func bf16VecNEON(out []float32, w []byte, stride, chunks int, x []float32)

//go:noescape
func w4a16VecNEON(out []float32, w []byte, stride, groups int, x []float32)
