//go:build (amd64 || arm64) && gc && !purego

package kernels

import (
	"fmt"

	"github.com/siskin-ml/siskin/tensor"
)

// w4a16Vec wraps a one-activation-row W4A16 kernel f (w4a16_avx2_amd64.s,
// w4a16_avx512_amd64.s, w4a16_neon_arm64.s): rows of whole 66-byte groups
// of 128 elements, float32 activations.
func w4a16Vec(f func(out []float32, w []byte, stride, groups int, x []float32)) func(out []float32, w []byte, stride int, xb []byte) {
	return func(out []float32, w []byte, stride int, xb []byte) {
		x := bytesF32(xb)
		groups, rows := stride/66, len(out)
		if rows == 0 {
			return
		}
		if stride != groups*66 || len(w) < rows*stride || len(x) < groups*tensor.WeightGroup {
			panic(fmt.Sprintf("kernels: bad kernel arguments: %d rows, stride %d, %d weight bytes, %d activations", rows, stride, len(w), len(x)))
		}
		if groups == 0 {
			clear(out)
			return
		}
		f(out, w, stride, groups, x)
	}
}
