package quantize

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/siskin-ml/siskin/tensor"
)

// Every quantizer round-trips through siskin's dequantizer (bit-exact with
// ggml's) within the resolution of its type; this covers Q4_1 and Q5_K,
// which the llama.cpp reference files do not contain.
func TestRoundTripError(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]float32, 4*tensor.QK_K)
	for i := range src {
		src[i] = float32(r.NormFloat64()) * 0.05
	}
	src[7] = 0.4 // an outlier
	// Worst error relative to the largest |x| of the row.
	for _, c := range []struct {
		typ tensor.Type
		tol float64
	}{
		{tensor.F32, 0}, {tensor.F16, 1e-3}, {tensor.BF16, 4e-3}, {tensor.Q8_0, 1.0 / 127},
		{tensor.Q4_0, 1.0 / 8}, {tensor.Q4_1, 1.0 / 15}, {tensor.Q4_K, 1.0 / 8}, {tensor.Q5_K, 1.0 / 16}, {tensor.Q6_K, 1.0 / 32},
	} {
		n, err := tensor.RowBytes(c.typ, len(src))
		if err != nil {
			t.Fatal(err)
		}
		q := make([]byte, n)
		if err := QuantizeRow(q, c.typ, src); err != nil {
			t.Fatal(err)
		}
		back := make([]float32, len(src))
		if err := tensor.Dequantize(back, c.typ, q); err != nil {
			t.Fatal(err)
		}
		var worst, rms float64
		for i := range src {
			d := math.Abs(float64(back[i] - src[i]))
			worst = max(worst, d)
			rms += d * d
		}
		rms = math.Sqrt(rms / float64(len(src)))
		if worst > c.tol*0.4+1e-9 {
			t.Errorf("%s: worst error %.3g, want <= %.3g", c.typ, worst, c.tol*0.4)
		}
		t.Logf("%s: worst %.3g rms %.3g", c.typ, worst, rms)
	}
}

// All-zero and constant blocks give zero or exact values, not NaNs.
func TestDegenerateBlocks(t *testing.T) {
	for _, v := range []float32{0, 1.5, -2} {
		src := make([]float32, tensor.QK_K)
		for i := range src {
			src[i] = v
		}
		for _, typ := range []tensor.Type{tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
			n, _ := tensor.RowBytes(typ, len(src))
			q := make([]byte, n)
			if err := QuantizeRow(q, typ, src); err != nil {
				t.Fatal(err)
			}
			back := make([]float32, len(src))
			tensor.Dequantize(back, typ, q)
			for i, b := range back {
				if math.IsNaN(float64(b)) || math.Abs(float64(b-v)) > 0.02*math.Abs(float64(v))+1e-6 {
					t.Errorf("%s of constant %v: element %d = %v", typ, v, i, b)
					break
				}
			}
		}
	}
}

func TestMixRules(t *testing.T) {
	// use_more_bits on 28 layers: 0-2, 24-27 and every third from 3.
	var got []int
	for i := 0; i < 28; i++ {
		if useMoreBits(i, 28) {
			got = append(got, i)
		}
	}
	want := []int{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27}
	if len(got) != len(want) {
		t.Fatalf("use_more_bits(28) = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("use_more_bits(28) = %v, want %v", got, want)
		}
	}
	for _, c := range []struct {
		typ tensor.Type
		ne0 int
		out tensor.Type
	}{
		{tensor.Q4_K, 256, tensor.Q4_K}, {tensor.Q4_K, 64, tensor.Q4_1}, {tensor.Q6_K, 96, tensor.Q8_0},
		{tensor.Q5_K, 32, tensor.Q8_0}, {tensor.Q4_K, 172, tensor.F16}, {tensor.Q4_0, 172, tensor.F16},
	} {
		if got := fallback(c.typ, c.ne0); got != c.out {
			t.Errorf("fallback(%s, %d) = %s, want %s", c.typ, c.ne0, got, c.out)
		}
	}
	names := []string{"blk.10.ffn_up.weight", "output_norm.weight", "blk.2.attn_q.weight", "token_embd.weight", "blk.2.attn_k.weight"}
	sortTensorNames(names)
	want2 := []string{"output_norm.weight", "token_embd.weight", "blk.2.attn_k.weight", "blk.2.attn_q.weight", "blk.10.ffn_up.weight"}
	for i := range want2 {
		if names[i] != want2[i] {
			t.Fatalf("sorted %v, want %v", names, want2)
		}
	}
}
