// Package quantize writes GGUF model files: it converts GGUF or Hugging
// Face models to another weight type with llama.cpp's reference
// quantizers and type mixes (so the files match llama-quantize's byte for
// byte), and synthesizes random-weight models with real shapes.
package quantize

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// Options controls File.
type Options struct {
	Type    FileType
	Threads int // <= 0: GOMAXPROCS
	// AllowRequantize lets already quantized input tensors be converted
	// (dequantized first), which compounds the rounding.
	AllowRequantize bool
	// Progress, if set, is called with elements done and total.
	Progress func(done, total int64)
	// Archs are the architectures a Hugging Face folder may hold
	// (model/load's list, which this package cannot import).
	Archs model.Archs
}

// TensorReport says what happened to one tensor.
type TensorReport struct {
	Name     string
	Dims     []uint64 // GGML order
	From, To tensor.Type
	Bytes    int64 // output bytes
}

// Report summarizes a conversion.
type Report struct {
	Tensors  []TensorReport
	InBytes  int64 // tensor bytes read
	OutBytes int64 // tensor bytes written
}

// Elements is the number of weights written.
func (r *Report) Elements() int64 {
	var n int64
	for _, t := range r.Tensors {
		e := int64(1)
		for _, d := range t.Dims {
			e *= int64(d)
		}
		n += e
	}
	return n
}

// Count returns how many tensors got each output type.
func (r *Report) Count() map[tensor.Type]int {
	m := map[tensor.Type]int{}
	for _, t := range r.Tensors {
		m[t.To]++
	}
	return m
}

// metaDropped are input keys llama-quantize does not carry over as they
// are: the two it rewrites (at the end, as it does) and split bookkeeping.
var metaDropped = map[string]bool{
	"general.file_type":            true,
	"general.quantization_version": true,
	"split.no":                     true,
	"split.count":                  true,
	"split.tensors.count":          true,
}

// qntVersion is GGML_QNT_VERSION, the quantization format revision.
const qntVersion = 2

// File converts the model at in (a .gguf file or a Hugging Face folder) to
// a GGUF file at out with the scheme in opt.Type.
func File(in, out string, opt Options) (*Report, error) {
	if opt.Type.Name == "" {
		return nil, fmt.Errorf("quantize: no output type given")
	}
	if sameFile(in, out) {
		return nil, fmt.Errorf("%s: output would overwrite the input", out)
	}
	src, err := model.Open(in)
	if err != nil {
		return nil, err
	}
	defer src.Close()

	var ins []inTensor
	var kvs []gguf.KV
	if src.Format == model.GGUF {
		for _, kv := range src.GGUF.KV {
			if !metaDropped[kv.Key] {
				kvs = append(kvs, kv)
			}
		}
		for _, ti := range src.GGUF.Tensors {
			ins = append(ins, inTensor{name: ti.Name, typ: ti.Type, dims: ti.Dims, data: ti.Data})
		}
	} else {
		if ins, kvs, err = hfInput(src, opt.Archs); err != nil {
			return nil, err
		}
	}
	kvs = append(kvs,
		gguf.KV{Key: "general.quantization_version", Type: gguf.TypeUint32, Value: uint32(qntVersion)},
		gguf.KV{Key: "general.file_type", Type: gguf.TypeUint32, Value: opt.Type.ID})

	nLayer := 0
	for _, kv := range kvs {
		if strings.HasSuffix(kv.Key, ".block_count") {
			if v, ok := kv.Value.(uint32); ok {
				nLayer = int(v)
			}
		}
	}
	byName := make(map[string]*inTensor, len(ins))
	names := make([]string, 0, len(ins))
	for i := range ins {
		if byName[ins[i].name] != nil {
			return nil, fmt.Errorf("%s: two tensors map to %s", in, ins[i].name)
		}
		byName[ins[i].name] = &ins[i]
		names = append(names, ins[i].name)
	}
	sortTensorNames(names)
	mix := newMixer(opt.Type, nLayer, names)

	rep := &Report{}
	outs := make([]outTensor, 0, len(names))
	for _, name := range names {
		t := byName[name]
		ot, err := planTensor(in, t, mix, opt)
		if err != nil {
			return nil, err
		}
		outs = append(outs, ot)
		rep.InBytes += int64(len(t.data))
		rep.OutBytes += ot.bytes()
		rep.Tensors = append(rep.Tensors, TensorReport{Name: name, Dims: t.dims, From: t.typ, To: ot.typ, Bytes: ot.bytes()})
	}
	if err := writeGGUF(out, kvs, outs, writeOptions{threads: opt.Threads, progress: opt.Progress}); err != nil {
		return nil, err
	}
	return rep, nil
}

// planTensor decides a tensor's output type and how its bytes are made.
func planTensor(in string, t *inTensor, mix *mixer, opt Options) (outTensor, error) {
	ot := outTensor{name: t.name, dims: t.dims, srcType: t.typ}
	if len(t.dims) == 0 {
		return ot, fmt.Errorf("%s: tensor %s has no dimensions", in, t.name)
	}
	switch {
	case quantizable(t.name, t.dims):
		ot.typ = mix.typeFor(t.name, t.dims)
	case nDims(t.dims) == 1:
		ot.typ = tensor.F32 // norms and other vectors stay full precision
	case t.typ == tensor.F16 || t.typ == tensor.BF16:
		ot.typ = t.typ
	default:
		ot.typ = tensor.F32
	}
	rowLen := int(t.dims[0])
	if ot.typ == t.typ && t.perm == nil {
		ot.raw = t.data // same type: copied as is, as llama-quantize does
		if int64(len(ot.raw)) != ot.bytes() {
			return ot, fmt.Errorf("%s: tensor %s: %d bytes for %v %s", in, t.name, len(t.data), t.dims, t.typ)
		}
		return ot, nil
	}
	if t.typ != tensor.F32 && t.typ != tensor.F16 && t.typ != tensor.BF16 && !opt.AllowRequantize {
		return ot, fmt.Errorf("%s: tensor %s is %s; quantize reads F32, F16 or BF16 weights (--allow-requantize converts quantized ones, compounding the error)", in, t.name, t.typ)
	}
	if !t.typ.Supported() {
		return ot, fmt.Errorf("%s: tensor %s has type %s, which siskin cannot read", in, t.name, t.typ)
	}
	srcRow, err := tensor.RowBytes(t.typ, rowLen)
	if err != nil {
		return ot, fmt.Errorf("%s: tensor %s: %w", in, t.name, err)
	}
	if int64(len(t.data)) != int64(srcRow)*int64(ot.rows()) {
		return ot, fmt.Errorf("%s: tensor %s: %d bytes for %v %s", in, t.name, len(t.data), t.dims, t.typ)
	}
	data, typ, perm := t.data, t.typ, t.perm
	ot.fill = func(dst []float32, r0, n int) error {
		for r := 0; r < n; r++ {
			sr := r0 + r
			if perm != nil {
				sr = perm(sr)
			}
			if err := tensor.Dequantize(dst[r*rowLen:(r+1)*rowLen], typ, data[sr*srcRow:(sr+1)*srcRow]); err != nil {
				return err
			}
		}
		return nil
	}
	return ot, nil
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	if err1 == nil && err2 == nil {
		return os.SameFile(sa, sb)
	}
	aa, _ := filepath.Abs(a)
	bb, _ := filepath.Abs(b)
	return aa == bb
}
