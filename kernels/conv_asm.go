//go:build (amd64 || arm64) && gc && !purego

package kernels

import "unsafe"

// convAsm is an assembly tile of fixed height: strides in bytes, no
// bounds checks.
type convAsm func(dst *float32, ostride int, w *float32, bstride int, x *float32, xstride, in, taps, tapstep int, bias *float32)

// convCheck panics unless the tile's reads and writes lie inside its
// slices (the assembly does no bounds checks).
func convCheck(dst []float32, ostride int, w []float32, bstride int, x []float32, xstride, in, taps, tapstep, rows, blocks int, bias []float32) {
	if in < 1 || taps < 1 || rows < 1 ||
		len(dst) < (rows-1)*ostride+blocks*convBlock || len(bias) < blocks*convBlock ||
		len(w) < (blocks-1)*bstride+taps*in*convBlock ||
		len(x) < (rows-1)*xstride+(taps-1)*tapstep+in {
		panic("kernels: conv tile out of bounds")
	}
}

// oneBlockTile makes a convTile of one-block assembly tiles (tiles[r]
// computes r rows), calling it once per block.
func oneBlockTile(tiles []convAsm) convTile {
	return func(dst []float32, ostride int, w []float32, bstride int, x []float32, xstride, in, taps, tapstep, rows, blocks int, bias []float32) {
		convCheck(dst, ostride, w, bstride, x, xstride, in, taps, tapstep, rows, blocks, bias)
		f := tiles[rows]
		for b := range blocks {
			o := b * convBlock
			f(unsafe.SliceData(dst[o:]), 4*ostride, unsafe.SliceData(w[b*bstride:]), 0, unsafe.SliceData(x), 4*xstride, in, taps, 4*tapstep, unsafe.SliceData(bias[o:]))
		}
	}
}
