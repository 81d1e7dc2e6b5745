package model_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/quantize"
	"github.com/siskin-ml/siskin/tensor"
)

// quantizedMatrix is a prepared rows x cols matrix of typ, quantized from
// small normal weights.
func quantizedMatrix(rng *rand.Rand, typ tensor.Type, rows, cols int) *tensor.Matrix {
	rb, _ := tensor.RowBytes(typ, cols)
	data := make([]byte, rows*rb)
	src := make([]float32, cols)
	for r := 0; r < rows; r++ {
		for i := range src {
			src[i] = float32(0.05 * rng.NormFloat64())
		}
		if err := quantize.QuantizeRow(data[r*rb:(r+1)*rb], typ, src); err != nil {
			panic(err)
		}
	}
	m := &tensor.Matrix{Name: "w", Type: typ, Rows: rows, Cols: cols, Data: data}
	kernels.Prepare(m)
	return m
}

// BenchmarkGatedFFNFused: GatedFFN at the Qwen3-1.7B shape (2048 wide,
// FFN 6144) on a batch of 512 rows, against the same steps as separate
// passes (RMSNormRows, Linears, ApplyRows, Linear, AddRows), alternated
// call by call: GatedFFN normalizes each row, and applies the activation
// to each, just before quantizing it (NormLinears, QuantizeAfter). old/new
// is the ratio of their wall times.
func BenchmarkGatedFFNFused(b *testing.B) {
	const d, f, n = 2048, 6144, 512
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q4_0} {
		wg, wu, wd := quantizedMatrix(rng, typ, f, d), quantizedMatrix(rng, typ, f, d), quantizedMatrix(rng, typ, d, f)
		norm := make([]float32, d)
		for i := range norm {
			norm[i] = 1
		}
		x := make([]float32, n*d)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		x0 := append([]float32(nil), x...)
		h, gate, up := make([]float32, n*d), make([]float32, n*f), make([]float32, n*f)
		b.Run(typ.String(), func(b *testing.B) {
			var told, tnew time.Duration
			for b.Loop() {
				copy(x, x0)
				copy(h, x0[:len(h)]) // the attention block's output
				t0 := time.Now()
				gatedFFNPasses(x, h, gate, up, n, norm, wg, wu, wd)
				told += time.Since(t0)
				copy(x, x0)
				copy(h, x0[:len(h)])
				t0 = time.Now()
				model.GatedFFN(x, h, gate, up, n, norm, 1e-6, wg, wu, wd, kernels.SiLUMul)
				tnew += time.Since(t0)
			}
			b.ReportMetric(float64(told)/float64(tnew), "old/new")
			b.ReportMetric(float64(told.Milliseconds()), "old-ms")
			b.ReportMetric(float64(tnew.Milliseconds()), "new-ms")
		})
	}
}
