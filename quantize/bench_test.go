package quantize

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/siskin-ml/siskin/tensor"
)

func benchQuant(b *testing.B, typ tensor.Type) {
	src := make([]float32, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	n, _ := tensor.RowBytes(typ, len(src))
	dst := make([]byte, n)
	b.SetBytes(int64(4 * len(src)))
	for b.Loop() {
		if err := QuantizeRow(dst, typ, src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQ4_K(b *testing.B) { benchQuant(b, tensor.Q4_K) }
func BenchmarkQ6_K(b *testing.B) { benchQuant(b, tensor.Q6_K) }
func BenchmarkQ8_0(b *testing.B) { benchQuant(b, tensor.Q8_0) }
func BenchmarkQ4_0(b *testing.B) { benchQuant(b, tensor.Q4_0) }

func BenchmarkRandomRows(b *testing.B) {
	fill := randomRows(1, "blk.0.ffn_up.weight", []uint64{4096, 16})
	dst := make([]float32, 4096*16)
	b.SetBytes(int64(4 * len(dst)))
	for b.Loop() {
		fill(dst, 0, 16)
	}
}

func laneData() (xt, wt [32][8]float32, x, w [8][32]float32) {
	r := rand.New(rand.NewPCG(5, 6))
	for b := range 8 {
		for i := range 32 {
			v := float32(r.NormFloat64())
			x[b][i], xt[i][b] = v, v
			w[b][i], wt[i][b] = 0.3+abs32(v), 0.3+abs32(v)
		}
	}
	return
}

func BenchmarkQKX2Scalar(b *testing.B) {
	_, _, x, w := laneData()
	var L, laux [32]uint8
	var mn float32
	for b.Loop() {
		for j := range 8 {
			makeQKX2(15, &x[j], &w[j], &L, &laux, &mn, -1, 0.1, 20)
		}
	}
}

func BenchmarkQKX2Lanes(b *testing.B) {
	xt, wt, _, _ := laneData()
	var L [32][8]uint8
	var sc, mn [8]float32
	for b.Loop() {
		makeQKX2x8(15, &xt, &wt, &L, &sc, &mn, -1, 0.1, 20)
	}
}

func BenchmarkSynthTinyQ4KM(b *testing.B) {
	ft, _ := ParseFileType("q4_k_m")
	out := filepath.Join(b.TempDir(), "x.gguf")
	for b.Loop() {
		if _, err := Synth(out, SynthOptions{Arch: "spark2_5", Shape: "tiny", Archs: testArchs, Type: ft, Seed: 1, Threads: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSynthTinyF16(b *testing.B) {
	ft, _ := ParseFileType("f16")
	out := filepath.Join(b.TempDir(), "x.gguf")
	for b.Loop() {
		if _, err := Synth(out, SynthOptions{Arch: "spark2_5", Shape: "tiny", Archs: testArchs, Type: ft, Seed: 1, Threads: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
