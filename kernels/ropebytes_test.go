package kernels_test

import (
	"testing"

	"github.com/siskin-ml/siskin/kernels"
)

func TestRoPEBytes(t *testing.T) {
	tab := kernels.NewRoPETable(256, 1e4)
	if got, want := tab.Bytes(), int64(8*128); got != want {
		t.Errorf("empty table: %d bytes, want %d (the frequencies)", got, want)
	}
	tab.Ensure(2048)
	if tab.Len() != 2048 {
		t.Fatalf("Len %d after Ensure(2048)", tab.Len())
	}
	// cos and sin, float32, rot/2 per position.
	if got, want := tab.Bytes(), int64(2048*128*4*2+8*128); got != want {
		t.Errorf("2048 positions: %d bytes, want %d", got, want)
	}
	tab.CosSin(2048) // one past: the table doubles
	if got, want := tab.Bytes(), int64(4096*128*4*2+8*128); got != want {
		t.Errorf("after doubling: %d bytes, want %d", got, want)
	}
}

// The Spark-1.7B shape has one table per layer type: full layers rotate
// 64 of 256 dims, sliding layers all 256. This logs what they hold at a
// context of 2048 (the issue asks for under 2 MiB).
func TestRoPEBytesSpark17B(t *testing.T) {
	full, sliding := kernels.NewRoPETable(64, 5e6), kernels.NewRoPETable(256, 1e4)
	full.Ensure(2048)
	sliding.Ensure(2048)
	total := full.Bytes() + sliding.Bytes()
	t.Logf("Spark-1.7B RoPE tables at 2048 positions: full %d + sliding %d = %d bytes (%.2f MiB)",
		full.Bytes(), sliding.Bytes(), total, float64(total)/(1<<20))
}
