package weightpath

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// f32Matrix is a rows x cols F32 matrix of random values.
func f32Matrix(name string, rows, cols int, seed uint64) *tensor.Matrix {
	rng := rand.New(rand.NewPCG(seed, 1))
	m := &tensor.Matrix{Name: name, Type: tensor.F32, Rows: rows, Cols: cols, Data: make([]byte, 4*rows*cols)}
	for i := 0; i < rows*cols; i++ {
		binary.LittleEndian.PutUint32(m.Data[4*i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	return m
}

// A converted matrix the kernels read packed is held only packed, and
// the cache file holds it once, in that form; an untied embedding only
// row-major. A cache file that cannot supply a matrix as the kernels
// need it (here: one it was not made with, and one of another shape) is
// not misread: the matrix is converted at this start with a logged
// reason, and the file is removed so that the next start rebuilds it.
func TestStoreForms(t *testing.T) {
	src := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(src, []byte("a source to fingerprint"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var log bytes.Buffer
	open := func() *Store {
		log.Reset()
		s, err := Open(src, Options{Path: W4A8, CacheDir: dir, Log: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	up := model.Role{Name: "blk.%d.ffn_up.weight", Layer: 0, Layers: 8}
	embed := model.Role{Name: "token_embd.weight", Layers: 8}
	m, e := f32Matrix("blk.0.ffn_up.weight", 21, 256, 1), f32Matrix("token_embd.weight", 10, 256, 2)
	s := open()
	w, err := s.Matrix(m, up)
	if err != nil {
		t.Fatal(err)
	}
	we, err := s.Matrix(e, embed)
	if err != nil {
		t.Fatal(err)
	}
	packed := kernels.PackedLayout(tensor.W4A8) != ""
	if packed != (w.Data == nil) || packed != kernels.IsPrepared(w) {
		t.Errorf("ffn_up: %d row-major bytes, prepared %v, in a tier that packs W4A8: %v", len(w.Data), kernels.IsPrepared(w), packed)
	}
	if we.Data == nil || kernels.IsPrepared(we) {
		t.Errorf("the untied embedding: %d row-major bytes, prepared %v", len(we.Data), kernels.IsPrepared(we))
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	file := s.File()
	kernels.Release(w)
	s.Close()
	names := map[string]bool{}
	s = open()
	if !s.Hit() {
		t.Fatalf("second start missed: %s", s.MissReason())
	}
	for _, ti := range s.cache.Tensors {
		names[ti.Name] = true
	}
	if names["blk.0.ffn_up.weight"] == packed || names["blk.0.ffn_up.weight.packed"] != packed ||
		!names["token_embd.weight"] || names["token_embd.weight.packed"] {
		t.Errorf("cache tensors %v", names)
	}

	// The same name at another shape, and a matrix the file lacks.
	other := f32Matrix("blk.0.ffn_up.weight", 13, 256, 3)
	if _, err := s.Matrix(other, up); err != nil {
		t.Fatal(err)
	}
	if packed && !strings.Contains(log.String(), "want a 1-D I8 array packing W4A8 [256 13]") {
		t.Errorf("a tensor of another shape was not refused:\n%s", log.String())
	}
	down := f32Matrix("blk.0.ffn_gate.weight", 8, 256, 4)
	w2, err := s.Matrix(down, model.Role{Name: "blk.%d.ffn_gate.weight", Layers: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "weight cache cannot supply a tensor") {
		t.Errorf("no warning for a tensor the cache lacks:\n%s", log.String())
	}
	// Converted at this start, it computes as without a cache.
	off, err := Open(src, Options{Path: W4A8, CacheDir: "off"})
	if err != nil {
		t.Fatal(err)
	}
	w3, err := off.Matrix(down, model.Role{Name: "blk.%d.ffn_gate.weight", Layers: 8})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	got, want := make([]float32, 8), make([]float32, 8)
	kernels.MatVec(got, w2, x)
	kernels.MatVec(want, w3, x)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("out[%d] = %g, %g without a cache", i, got[i], want[i])
		}
	}
	kernels.Release(w3)
	s.Finish()
	if !strings.Contains(log.String(), "weight cache removed") {
		t.Errorf("the file was not dropped:\n%s", log.String())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the cache file is still there: %v", err)
	}
	kernels.Release(other)
	kernels.Release(w2)
	s.Close()
	s = open()
	defer s.Close()
	if s.Hit() || !strings.Contains(s.MissReason(), "no cache file yet") {
		t.Errorf("after the file was dropped: hit %v, %s", s.Hit(), s.MissReason())
	}
}
