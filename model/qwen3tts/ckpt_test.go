package qwen3tts

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/siskin-ml/siskin/internal/sttest"
	"github.com/siskin-ml/siskin/safetensors"
	"github.com/siskin-ml/siskin/tensor"
)

// testTensor is a float32 tensor of a checkpoint a test writes.
type testTensor struct {
	shape []int
	data  []float32
}

var (
	fixtureOnce    sync.Once
	fixtureTensors map[string]*testTensor
	fixtureConfig  []byte
)

// readFixture returns a copy of every tensor of the fixture as float32,
// and its config.json as a map (the file is read once per test binary).
func readFixture(t testing.TB) (map[string]*testTensor, map[string]any) {
	t.Helper()
	fixtureOnce.Do(func() { fixtureTensors, fixtureConfig = loadFixture(t) })
	if fixtureTensors == nil {
		t.Fatal("fixture checkpoint could not be read")
	}
	out := make(map[string]*testTensor, len(fixtureTensors))
	for n, ts := range fixtureTensors {
		out[n] = &testTensor{shape: slices.Clone(ts.shape), data: slices.Clone(ts.data)}
	}
	var cfg map[string]any
	if err := json.Unmarshal(fixtureConfig, &cfg); err != nil {
		t.Fatal(err)
	}
	return out, cfg
}

func loadFixture(t testing.TB) (map[string]*testTensor, []byte) {
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
	return out, raw
}

// writeCheckpoint writes a checkpoint folder (tensors whose values are
// all bf16 values as BF16, the others as F32) (config.json, the
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
	out := make(map[string]sttest.Tensor, len(tensors))
	for n, ts := range tensors {
		b, dtype := encodeTensor(ts.data)
		out[n] = sttest.Tensor{DType: dtype, Shape: ts.shape, Data: b}
	}
	if err := sttest.Write(filepath.Join(dir, "model.safetensors"), out); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"config.json": raw, "generation_config.json": gen} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// encodeTensor is BF16 when every value is one, otherwise F32.
func encodeTensor(v []float32) ([]byte, string) {
	half := true
	for _, x := range v {
		if math.Float32bits(x)&0xffff != 0 {
			half = false
			break
		}
	}
	if half {
		b := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(x)>>16))
		}
		return b, "BF16"
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b, "F32"
}
