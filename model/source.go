package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/safetensors"
	"github.com/siskin-ml/siskin/tensor"
)

// Format is the on-disk layout a model was loaded from.
type Format int

// Formats.
const (
	GGUF Format = iota
	HF          // Hugging Face folder: config.json + safetensors
)

func (f Format) String() string {
	if f == GGUF {
		return "gguf"
	}
	return "hf"
}

// Source is an opened model file or folder: where tensors and
// hyper-parameters come from. Tensor bytes stay memory-mapped.
type Source struct {
	Path   string
	Format Format
	GGUF   *gguf.File
	HF     *safetensors.Checkpoint
	// HFConfig is config.json as decoded JSON (HF folders only).
	HFConfig map[string]any

	// Weights, when set, supplies the matrices the kernels run in place
	// of the file's own (a weight path's conversion, a cache of packed
	// weights); otherwise the loader packs the file's matrices itself.
	Weights WeightStore

	prepared []*tensor.Matrix // weights with a repacked copy in kernels
}

// A WeightStore turns a weight as the file holds it into the matrix the
// kernels run (converted, packed), and is closed after the model's
// packed copies are released.
type WeightStore interface {
	Matrix(m *tensor.Matrix, r Role) (*tensor.Matrix, error)
	Close() error
}

// Role says what a weight is for, whatever the file calls it: Name is
// its GGUF name pattern ("blk.%d.ffn_down.weight"), Layer its layer and
// Layers the model's layer count (0 when unknown).
type Role struct {
	Name          string
	Layer, Layers int
	Tied          bool // the model's output head is its token embedding
}

// LookupOnly reports whether the weight is only ever read by rows: a
// token embedding not tied to the output head, which no kernel
// multiplies (so it is not packed).
func (r Role) LookupOnly() bool { return r.Name == "token_embd.weight" && !r.Tied }

// Open opens a .gguf file or a Hugging Face folder.
func Open(path string) (*Source, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		return &Source{Path: path, Format: GGUF, GGUF: f}, nil
	}
	cfgPath := filepath.Join(path, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("%s: not a GGUF file or a Hugging Face folder: %w", path, err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	}
	ck, err := safetensors.OpenDir(path)
	if err != nil {
		return nil, err
	}
	return &Source{Path: path, Format: HF, HF: ck, HFConfig: cfg}, nil
}

// Close releases the mapped files and the repacked copies of weights.
func (s *Source) Close() error {
	for _, m := range s.prepared {
		kernels.Release(m)
	}
	s.prepared = nil
	if s.Weights != nil {
		s.Weights.Close()
		s.Weights = nil
	}
	if s.GGUF != nil {
		return s.GGUF.Close()
	}
	if s.HF != nil {
		return s.HF.Close()
	}
	return nil
}

// Release lets the OS drop the resident pages of data, bytes of the
// source's mapped files that will not be read again (a weight converted
// at load); bytes outside them are left alone.
func (s *Source) Release(data []byte) {
	if s.GGUF != nil {
		s.GGUF.Release(data)
	}
	if s.HF != nil {
		s.HF.Release(data)
	}
}

// Arch is general.architecture (GGUF) or model_type (config.json).
func (s *Source) Arch() string {
	if s.GGUF != nil {
		a, _ := s.GGUF.String("general.architecture")
		return a
	}
	a, _ := s.HFConfig["model_type"].(string)
	return a
}

// Names gives a tensor's name in each format; %d stands for the layer.
type Names struct{ GGUF, HF string }

func (s *Source) name(n Names, layer int) string {
	pat := n.GGUF
	if s.Format == HF {
		pat = n.HF
	}
	if strings.Contains(pat, "%d") {
		return fmt.Sprintf(pat, layer)
	}
	return pat
}

// raw is a tensor independent of the file format. shape is [rows, cols]
// (cols = elements per row), or [n] for a vector.
type raw struct {
	name  string
	typ   tensor.Type
	shape []int
	data  []byte
}

func (s *Source) lookup(n Names, layer int) (*raw, bool) {
	name := s.name(n, layer)
	if s.GGUF != nil {
		ti, ok := s.GGUF.Tensor(name)
		if !ok {
			return nil, false
		}
		shape := make([]int, len(ti.Dims))
		for i, d := range ti.Dims { // GGML order is innermost first
			shape[len(shape)-1-i] = int(d)
		}
		return &raw{name, ti.Type, shape, ti.Data}, true
	}
	ti, ok := s.HF.Tensor(name)
	if !ok {
		return nil, false
	}
	return &raw{name, ti.Type, ti.Shape, ti.Data}, true
}

// Has reports whether the tensor exists.
func (s *Source) Has(n Names, layer int) bool {
	_, ok := s.lookup(n, layer)
	return ok
}

func (s *Source) get(n Names, layer int, shape ...int) (*raw, error) {
	r, ok := s.lookup(n, layer)
	if !ok {
		return nil, fmt.Errorf("%s: tensor %s is missing", s.Path, s.name(n, layer))
	}
	if !r.typ.Supported() {
		return nil, fmt.Errorf("%s: tensor %s has type %s, which siskin does not read (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K)", s.Path, r.name, r.typ)
	}
	// A [1, n] tensor is accepted as a vector of n.
	got := r.shape
	if len(shape) == 1 && len(got) == 2 && got[0] == 1 {
		got = got[1:]
	}
	if fmt.Sprint(got) != fmt.Sprint(shape) {
		return nil, fmt.Errorf("%s: tensor %s has shape %v, want %v for this architecture", s.Path, r.name, got, shape)
	}
	return r, nil
}

// Matrix returns a [rows, cols] weight, zero-copy.
func (s *Source) Matrix(n Names, layer, rows, cols int) (*tensor.Matrix, error) {
	r, err := s.get(n, layer, rows, cols)
	if err != nil {
		return nil, err
	}
	return &tensor.Matrix{Name: r.name, Type: r.typ, Rows: rows, Cols: cols, Data: r.data}, nil
}

// Vector returns a 1-D tensor of size elements dequantized to float32.
func (s *Source) Vector(n Names, layer, size int) ([]float32, error) {
	r, err := s.get(n, layer, size)
	if err != nil {
		return nil, err
	}
	out := make([]float32, size)
	if err := tensor.Dequantize(out, r.typ, r.data); err != nil {
		return nil, fmt.Errorf("%s: tensor %s: %w", s.Path, r.name, err)
	}
	return out, nil
}

// TensorStats counts tensors and bytes by type.
func (s *Source) TensorStats() (count map[tensor.Type]int, bytes map[tensor.Type]int64) {
	count, bytes = map[tensor.Type]int{}, map[tensor.Type]int64{}
	if s.GGUF != nil {
		for _, t := range s.GGUF.Tensors {
			count[t.Type]++
			bytes[t.Type] += int64(len(t.Data))
		}
		return
	}
	for _, name := range s.HF.Names() {
		t, _ := s.HF.Tensor(name)
		count[t.Type]++
		bytes[t.Type] += int64(len(t.Data))
	}
	return
}
