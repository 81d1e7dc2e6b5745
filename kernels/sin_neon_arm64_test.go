//go:build arm64 && gc && !purego

package kernels

import "testing"

// TestSnakeBetaNEONStops: the assembly runs the whole row when every
// |a*x| is in range and stops before the vector holding one that is not.
func TestSnakeBetaNEONStops(t *testing.T) {
	const n = 24
	x, a, inv, dst := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], a[i], inv[i] = float32(i)-11.5, 1.5, 0.5
	}
	if got := snakeBetaNEON(&dst[0], &x[0], &a[0], &inv[0], n); got != n {
		t.Fatalf("in range: did %d of %d", got, n)
	}
	x[13] = 1 << 16
	if got := snakeBetaNEON(&dst[0], &x[0], &a[0], &inv[0], n); got != 12 {
		t.Fatalf("lane 13 out of range: did %d, want 12", got)
	}
}
