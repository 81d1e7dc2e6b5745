package qwen3tts

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// projCheckpoint turns the fixture into a 1.7B-style one: the code
// predictor is c wide (its layers, norm and heads redrawn at random) and
// small_to_mtp_projection [c, H] with a bias maps talker rows to it.
func projCheckpoint(t testing.TB, c int) (map[string]*testTensor, map[string]any) {
	tensors, cfg := readFixture(t)
	rng := rand.New(rand.NewPCG(3, 4))
	draw := func(scale float64, shape ...int) *testTensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return &testTensor{shape: shape, data: v}
	}
	ones := func(n int) *testTensor {
		v := draw(0.01, n)
		for i := range v.data {
			v.data[i]++
		}
		return v
	}
	pc := cfg["talker_config"].(map[string]any)["code_predictor_config"].(map[string]any)
	pc["hidden_size"], pc["intermediate_size"] = c, 2*c
	heads, kvHeads, hd, ffn := 4, 2, 32, 2*c
	p := "talker.code_predictor."
	for i := 0; i < 2; i++ {
		l := fmt.Sprintf("%smodel.layers.%d.", p, i)
		tensors[l+"input_layernorm.weight"] = ones(c)
		tensors[l+"post_attention_layernorm.weight"] = ones(c)
		tensors[l+"self_attn.q_norm.weight"] = ones(hd)
		tensors[l+"self_attn.k_norm.weight"] = ones(hd)
		tensors[l+"self_attn.q_proj.weight"] = draw(0.15, heads*hd, c)
		tensors[l+"self_attn.k_proj.weight"] = draw(0.15, kvHeads*hd, c)
		tensors[l+"self_attn.v_proj.weight"] = draw(0.15, kvHeads*hd, c)
		tensors[l+"self_attn.o_proj.weight"] = draw(0.1, c, heads*hd)
		tensors[l+"mlp.gate_proj.weight"] = draw(0.15, ffn, c)
		tensors[l+"mlp.up_proj.weight"] = draw(0.15, ffn, c)
		tensors[l+"mlp.down_proj.weight"] = draw(0.1, c, ffn)
	}
	tensors[p+"model.norm.weight"] = ones(c)
	for g := 0; g < 15; g++ {
		tensors[fmt.Sprintf("%slm_head.%d.weight", p, g)] = draw(0.4, 2048, c)
	}
	tensors[p+"small_to_mtp_projection.weight"] = draw(0.125, c, 64)
	tensors[p+"small_to_mtp_projection.bias"] = draw(0.01, c)
	return tensors, cfg
}

// With a non-square projection (talker 64 wide, predictor 48) every
// predictor input row is W x + b of its talker-width row (h, C(code0),
// then E[j](code j+1)), computed here in float64 from the file: 1e-5 max
// abs (float32 sums of 64 products of order-1 values).
func TestProjectionNonSquare(t *testing.T) {
	const c = 48
	tensors, cfg := projCheckpoint(t, c)
	m := openModel(t, writeCheckpoint(t, tensors, cfg))
	if m.pred.proj == nil || m.pred.proj.Rows != c || m.pred.proj.Cols != 64 {
		t.Fatalf("projection not loaded as [%d, 64]", c)
	}
	g := loadGolden(t, "cp_only_code0_1234")
	h := g.array(t, "talker_hidden")
	s := m.predictorStream(t, h, 1234)
	if _, err := m.predictFrames(m.pred, []*stream{s}); err != nil {
		t.Fatal(err)
	}
	codes := s.codes[0]
	w := tensors["talker.code_predictor.small_to_mtp_projection.weight"].data
	b := tensors["talker.code_predictor.small_to_mtp_projection.bias"].data
	row := func(name string, id int) []float32 {
		return tensors[name].data[id*64 : (id+1)*64]
	}
	inputs := [][]float32{h, row("talker.model.codec_embedding.weight", 1234)}
	for j := 0; j < 14; j++ {
		inputs = append(inputs, row(fmt.Sprintf("talker.code_predictor.model.codec_embedding.%d.weight", j), codes[j+1]))
	}
	var want []float32
	for _, x := range inputs {
		for r := 0; r < c; r++ {
			sum := float64(b[r])
			for k, v := range x {
				sum += float64(w[r*64+k]) * float64(v)
			}
			want = append(want, float32(sum))
		}
	}
	near(t, "projected predictor inputs", s.req.Trace.CPInputs[0], want, tolHidden)

	// The whole loop runs on it too.
	r := m.Cfg.NewRequest(loadGolden(t, "cv_ryan_english_stream").m.Request.InputIDs, Voice{Speaker: "ryan", Language: "english"})
	r.MaxFrames, r.Seeded = 3, true
	res, err := m.Generate([]*Request{r})
	if err != nil || len(res[0].Codes) != 3 {
		t.Fatalf("generate with the projection: %v", err)
	}
}

// Checkpoints that do not fit are refused, naming the tensor or key.
func TestLoadRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(map[string]*testTensor, map[string]any)
		want string
	}{
		{"missing tensor", func(ts map[string]*testTensor, _ map[string]any) {
			delete(ts, "talker.model.layers.1.mlp.up_proj.weight")
		}, "tensor talker.model.layers.1.mlp.up_proj.weight is missing"},
		{"misshaped tensor", func(ts map[string]*testTensor, _ map[string]any) {
			ts["talker.codec_head.weight"].shape = []int{64, 3072}
		}, "tensor talker.codec_head.weight has shape [64 3072], want [3072 64]"},
		{"speaker encoder", func(ts map[string]*testTensor, _ map[string]any) {
			ts["speaker_encoder.fc.weight"] = &testTensor{shape: []int{2}, data: []float32{1, 2}}
		}, "speaker encoder (a Base model for voice cloning)"},
		{"base model type", func(_ map[string]*testTensor, cfg map[string]any) {
			cfg["tts_model_type"] = "base"
		}, `tts_model_type "base" is not supported yet`},
		{"projection of equal widths", func(ts map[string]*testTensor, _ map[string]any) {
			ts["talker.code_predictor.small_to_mtp_projection.weight"] = &testTensor{shape: []int{64, 64}, data: make([]float32, 64*64)}
		}, "small_to_mtp_projection.weight is present"},
		{"missing key", func(_ map[string]*testTensor, cfg map[string]any) {
			delete(cfg["talker_config"].(map[string]any), "codec_eos_token_id")
		}, "talker_config.codec_eos_token_id is missing"},
		{"dialect not a language", func(_ map[string]*testTensor, cfg map[string]any) {
			cfg["talker_config"].(map[string]any)["spk_is_dialect"].(map[string]any)["eric"] = "klingon_dialect"
		}, `spk_is_dialect["eric"] = "klingon_dialect" is not in codec_language_id`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts, cfg := readFixture(t)
			c.edit(ts, cfg)
			_, err := Load(writeCheckpoint(t, ts, cfg))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// A projection missing where the widths differ.
	ts, cfg := projCheckpoint(t, 48)
	delete(ts, "talker.code_predictor.small_to_mtp_projection.bias")
	if _, err := Load(writeCheckpoint(t, ts, cfg)); err == nil || !strings.Contains(err.Error(), "small_to_mtp_projection.bias is missing") {
		t.Fatalf("error %v, want the missing projection bias named", err)
	}
}
