package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// Builder assembles a GGUF v3 file in memory: metadata in the order added,
// then tensors in the order added, each aligned.
type Builder struct {
	kv      bytes.Buffer
	nKV     int
	tensors []builderTensor
	align   int
}

type builderTensor struct {
	name string
	typ  tensor.Type
	dims []uint64
	data []byte
}

// NewBuilder returns an empty builder with the default alignment.
func NewBuilder() *Builder { return &Builder{align: DefaultAlignment} }

func putString(w *bytes.Buffer, s string) {
	binary.Write(w, binary.LittleEndian, uint64(len(s)))
	w.WriteString(s)
}

// Add appends a metadata entry. v may be any scalar type GGUF has (uint8
// ... float64, bool, string) or a slice of one of them.
func (b *Builder) Add(key string, v any) error {
	var body bytes.Buffer
	t, elem, err := encodeValue(&body, v)
	if err != nil {
		return fmt.Errorf("gguf: key %s: %w", key, err)
	}
	if key == "general.alignment" {
		if a, ok := toUint(v); ok && a > 0 {
			b.align = int(a)
		}
	}
	putString(&b.kv, key)
	binary.Write(&b.kv, binary.LittleEndian, uint32(t))
	if t == TypeArray {
		binary.Write(&b.kv, binary.LittleEndian, uint32(elem))
	}
	b.kv.Write(body.Bytes())
	b.nKV++
	return nil
}

func encodeValue(w *bytes.Buffer, v any) (ValueType, ValueType, error) {
	le := binary.LittleEndian
	switch x := v.(type) {
	case uint8:
		w.WriteByte(x)
		return TypeUint8, 0, nil
	case int8:
		w.WriteByte(byte(x))
		return TypeInt8, 0, nil
	case uint16:
		binary.Write(w, le, x)
		return TypeUint16, 0, nil
	case int16:
		binary.Write(w, le, x)
		return TypeInt16, 0, nil
	case uint32:
		binary.Write(w, le, x)
		return TypeUint32, 0, nil
	case int32:
		binary.Write(w, le, x)
		return TypeInt32, 0, nil
	case float32:
		binary.Write(w, le, math.Float32bits(x))
		return TypeFloat32, 0, nil
	case bool:
		if x {
			w.WriteByte(1)
		} else {
			w.WriteByte(0)
		}
		return TypeBool, 0, nil
	case string:
		putString(w, x)
		return TypeString, 0, nil
	case uint64:
		binary.Write(w, le, x)
		return TypeUint64, 0, nil
	case int64:
		binary.Write(w, le, x)
		return TypeInt64, 0, nil
	case float64:
		binary.Write(w, le, math.Float64bits(x))
		return TypeFloat64, 0, nil
	case []string:
		binary.Write(w, le, uint64(len(x)))
		for _, s := range x {
			putString(w, s)
		}
		return TypeArray, TypeString, nil
	case []bool:
		binary.Write(w, le, uint64(len(x)))
		for _, e := range x {
			encodeValue(w, e)
		}
		return TypeArray, TypeBool, nil
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32, []uint64, []int64, []float64:
		elem := map[string]ValueType{"[]uint8": TypeUint8, "[]int8": TypeInt8, "[]uint16": TypeUint16, "[]int16": TypeInt16,
			"[]uint32": TypeUint32, "[]int32": TypeInt32, "[]float32": TypeFloat32, "[]uint64": TypeUint64, "[]int64": TypeInt64, "[]float64": TypeFloat64}[fmt.Sprintf("%T", v)]
		n := binary.Size(x) / elem.scalarSize()
		binary.Write(w, le, uint64(n))
		binary.Write(w, le, x)
		return TypeArray, elem, nil
	}
	return 0, 0, fmt.Errorf("unsupported value type %T", v)
}

// AddTensor appends a tensor; dims are in GGML order (row length first).
func (b *Builder) AddTensor(name string, typ tensor.Type, dims []uint64, data []byte) {
	b.tensors = append(b.tensors, builderTensor{name, typ, append([]uint64(nil), dims...), data})
}

// Header returns the bytes WriteTo writes before the tensor data: the
// header, metadata and tensor table, padded to the alignment. Tensor i's
// data follows at its offset from the end of them, each tensor padded
// with zeros to the alignment.
func (b *Builder) Header() []byte {
	var h bytes.Buffer
	le := binary.LittleEndian
	binary.Write(&h, le, uint32(Magic))
	binary.Write(&h, le, uint32(3))
	binary.Write(&h, le, uint64(len(b.tensors)))
	binary.Write(&h, le, uint64(b.nKV))
	h.Write(b.kv.Bytes())
	off := 0
	for _, t := range b.tensors {
		putString(&h, t.name)
		binary.Write(&h, le, uint32(len(t.dims)))
		for _, d := range t.dims {
			binary.Write(&h, le, d)
		}
		binary.Write(&h, le, uint32(t.typ))
		binary.Write(&h, le, uint64(off))
		off = alignUp(off+len(t.data), b.align)
	}
	h.Write(make([]byte, alignUp(h.Len(), b.align)-h.Len()))
	return h.Bytes()
}

// WriteTo writes the file.
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	// The tensor data goes straight to w: a model's worth of bytes is not
	// copied into the header buffer.
	m, err := w.Write(b.Header())
	n := int64(m)
	pad := make([]byte, b.align)
	for _, t := range b.tensors {
		if err != nil {
			return n, err
		}
		m, err = w.Write(t.data)
		n += int64(m)
		if err == nil {
			m, err = w.Write(pad[:alignUp(len(t.data), b.align)-len(t.data)])
			n += int64(m)
		}
	}
	return n, err
}

// Bytes returns the encoded file.
func (b *Builder) Bytes() []byte {
	var buf bytes.Buffer
	b.WriteTo(&buf)
	return buf.Bytes()
}
