package quantize

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/internal/sttest"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/tensor"
)

// The Hugging Face twins hold the F32 GGUF weights rounded to BF16:
// converting a twin to f32 must give exactly those values under the GGUF
// names and shapes, the same hyper-parameters and the same vocabulary.
func TestHFTwinMatchesGGUF(t *testing.T) {
	for _, arch := range []string{"spark2_5", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			hf := testdata.Path(t, "llm", "tiny", "hf", arch+"-tiny", "bf16")
			ref := tinyModel(t, arch+"-tiny-f32.gguf")
			out := filepath.Join(t.TempDir(), "out.gguf")
			if _, err := File(hf, out, Options{Type: mustType(t, "f32")}); err != nil {
				t.Fatal(err)
			}
			got, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			want, err := gguf.Open(ref)
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()
			if len(got.Tensors) != len(want.Tensors) {
				t.Errorf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
			}
			for _, w := range want.Tensors {
				g, ok := got.Tensor(w.Name)
				if !ok {
					t.Errorf("tensor %s missing", w.Name)
					continue
				}
				if g.Type != tensor.F32 || g.Shape() != w.Shape() {
					t.Errorf("%s: %s %s, want F32 %s", w.Name, g.Type, g.Shape(), w.Shape())
					continue
				}
				for i := 0; i < len(w.Data); i += 4 {
					v := math.Float32frombits(binary.LittleEndian.Uint32(w.Data[i:]))
					bf := tensor.BF16ToFloat32(tensor.Float32ToBF16(v))
					if math.Float32bits(bf) != binary.LittleEndian.Uint32(g.Data[i:]) {
						t.Errorf("%s: element %d is %v, want %v", w.Name, i/4, math.Float32frombits(binary.LittleEndian.Uint32(g.Data[i:])), bf)
						break
					}
				}
			}
			// Every key of the reference file, same type and value
			// (general.name and file_type aside).
			for _, kv := range want.KV {
				if kv.Key == "general.name" || kv.Key == "general.file_type" {
					continue
				}
				gv, ok := got.Get(kv.Key)
				if !ok {
					t.Errorf("metadata %s missing", kv.Key)
					continue
				}
				if !reflect.DeepEqual(gv, kv.Value) {
					t.Errorf("metadata %s = %.80v, want %.80v", kv.Key, gv, kv.Value)
				}
			}
			lm, err := openModel(out)
			if err != nil {
				t.Fatal(err)
			}
			defer lm.Close()
			if _, err := lm.Model.Forward(lm.Model.NewCache(), []int{0, 5, 9}, false); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func mustType(t *testing.T, name string) FileType {
	t.Helper()
	ft, err := ParseFileType(name)
	if err != nil {
		t.Fatal(err)
	}
	return ft
}

// A Llama checkpoint in Hugging Face layout (Q and K rows un-permuted
// from stories260K.gguf) converts back to the original GGUF tensors: the
// RoPE row permutation and the name mapping are right.
func TestHFLlamaPermutationRoundTrip(t *testing.T) {
	ref, err := gguf.Open(testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	dir := t.TempDir()
	heads, kvHeads := 8, 4
	names := map[string]string{"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight"}
	for l := 0; l < 5; l++ {
		for hf, g := range map[string]string{
			"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
			"self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
			"self_attn.o_proj.weight": "attn_output.weight", "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
			"mlp.down_proj.weight": "ffn_down.weight",
		} {
			names[blk(l, g)] = "model.layers." + itoa(l) + "." + hf
		}
	}
	tensors := map[string]stTensor{}
	for _, ti := range ref.Tensors {
		hf, ok := names[ti.Name]
		if !ok {
			t.Fatalf("no HF name for %s", ti.Name)
		}
		shape := make([]int, len(ti.Dims))
		for i, d := range ti.Dims {
			shape[len(shape)-1-i] = int(d)
		}
		data := ti.Data
		if isQ, isK := strings.HasSuffix(ti.Name, "attn_q.weight"), strings.HasSuffix(ti.Name, "attn_k.weight"); isQ || isK {
			h := kvHeads
			if isQ {
				h = heads
			}
			perm, err := ropePermutation(shape[0], h)
			if err != nil {
				t.Fatal(err)
			}
			rowBytes := shape[1] * 4
			data = make([]byte, len(ti.Data))
			for r := 0; r < shape[0]; r++ { // GGUF row r came from HF row perm(r)
				copy(data[perm(r)*rowBytes:], ti.Data[r*rowBytes:(r+1)*rowBytes])
			}
		}
		tensors[hf] = stTensor{shape, data}
	}
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), tensors)
	cfg := map[string]any{"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 5,
		"num_attention_heads": heads, "num_key_value_heads": kvHeads, "rms_norm_eps": 1e-5, "vocab_size": 512,
		"max_position_embeddings": 2048, "rope_theta": 10000.0, "tie_word_embeddings": false}
	raw, _ := json.Marshal(cfg)
	os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644)
	tok, err := os.ReadFile(testdata.Path(t, "llm", "tiny", "hf", "spark2_5-tiny", "bf16", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644)

	out := filepath.Join(t.TempDir(), "out.gguf")
	if _, err := File(dir, out, Options{Type: mustType(t, "f32")}); err != nil {
		t.Fatal(err)
	}
	got, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	for _, w := range ref.Tensors {
		g, ok := got.Tensor(w.Name)
		if !ok {
			t.Errorf("%s missing", w.Name)
			continue
		}
		if g.Shape() != w.Shape() || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s differs from the original", w.Name)
		}
	}
	if _, err := openModel(out); err != nil {
		t.Fatal(err)
	}
}

func blk(l int, s string) string { return "blk." + itoa(l) + "." + s }
func itoa(i int) string          { return strconv.Itoa(i) }

type stTensor struct {
	shape []int
	data  []byte // F32
}

// writeSafetensors writes F32 tensors.
func writeSafetensors(t *testing.T, path string, tensors map[string]stTensor) {
	t.Helper()
	out := make(map[string]sttest.Tensor, len(tensors))
	for n, ts := range tensors {
		out[n] = sttest.Tensor{DType: "F32", Shape: ts.shape, Data: ts.data}
	}
	if err := sttest.Write(path, out); err != nil {
		t.Fatal(err)
	}
}
