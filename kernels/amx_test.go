package kernels_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// TestPackedAMXRows: where a tier has a wide (AMX) packed kernel (32
// activation rows for Q4_K and Q6_K, 16 for Q4_0, Q8_0, W4A8 and W8A8),
// it gives exactly the bits of the four-row kernel on every row, run once
// per its rows and once for all rows at a time, for pairs of groups with
// an odd group after them, one block and many (odd and even counts), with
// the weights before a guard page. Exact equality: the tiles' integer
// sums are exact (Q4_K's split scales recombine to the same integers) and
// the float steps per row are the eight-row kernels'.
func TestPackedAMXRows(t *testing.T) {
	rng := newRNG(61)
	ran := false
	for _, tierName := range kernels.Tiers() {
		for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0, tensor.W4A8, tensor.W8A8} {
			wide := kernels.PackedWide(tierName, typ)
			if wide == 0 {
				continue
			}
			ran = true
			n := 2 * wide
			colsList := []int{32, 96, 1184, 2048} // 1184: 37 blocks, chunks of 16, 16 and 5 in the 16-row kernels
			switch typ.BlockSize() {
			case 256:
				colsList = []int{256, 1280, 2048}
			case tensor.WeightGroup:
				colsList = []int{128, 640}
			}
			for _, cols := range colsList {
				for _, rows := range []int{8, 16, 24, 40, 64} {
					t.Run(fmt.Sprintf("%s/%s/%dx%d", tierName, typ, rows, cols), func(t *testing.T) {
						defer kernels.UseTier(tierName)()
						w, q, want := fourRowTiles(t, rng, typ, rows, cols, n)
						g := rows / 8
						got := make([]float32, n*rows)
						for i := 0; i < n; i += wide {
							if !kernels.PackedTile(w, got[i*rows:], rows, g, q, i, wide) {
								t.Fatal("no wide kernel")
							}
						}
						if j := sameBits(got, want); j >= 0 {
							t.Fatalf("%d rows %v, four rows %v at %d (act %d, row %d)", wide, got[j], want[j], j, j/rows, j%rows)
						}
						clear(got)
						kernels.PackedTile(w, got, rows, g, q, 0, n)
						if j := sameBits(got, want); j >= 0 {
							t.Fatalf("%d rows at once %v, four rows %v at %d (act %d, row %d)", n, got[j], want[j], j, j/rows, j%rows)
						}
					})
				}
			}
			// 288 rows at once: more than an AMX kernel's call takes (256,
			// its float sums' scratch), so the wrapper splits them.
			t.Run(fmt.Sprintf("%s/%s/288rows", tierName, typ), func(t *testing.T) {
				defer kernels.UseTier(tierName)()
				const rows, n = 24, 288
				w, q, want := fourRowTiles(t, rng, typ, rows, colsList[0], n)
				got := make([]float32, n*rows)
				kernels.PackedTile(w, got, rows, rows/8, q, 0, n)
				if j := sameBits(got, want); j >= 0 {
					t.Fatalf("%d rows at once %v, four rows %v at %d (act %d, row %d)", n, got[j], want[j], j, j/rows, j%rows)
				}
			})
		}
	}
	if !ran {
		t.Skip("no wide (AMX) kernel on this CPU: it needs AMX-INT8 and the OS's grant of the tile state (siskin probe)")
	}
}

// TestPackedAMXMatMul: batches that run through the AMX kernels (their
// rows at a time, then eight, four and one) keep every row bit-identical
// to MatVec, across thread counts, within tolerance of the generic
// reference (checkPacked), with an incomplete last group.
func TestPackedAMXMatMul(t *testing.T) {
	rng := newRNG(62)
	ran := false
	for _, tierName := range kernels.Tiers() {
		for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0, tensor.W4A8, tensor.W8A8} {
			wide := kernels.PackedWide(tierName, typ)
			if wide == 0 {
				continue
			}
			ran = true
			cols := 768
			if typ.BlockSize() == tensor.WeightGroup {
				cols = 640
			}
			for _, n := range []int{wide, 2*wide + 6} {
				t.Run(fmt.Sprintf("%s/%s/n=%d", tierName, typ, n), func(t *testing.T) {
					w := randomMatrix(rng, typ, 43, cols)
					checkPacked(t, tierName, w, randomVec(rng, n*cols), n)
				})
			}
		}
	}
	if !ran {
		t.Skip("no wide (AMX) kernel on this CPU")
	}
}

// TestPackedAMXExtremes: the largest integer sums the AMX kernels' types
// allow give the four-row kernel's bits, activations at full scale of
// either sign. Q4_K: every quant 15, every scale and min 63 (the split
// scales' partial sums stay exact in int32). Q6_K: quants 0 (-32) under
// scale -128 (w = sc*(q-32) = 4096, its high byte 16), 0 under 127
// (-4064, the lowest) and 63 (31) under -128 (-3968), weight row by row.
// Q8_0: every quant -128, then 127, row by row.
func TestPackedAMXExtremes(t *testing.T) {
	const rows, cols, n = 16, 2048, 32
	extremes := map[tensor.Type]func(row int, b []byte){
		tensor.Q8_0: func(row int, b []byte) {
			binary.LittleEndian.PutUint16(b, 0x3c00)
			for i := 2; i < 34; i++ {
				b[i] = []byte{0x80, 0x7f}[row%2]
			}
		},
		tensor.Q4_K: func(_ int, b []byte) {
			for i := 4; i < 144; i++ {
				b[i] = 0xff
			}
			binary.LittleEndian.PutUint16(b, 0x3c00)     // d = 1
			binary.LittleEndian.PutUint16(b[2:], 0x3c00) // dmin = 1
		},
		tensor.Q6_K: func(row int, b []byte) {
			q, sc := []byte{0, 0, 0xff}[row%3], []byte{0x80, 127, 0x80}[row%3]
			for i := 0; i < 192; i++ {
				b[i] = q
			}
			for i := 192; i < 208; i++ {
				b[i] = sc
			}
			binary.LittleEndian.PutUint16(b[208:], 0x3c00)
		},
	}
	ran := false
	for _, tierName := range kernels.Tiers() {
		for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q8_0} {
			wide := kernels.PackedWide(tierName, typ)
			if wide == 0 {
				continue
			}
			ran = true
			t.Run(fmt.Sprintf("%s/%s", tierName, typ), func(t *testing.T) {
				defer kernels.UseTier(tierName)()
				bb, blocks := typ.BlockBytes(), cols/typ.BlockSize()
				data := make([]byte, rows*blocks*bb)
				for b := 0; b < len(data); b += bb {
					extremes[typ](b/bb/blocks, data[b:b+bb])
				}
				w := &tensor.Matrix{Name: "w", Type: typ, Rows: rows, Cols: cols, Data: data}
				prepareGuarded(t, w)
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = 1
					if (i/cols)%2 == 1 {
						x[i] = -1
					}
				}
				var q kernels.QuantizedActs
				q.Quantize(typ, x, n)
				want, got := make([]float32, n*rows), make([]float32, n*rows)
				for i := 0; i < n; i += 4 {
					kernels.PackedTile(w, want[i*rows:], rows, rows/8, &q, i, 4)
				}
				for i := 0; i < n; i += wide {
					kernels.PackedTile(w, got[i*rows:], rows, rows/8, &q, i, wide)
				}
				if j := sameBits(got, want); j >= 0 {
					t.Fatalf("%d rows %v, four rows %v at %d", wide, got[j], want[j], j)
				}
			})
		}
	}
	if !ran {
		t.Skip("no wide (AMX) kernel on this CPU")
	}
}

// BenchmarkPackedAMXBlock: the AMX kernels alone, with their weights in
// cache (one pair of groups, 16 weight rows, or eight pairs) and 256
// activation rows (one call's most), in nanoseconds per 16x16x32 block
// of multiply-adds (8192) and one thread. Where BenchmarkPrefill sees
// the kernels through MatMul (quantization, threads, weights from
// memory), this shows the kernel's own steps, and so what a change to
// its code is worth.
func BenchmarkPackedAMXBlock(b *testing.B) {
	rng := newRNG(63)
	const cols, n = 2048, 256
	ran := false
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0} {
		if kernels.PackedWide("avx512", typ) == 0 {
			continue
		}
		ran = true
		for _, rows := range []int{16, 128} {
			b.Run(fmt.Sprintf("%s/rows=%d", typ, rows), func(b *testing.B) {
				defer kernels.UseTier("avx512")()
				w := randomMatrix(rng, typ, rows, cols)
				kernels.Prepare(w)
				defer kernels.Release(w)
				q := new(kernels.QuantizedActs)
				q.Quantize(typ, randomVec(rng, n*cols), n)
				out := make([]float32, n*rows)
				for b.Loop() {
					kernels.PackedTile(w, out, rows, rows/8, q, 0, n)
				}
				blocks := float64(rows*cols*n) / 8192
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/blocks, "ns/block")
			})
		}
	}
	if !ran {
		b.Skip("no wide (AMX) kernel on this CPU: it needs AMX-INT8 and the OS's grant of the tile state (siskin probe)")
	}
}
