package kernels_test

import (
	"testing"

	"github.com/siskin-ml/siskin/kernels"
)

// The table keeps float64 cos and sin for a grid of positions 32 apart
// and for the 32 offsets within a step.
func TestRoPEBytes(t *testing.T) {
	const step = 32
	tab := kernels.NewRoPETable(256, 1e4)
	if got, want := tab.Bytes(), int64(8*128); got != want {
		t.Errorf("empty table: %d bytes, want %d (the frequencies)", got, want)
	}
	fine := int64(step * 128 * 8 * 2)
	tab.Ensure(2048)
	if tab.Len() != 2048 {
		t.Fatalf("Len %d after Ensure(2048)", tab.Len())
	}
	if got, want := tab.Bytes(), int64(2048/step*128*8*2)+fine+8*128; got != want {
		t.Errorf("2048 positions: %d bytes, want %d", got, want)
	}
	tab.CosSin(2048) // one past: the table doubles
	if tab.Len() != 4096 {
		t.Fatalf("Len %d after CosSin(2048)", tab.Len())
	}
	if got, want := tab.Bytes(), int64(4096/step*128*8*2)+fine+8*128; got != want {
		t.Errorf("after doubling: %d bytes, want %d", got, want)
	}
}

// The Spark-1.7B shape has one table per layer type: full layers rotate
// 64 of 256 dims (theta 5e6), sliding layers all 256 (theta 1e4). At a
// context of 2048 they must hold under 2 MiB together.
func TestRoPEBytesSpark17B(t *testing.T) {
	full, sliding := kernels.NewRoPETable(64, 5e6), kernels.NewRoPETable(256, 1e4)
	full.Ensure(2048)
	sliding.Ensure(2048)
	total := full.Bytes() + sliding.Bytes()
	t.Logf("Spark-1.7B RoPE tables at 2048 positions: full %d + sliding %d = %d bytes (%.3f MiB)",
		full.Bytes(), sliding.Bytes(), total, float64(total)/(1<<20))
	if total >= 2<<20 {
		t.Errorf("Spark-1.7B RoPE tables at 2048 positions take %d bytes, want < 2 MiB", total)
	}
}
