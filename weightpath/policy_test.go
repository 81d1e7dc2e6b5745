package weightpath

import (
	"testing"

	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

func TestTarget(t *testing.T) {
	role := func(name string, layer int) model.Role { return model.Role{Name: name, Layer: layer, Layers: 28} }
	cases := []struct {
		path Path
		r    model.Role
		typ  tensor.Type
		cols int
		want tensor.Type
	}{
		// The file's own types.
		{GGUF, role("blk.%d.ffn_up.weight", 4), tensor.F16, 2048, tensor.F16},
		{"", role("blk.%d.ffn_up.weight", 4), tensor.BF16, 2048, tensor.BF16},
		// Plain 4-bit roles.
		{W4A8, role("blk.%d.ffn_up.weight", 4), tensor.F16, 2048, tensor.W4A8},
		{W4A8, role("blk.%d.ffn_gate.weight", 0), tensor.Q4_K, 2048, tensor.W4A8},
		{W4A16, role("blk.%d.attn_q.weight", 27), tensor.F32, 2048, tensor.W4A16},
		{W4A8, role("blk.%d.attn_gate.weight", 4), tensor.F16, 2048, tensor.W4A8},
		// The output projection, and the embedding tied to it.
		{W4A8, model.Role{Name: "output.weight"}, tensor.F16, 2048, tensor.W8A8},
		{W4A16, model.Role{Name: "token_embd.weight"}, tensor.F16, 2048, tensor.W8A8},
		// The attention output projection, in every layer.
		{W4A8, role("blk.%d.attn_output.weight", 4), tensor.F16, 2048, tensor.W8A8},
		{W4A16, role("blk.%d.attn_output.weight", 13), tensor.F16, 2048, tensor.W8A8},
		// V, fused QKV and FFN down: llama.cpp's layer pattern for 28
		// layers (0-2, 5, 8, ..., 23, 24-27).
		{W4A8, role("blk.%d.attn_v.weight", 0), tensor.F16, 2048, tensor.W8A8},
		{W4A8, role("blk.%d.attn_v.weight", 4), tensor.F16, 2048, tensor.W4A8},
		{W4A8, role("blk.%d.attn_qkv.weight", 5), tensor.F16, 2048, tensor.W8A8},
		{W4A8, role("blk.%d.attn_qkv.weight", 22), tensor.F16, 2048, tensor.W4A8},
		{W4A8, role("blk.%d.ffn_down.weight", 25), tensor.F16, 6656, tensor.W8A8},
		{W4A8, role("blk.%d.ffn_down.weight", 6), tensor.F16, 6656, tensor.W4A8},
		// Everything on the 8-bit path.
		{W8A8, role("blk.%d.ffn_up.weight", 4), tensor.F16, 2048, tensor.W8A8},
		// Rows that are not whole groups stay as they are.
		{W4A8, role("blk.%d.attn_output.weight", 4), tensor.F32, 64, tensor.F32},
		{W8A8, role("blk.%d.ffn_up.weight", 4), tensor.Q8_0, 96, tensor.Q8_0},
	}
	for _, c := range cases {
		if got := Target(c.path, c.r, c.typ, c.cols); got != c.want {
			t.Errorf("Target(%q, %s layer %d, %s, %d) = %s, want %s", c.path, c.r.Name, c.r.Layer, c.typ, c.cols, got, c.want)
		}
	}
}
