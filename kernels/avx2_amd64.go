//go:build amd64 && gc && !purego

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// The AVX2 tier. Each kernel walks whole row ranges in assembly (one call
// per matrix, or per tile of a batched product); the Go wrappers below
// check every bound the assembly relies on.

func avx2Kernels() map[tensor.Type]*matKernel {
	m := map[tensor.Type]*matKernel{
		tensor.F32: {float: true,
			vec: floatVec(4, f32At, f32VecAVX2), vec4: floatVecN(4, 4, f32At, f32Vec4AVX2)},
		tensor.F16: {float: true,
			vec: floatVec(2, f16At, f16VecAVX2), vec4: floatVecN(4, 2, f16At, f16Vec4AVX2)},
		tensor.BF16: {float: true,
			vec: floatVec(2, bf16At, bf16VecAVX2), vec4: floatVecN(4, 2, bf16At, bf16Vec4AVX2)},
		tensor.W4A16: {float: true, vec: w4a16Vec(w4a16VecAVX2), vec4: w4a16VecN(4, w4a16Vec4AVX2)},
		tensor.Q8_0: {actBytes: q8aBytes, quant: quantQ8aFast,
			vec: blockVec(34, 72, q8_0VecAVX2), vec4: blockVec4(34, 72, q8_0Vec4AVX2),
			packed: packedAVX2(8*34, 72, q8_0PackVecAVX2, q8_0PackVec4AVX2)},
		tensor.Q4_0: {actBytes: q8aBytes, quant: quantQ8aFast,
			vec: blockVec(18, 72, q4_0VecAVX2), vec4: blockVec4(18, 72, q4_0Vec4AVX2),
			packed: packedAVX2(8*18, 72, q4_0PackVecAVX2, q4_0PackVec4AVX2)},
		tensor.Q4_K: {actBytes: q8kaBytes, quant: quantQ8kaFast,
			vec: blockVec(144, 308, q4kVecAVX2), vec4: blockVec4(144, 308, q4kVec4AVX2),
			packed: packedAVX2(8*144, 308, q4kPackVecAVX2, q4kPackVec4AVX2)},
		tensor.Q5_K: {actBytes: q8kaBytes, quant: quantQ8kaFast,
			vec: blockVec(176, 308, q5kVecAVX2), vec4: blockVec4(176, 308, q5kVec4AVX2),
			packed: packedAVX2(8*176, 308, q5kPackVecAVX2, q5kPackVec4AVX2)},
		tensor.Q6_K: {actBytes: q8kaBytes, quant: quantQ8kaFast,
			vec: blockVec(210, 308, q6kVecAVX2), vec4: blockVec4(210, 308, q6kVec4AVX2),
			packed: with8(packedAVX2(8*210, 308, q6kPackVecAVX2, q6kPackVec4AVX2), 8*210, 308, q6kPackVec8AVX2)},
	}
	// W4A8/W8A8: the packed Q4_0/Q8_0 kernels once prepared, Go on q8a
	// otherwise (weightpath.go).
	m[tensor.W4A8], m[tensor.W8A8] = q8aWeightKernels(quantQ8aFast, m[tensor.Q4_0].packed, m[tensor.Q8_0].packed)
	return m
}

type vecAsm func(out []float32, w []byte, stride, blocks int, x []byte)
type vec4Asm func(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

// blockVec wraps a one-activation-row kernel for weights of bb-byte
// blocks with activations of xb bytes per block (in the kernel's layout).
func blockVec(bb, xb int, f vecAsm) func(out []float32, w []byte, stride int, x []byte) {
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

// blockVec4 wraps a four-activation-row kernel like blockVec.
func blockVec4(bb, xb int, f vec4Asm) func(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int) {
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

//go:noescape
func q8_0VecAVX2(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q8_0Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q4_0VecAVX2(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q4_0Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q4kVecAVX2(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q4kVec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

//go:noescape
func q6kVecAVX2(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q6kVec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

func f32At(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }
func f16At(b []byte, i int) float32 { return fp16At(b[2*i:]) }
func bf16At(b []byte, i int) float32 {
	return tensor.BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
}

// floatTail adds the products of the last cols%8 elements, which the
// assembly leaves out, to s in order (float32 products, no fusion).
func floatTail(s float32, row []byte, x []float32, from int, at func([]byte, int) float32) float32 {
	for i := from; i < len(x); i++ {
		s += float32(at(row, i) * x[i])
	}
	return s
}

// floatVec wraps a float-weight kernel (eb bytes per element).
func floatVec(eb int, at func([]byte, int) float32, f floatVecAsm) func(out []float32, w []byte, stride int, x []byte) {
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
		if 8*chunks < cols {
			for r := range out {
				out[r] = floatTail(out[r], w[r*stride:(r+1)*stride], x, 8*chunks, at)
			}
		}
	}
}

// floatVecN wraps a float-weight kernel f that takes n activation rows
// (4 or 8) at a time.
func floatVecN(n, eb int, at func([]byte, int) float32, f floatVec4Asm) func(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int) {
	return func(out []float32, ostride int, w []byte, stride, rows int, xb []byte, xstride int) {
		x := bytesF32(xb)
		cols := stride / eb
		xs := xstride / 4
		if rows <= 0 {
			return
		}
		if stride != cols*eb || len(w) < rows*stride || ostride < rows || len(out) < (n-1)*ostride+rows ||
			xstride != 4*xs || xs < cols || len(x) < (n-1)*xs+cols {
			panic(fmt.Sprintf("kernels: bad kernel arguments: %d rows, stride %d, %d weight bytes, %d activations", rows, stride, len(w), len(x)))
		}
		chunks := cols / 8
		if chunks > 0 {
			f(out, ostride, w, stride, rows, chunks, x, xs)
		} else {
			for i := 0; i < n; i++ {
				clear(out[i*ostride : i*ostride+rows])
			}
		}
		if 8*chunks < cols {
			for i := 0; i < n; i++ {
				for r := 0; r < rows; r++ {
					o := &out[i*ostride+r]
					*o = floatTail(*o, w[r*stride:(r+1)*stride], x[i*xs:i*xs+cols], 8*chunks, at)
				}
			}
		}
	}
}

type floatVecAsm func(out []float32, w []byte, stride, chunks int, x []float32)

// floatVec4Asm also types the kernels of 8 activation rows.
type floatVec4Asm func(out []float32, ostride int, w []byte, stride, rows, chunks int, x []float32, xstride int)

//go:noescape
func f32VecAVX2(out []float32, w []byte, stride, chunks int, x []float32)

//go:noescape
func f32Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, chunks int, x []float32, xstride int)

//go:noescape
func f16VecAVX2(out []float32, w []byte, stride, chunks int, x []float32)

//go:noescape
func f16Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, chunks int, x []float32, xstride int)

//go:noescape
func bf16VecAVX2(out []float32, w []byte, stride, chunks int, x []float32)

//go:noescape
func bf16Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, chunks int, x []float32, xstride int)

// quantQ8aFast and quantQ8kaFast are quantQ8a and quantQ8ka in assembly.
func quantQ8aFast(dst []byte, x []float32) {
	if len(x)%32 != 0 || len(dst) < len(x)/32*72 {
		panic("kernels: bad quantQ8a arguments")
	}
	quantQ8aAVX2(dst, x)
}

func quantQ8kaFast(dst []byte, x []float32) {
	if len(x)%tensor.QK_K != 0 || len(dst) < len(x)/tensor.QK_K*308 {
		panic("kernels: bad quantQ8ka arguments")
	}
	quantQ8kaAVX2(dst, x)
}

//go:noescape
func quantQ8aAVX2(dst []byte, x []float32)

//go:noescape
func quantQ8kaAVX2(dst []byte, x []float32)

//go:noescape
func q5kVecAVX2(out []float32, w []byte, stride, blocks int, x []byte)

//go:noescape
func q5kVec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)

// w4a16VecN wraps a W4A16 kernel f that takes n activation rows.
func w4a16VecN(n int, f floatVec4Asm) func(out []float32, ostride int, w []byte, stride, rows int, xb []byte, xstride int) {
	return func(out []float32, ostride int, w []byte, stride, rows int, xb []byte, xstride int) {
		x := bytesF32(xb)
		groups := stride / 66
		cols, xs := groups*tensor.WeightGroup, xstride/4
		if rows <= 0 {
			return
		}
		if stride != groups*66 || len(w) < rows*stride || ostride < rows || len(out) < (n-1)*ostride+rows ||
			xstride != 4*xs || xs < cols || len(x) < (n-1)*xs+cols {
			panic(fmt.Sprintf("kernels: bad kernel arguments: %d rows, stride %d, %d weight bytes, %d activations", rows, stride, len(w), len(x)))
		}
		if groups == 0 {
			for i := 0; i < n; i++ {
				clear(out[i*ostride : i*ostride+rows])
			}
			return
		}
		f(out, ostride, w, stride, rows, groups, x, xs)
	}
}

//go:noescape
func w4a16VecAVX2(out []float32, w []byte, stride, groups int, x []float32)

//go:noescape
func w4a16Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, groups int, x []float32, xstride int)
