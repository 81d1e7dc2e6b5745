package qwen3tts

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/siskin-ml/siskin/safetensors"
	"github.com/siskin-ml/siskin/tensor"
)

// testTensor is a float32 tensor of a checkpoint a test writes.
type testTensor struct {
	shape []int
	data  []float32
}

// readFixture reads every tensor of the fixture as float32, and its
// config.json as a map.
func readFixture(t testing.TB) (map[string]*testTensor, map[string]any) {
	t.Helper()
	dir := ckptDir(t)
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*testTensor{}
	for _, ti := range f.Tensors {
		v := make([]float32, ti.Elements())
		if err := tensor.Dequantize(v, ti.Type, ti.Data); err != nil {
			t.Fatal(err)
		}
		out[ti.Name] = &testTensor{shape: append([]int(nil), ti.Shape...), data: v}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	return out, cfg
}

// writeCheckpoint writes an F32 checkpoint folder (config.json, the
// fixture's generation_config.json, model.safetensors) and returns it.
func writeCheckpoint(t testing.TB, tensors map[string]*testTensor, cfg map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := os.ReadFile(filepath.Join(ckptDir(t), "generation_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	header := map[string]any{}
	var data []byte
	for _, n := range names {
		ts := tensors[n]
		b := make([]byte, 4*len(ts.data))
		for i, v := range ts.data {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		header[n] = map[string]any{"dtype": "F32", "shape": ts.shape, "data_offsets": []int{len(data), len(data) + len(b)}}
		data = append(data, b...)
	}
	h, _ := json.Marshal(header)
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(h)))
	buf.Write(h)
	buf.Write(data)
	for name, b := range map[string][]byte{"config.json": raw, "generation_config.json": gen, "model.safetensors": buf.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
