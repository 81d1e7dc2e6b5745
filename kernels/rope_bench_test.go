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
		b.Run(fmt.Sprintf("heads/rot=%d", c.rot), func(b *testing.B) {
			pos := 0
			for b.Loop() {
				tab.NeoXHeads(x, 256, pos)
				pos = (pos + 1) % 2048
			}
		})
	}
}

// NeoXHeads is NeoX on every head, bit for bit.
func TestNeoXHeads(t *testing.T) {
	for _, rot := range []int{16, 64, 256} {
		tab := kernels.NewRoPETable(rot, 1e4)
		for _, pos := range []int{0, 31, 32, 1000, 4097} {
			x := randomVec(newRNG(uint64(pos)), 5*256)
			y := append([]float32(nil), x...)
			for h := range 5 {
				tab.NeoX(x[h*256:(h+1)*256], pos)
			}
			tab.NeoXHeads(y, 256, pos)
			for i := range x {
				if x[i] != y[i] {
					t.Fatalf("rot %d pos %d: value %d is %g by heads, %g by NeoX", rot, pos, i, y[i], x[i])
				}
			}
		}
	}
}
