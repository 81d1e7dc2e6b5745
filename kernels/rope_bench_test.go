package kernels_test

import (
	"fmt"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
)

// BenchmarkRoPE: rotating the 16 query and 8 key heads of one token (head
// dim 256) in the NeoX layout, for the two Spark-1.7B layer types.
func BenchmarkRoPE(b *testing.B) {
	for _, c := range []struct {
		rot   int
		theta float64
	}{{256, 1e4}, {64, 5e6}} {
		tab := kernels.NewRoPETable(c.rot, c.theta)
		tab.Ensure(2048)
		x := randomVec(newRNG(40), 24*256)
		b.Run(fmt.Sprintf("rot=%d", c.rot), func(b *testing.B) {
			pos := 0
			for b.Loop() {
				for h := range 24 {
					tab.NeoX(x[h*256:(h+1)*256], pos)
				}
				pos = (pos + 1) % 2048
			}
		})
	}
}
