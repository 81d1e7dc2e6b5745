//go:build amd64 && gc && !purego

package kernels

import "fmt"

// The AVX2 packed kernels (generated: packk_avx2_amd64.s, by kernels/_gen).
// The wrappers check every bound the assembly relies on.

// packedAVX2 wraps the one- and four-row kernels for group blocks of gb
// bytes and activations of xb bytes per block.
func packedAVX2(gb, xb int, f1 packVecAsm, f4 packVec4Asm) *packedKernel {
	return &packedKernel{
		vec1: func(out []float32, w []byte, groups, blocks int, x []byte) {
			if groups <= 0 {
				return
			}
			checkPacked1(out, w, groups, blocks, gb, xb, x)
			f1(out, w, groups, blocks, x)
		},
		vec4: func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int) {
			if groups <= 0 {
				return
			}
			checkPacked4(out, ostride, w, groups, blocks, gb, xb, x, xstride)
			f4(out, ostride, w, groups, blocks, x, xstride)
		},
	}
}

// checkPacked1 panics unless a one-row packed kernel may read groups
// groups of blocks blocks (gb bytes each) of w, blocks blocks (xb bytes
// each) of x, and write 8*groups outputs.
func checkPacked1(out []float32, w []byte, groups, blocks, gb, xb int, x []byte) {
	if blocks <= 0 || len(w) < groups*blocks*gb || len(out) < packRows*groups || len(x) < blocks*xb {
		panic(fmt.Sprintf("kernels: bad packed kernel arguments: %d groups of %d blocks, %d weight bytes, %d outputs, %d activation bytes", groups, blocks, len(w), len(out), len(x)))
	}
}

// checkPacked4 is checkPacked1 for the four-row kernels.
func checkPacked4(out []float32, ostride int, w []byte, groups, blocks, gb, xb int, x []byte, xstride int) {
	if blocks <= 0 || len(w) < groups*blocks*gb || ostride < packRows*groups || len(out) < 3*ostride+packRows*groups ||
		xstride < blocks*xb || len(x) < 3*xstride+blocks*xb {
		panic(fmt.Sprintf("kernels: bad packed kernel arguments: %d groups of %d blocks, %d weight bytes, %d outputs (stride %d), %d activation bytes (stride %d)", groups, blocks, len(w), len(out), ostride, len(x), xstride))
	}
}

// with8 adds an eight-activation-row kernel to k.
func with8(k *packedKernel, gb, xb int, f8 packVec4Asm) *packedKernel {
	k.vec8 = func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int) {
		if groups <= 0 {
			return
		}
		if blocks <= 0 || len(w) < groups*blocks*gb || ostride < packRows*groups || len(out) < 7*ostride+packRows*groups ||
			xstride < blocks*xb || len(x) < 7*xstride+blocks*xb {
			panic(fmt.Sprintf("kernels: bad packed kernel arguments: %d groups of %d blocks, %d weight bytes, %d outputs (stride %d), %d activation bytes (stride %d)", groups, blocks, len(w), len(out), ostride, len(x), xstride))
		}
		f8(out, ostride, w, groups, blocks, x, xstride)
	}
	return k
}

type packVecAsm func(out []float32, w []byte, groups, blocks int, x []byte)
type packVec4Asm func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int)

//go:noescape
func q4kPackVecAVX2(out []float32, w []byte, groups, blocks int, x []byte)

//go:noescape
func q4kPackVec4AVX2(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int)

//go:noescape
func q5kPackVecAVX2(out []float32, w []byte, groups, blocks int, x []byte)

//go:noescape
func q5kPackVec4AVX2(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int)

//go:noescape
func q6kPackVecAVX2(out []float32, w []byte, groups, blocks int, x []byte)

//go:noescape
func q6kPackVec4AVX2(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int)

//go:noescape
func q4_0PackVecAVX2(out []float32, w []byte, groups, blocks int, x []byte)

//go:noescape
func q4_0PackVec4AVX2(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int)

//go:noescape
func q8_0PackVecAVX2(out []float32, w []byte, groups, blocks int, x []byte)

//go:noescape
func q8_0PackVec4AVX2(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int)

//go:noescape
func q6kPackVec8AVX2(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int)
