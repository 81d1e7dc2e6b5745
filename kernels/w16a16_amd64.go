//go:build amd64 && gc && !purego

package kernels

import (
	"fmt"

	"golang.org/x/sys/cpu"

	"github.com/siskin-ml/siskin/tensor"
)

// withW16A16 installs the VDPBF16PS kernels in the AVX-512 tier's table
// m where the CPU has AVX-512 BF16 (Zen 4 and 5, Intel from Cooper Lake
// and Sapphire Rapids); without it W16A16 runs the generic tier's Go.
func withW16A16(m map[tensor.Type]*matKernel) {
	if !cpu.X86.HasAVX512BF16 {
		return
	}
	m[tensor.W16A16] = &matKernel{actBytes: w16a16ActBytes, quant: w16a16QuantAsm, vec: w16a16VecAsm, vec4: w16a16Vec4Asm,
		rowTile: 6} // one group of the 6 rows vec4 takes: its weights stay in L1 while the activation rows pass
}

func w16a16QuantAsm(dst []byte, x []float32) {
	if len(dst) < w16a16ActBytes(len(x)) {
		panic("kernels: bad w16a16 quantize arguments")
	}
	n := len(x) / w16a16Chunk
	if n > 0 {
		w16a16QuantAVX512(dst, x, n)
	}
	if rest := x[n*w16a16Chunk:]; len(rest) > 0 {
		var buf [w16a16Chunk]float32
		copy(buf[:], rest)
		w16a16QuantAVX512(dst[2*n*w16a16Chunk:], buf[:], 1)
	}
}

// w16a16Shape returns a row's whole chunks and the mask of the columns of
// its last partial chunk (0 if none), panicking on arguments the
// assembly would read past.
func w16a16Shape(w []byte, stride, rows int, x []byte, xrows, xstride int) (chunks int, tail uint64) {
	cols := stride / 2
	if stride != 2*cols || len(w) < rows*stride || xrows > 0 && len(x) < (xrows-1)*xstride+w16a16ActBytes(cols) {
		panic(fmt.Sprintf("kernels: bad w16a16 kernel arguments: %d rows, stride %d, %d weight bytes, %d activation bytes", rows, stride, len(w), len(x)))
	}
	return cols / w16a16Chunk, 1<<(cols%w16a16Chunk) - 1
}

func w16a16VecAsm(out []float32, w []byte, stride int, x []byte) {
	chunks, tail := w16a16Shape(w, stride, len(out), x, 1, 0)
	n := len(out) &^ 7
	if n > 0 {
		w16a16Vec8AVX512(out[:n], w, stride, chunks, tail, x)
	}
	if n < len(out) {
		w16a16Vec1AVX512(out[n:], w[n*stride:], stride, chunks, tail, x)
	}
}

func w16a16Vec4Asm(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int) {
	if rows <= 0 {
		return
	}
	chunks, tail := w16a16Shape(w, stride, rows, x, 4, xstride)
	if ostride < rows || len(out) < 3*ostride+rows {
		panic(fmt.Sprintf("kernels: bad w16a16 kernel arguments: output of %d, stride %d, %d rows", len(out), ostride, rows))
	}
	n := rows - rows%6
	if n > 0 {
		w16a16Vec4AVX512(out, ostride, w, stride, n, chunks, tail, x, xstride)
	}
	for i := 0; n < rows && i < 4; i++ {
		w16a16Vec1AVX512(out[i*ostride+n:i*ostride+rows], w[n*stride:], stride, chunks, tail, x[i*xstride:])
	}
}

//go:noescape
func w16a16QuantAVX512(dst []byte, x []float32, chunks int)

//go:noescape
func w16a16Vec8AVX512(out []float32, w []byte, stride, chunks int, tail uint64, x []byte)

//go:noescape
func w16a16Vec1AVX512(out []float32, w []byte, stride, chunks int, tail uint64, x []byte)

//go:noescape
func w16a16Vec4AVX512(out []float32, ostride int, w []byte, stride, rows, chunks int, tail uint64, x []byte, xstride int)
