// Package gguf reads GGUF model files (versions 2 and 3): metadata,
// tensor descriptions and the tensor bytes, validated so that a corrupt or
// hostile file is refused with an error instead of a panic or an
// out-of-range read.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/siskin-ml/siskin/mmap"
	"github.com/siskin-ml/siskin/tensor"
)

// Magic is "GGUF" read as a little-endian uint32.
const Magic = 0x46554747

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims is the most dimensions a GGML tensor can have.
const MaxDims = 4

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// scalarSize is the encoded size of a fixed-size value type, 0 otherwise.
func (t ValueType) scalarSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// KV is one metadata entry. Value holds a Go value of the matching type:
// uint8 ... float64, bool, string, or for arrays a typed slice ([]uint8,
// []int32, []float32, []bool, []string, ...; nested arrays are []any whose
// elements are such slices).
type KV struct {
	Key   string
	Type  ValueType
	Elem  ValueType // element type when Type is TypeArray
	Value any
}

// TensorInfo describes one tensor and holds its bytes.
type TensorInfo struct {
	Name string
	Type tensor.Type
	// Dims in GGML order: Dims[0] is the number of elements in a row.
	Dims   []uint64
	Offset uint64 // from the start of the data section
	Data   []byte // exactly the tensor's bytes
}

// Elements is the total number of elements.
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Shape renders the dims like [256 512].
func (t *TensorInfo) Shape() string { return fmt.Sprint(t.Dims) }

// File is a parsed GGUF file.
type File struct {
	Path       string
	Version    uint32
	Alignment  int
	KV         []KV // in file order
	Tensors    []TensorInfo
	DataOffset int // start of the tensor data section in the file

	kvIndex     map[string]int
	tensorIndex map[string]int
	data        []byte
	m           *mmap.File
}

// Open maps the file at path and parses it.
func Open(path string) (*File, error) {
	m, err := mmap.Open(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(m.Data(), path)
	if err != nil {
		m.Close()
		return nil, err
	}
	f.m = m
	return f, nil
}

// Close releases the mapping; tensor Data must not be used afterwards.
func (f *File) Close() error {
	if f == nil || f.m == nil {
		return nil
	}
	err := f.m.Close()
	f.m, f.data = nil, nil
	return err
}

// Release lets the OS drop the mapped pages wholly inside b (see
// mmap.File.Release).
func (f *File) Release(b []byte) { f.m.Release(b) }

// Bytes is the whole file as parsed (the mapping, for Open: not to be
// used after Close).
func (f *File) Bytes() []byte { return f.data }

// FileBytes is the size of the underlying file.
func (f *File) FileBytes() int {
	if f.m == nil {
		return 0
	}
	return f.m.Len()
}

// Error is a parse error naming the file, where it happened and what is wrong.
type Error struct {
	Path  string
	Where string // key or tensor name, or a file region such as "header"
	Msg   string
}

func (e *Error) Error() string {
	if e.Where == "" {
		return fmt.Sprintf("%s: invalid GGUF: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("%s: invalid GGUF: %s: %s", e.Path, e.Where, e.Msg)
}

var errShort = errors.New("unexpected end of file")

type reader struct {
	buf []byte
	off int
}

func (r *reader) remaining() int { return len(r.buf) - r.off }

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > r.remaining() {
		return nil, errShort
	}
	b := r.buf[r.off : r.off+n]
	r.off += n
	return b, nil
}

func (r *reader) u32() (uint32, error) {
	b, err := r.bytes(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64() (uint64, error) {
	b, err := r.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *reader) str() (string, error) {
	n, err := r.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(r.remaining()) {
		return "", fmt.Errorf("string length %d runs past the end of the file", n)
	}
	b, _ := r.bytes(int(n))
	return string(b), nil
}

// Parse parses a whole GGUF file held in data; path names it in errors.
// Tensor Data slices alias data.
func Parse(data []byte, path string) (*File, error) {
	fail := func(where, format string, args ...any) error {
		return &Error{Path: path, Where: where, Msg: fmt.Sprintf(format, args...)}
	}
	r := &reader{buf: data}
	magic, err := r.u32()
	if err != nil {
		return nil, fail("header", "file is %d bytes, too short for a GGUF header", len(data))
	}
	if magic != Magic {
		return nil, fail("header", "bad magic %q (want \"GGUF\")", data[:4])
	}
	f := &File{Path: path, Alignment: DefaultAlignment, data: data}
	if f.Version, err = r.u32(); err != nil {
		return nil, fail("header", "truncated")
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, fail("header", "version %d not supported (want 2 or 3)", f.Version)
	}
	nTensors, err1 := r.u64()
	nKV, err2 := r.u64()
	if err1 != nil || err2 != nil {
		return nil, fail("header", "truncated")
	}
	// Every KV needs at least a key length, a type and one byte of value;
	// every tensor info at least 8+4+8+4+8 bytes. Checking counts against the
	// bytes left keeps a hostile count from driving a huge allocation.
	if nKV > uint64(r.remaining()/13) {
		return nil, fail("header", "metadata count %d is impossible for a file of %d bytes", nKV, len(data))
	}
	if nTensors > uint64(r.remaining()/32) {
		return nil, fail("header", "tensor count %d is impossible for a file of %d bytes", nTensors, len(data))
	}

	f.KV = make([]KV, 0, nKV)
	f.kvIndex = make(map[string]int, nKV)
	for i := uint64(0); i < nKV; i++ {
		key, err := r.str()
		if err != nil {
			return nil, fail(fmt.Sprintf("metadata entry %d", i), "key: %v", err)
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, fail(key, "duplicate metadata key")
		}
		t, err := r.u32()
		if err != nil {
			return nil, fail(key, "%v", errShort)
		}
		kv := KV{Key: key, Type: ValueType(t)}
		if kv.Type == TypeArray {
			kv.Value, kv.Elem, err = readArray(r, 0)
		} else {
			kv.Value, err = readScalar(r, kv.Type)
		}
		if err != nil {
			return nil, fail(key, "%v", err)
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, kv)
	}

	if v, ok := f.Get("general.alignment"); ok {
		a, ok := toUint(v)
		if !ok || a == 0 || a > 1<<16 || a&(a-1) != 0 {
			return nil, fail("general.alignment", "must be a power of two up to 65536, got %v", v)
		}
		f.Alignment = int(a)
	}

	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.tensorIndex = make(map[string]int, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		name, err := r.str()
		if err != nil {
			return nil, fail(fmt.Sprintf("tensor info %d", i), "name: %v", err)
		}
		if _, dup := f.tensorIndex[name]; dup {
			return nil, fail(name, "duplicate tensor name")
		}
		nd, err := r.u32()
		if err != nil {
			return nil, fail(name, "%v", errShort)
		}
		if nd > MaxDims {
			return nil, fail(name, "%d dimensions (at most %d)", nd, MaxDims)
		}
		ti := TensorInfo{Name: name, Dims: make([]uint64, nd)}
		for d := range ti.Dims {
			if ti.Dims[d], err = r.u64(); err != nil {
				return nil, fail(name, "%v", errShort)
			}
		}
		tt, err1 := r.u32()
		off, err2 := r.u64()
		if err1 != nil || err2 != nil {
			return nil, fail(name, "%v", errShort)
		}
		ti.Type, ti.Offset = tensor.Type(tt), off
		if !ti.Type.Known() {
			return nil, fail(name, "unknown tensor type %d", tt)
		}
		f.tensorIndex[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}

	dataStart := alignUp(r.off, f.Alignment)
	if dataStart > len(data) {
		if len(f.Tensors) > 0 {
			return nil, fail("data", "file ends before the tensor data section")
		}
		dataStart = len(data)
	}
	f.DataOffset = dataStart
	dataLen := uint64(len(data) - dataStart)

	type span struct {
		begin, end uint64
		name       string
	}
	spans := make([]span, 0, len(f.Tensors))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		size, err := tensorBytes(ti)
		if err != nil {
			return nil, fail(ti.Name, "%v", err)
		}
		if ti.Offset%uint64(f.Alignment) != 0 {
			return nil, fail(ti.Name, "data offset %d is not aligned to %d", ti.Offset, f.Alignment)
		}
		if ti.Offset > dataLen || size > dataLen-ti.Offset {
			return nil, fail(ti.Name, "data [%d, %d) runs past the end of the file (data section is %d bytes)", ti.Offset, ti.Offset+size, dataLen)
		}
		ti.Data = data[dataStart+int(ti.Offset) : dataStart+int(ti.Offset+size) : dataStart+int(ti.Offset+size)]
		spans = append(spans, span{ti.Offset, ti.Offset + size, ti.Name})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].begin < spans[j].begin })
	for i := 1; i < len(spans); i++ {
		if spans[i].begin < spans[i-1].end && spans[i].end > spans[i].begin && spans[i-1].end > spans[i-1].begin {
			return nil, fail(spans[i].name, "data overlaps tensor %s", spans[i-1].name)
		}
	}
	return f, nil
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// tensorBytes computes the byte size of a tensor, refusing shapes whose
// size overflows or whose rows are not whole blocks.
func tensorBytes(ti *TensorInfo) (uint64, error) {
	n := uint64(1)
	for _, d := range ti.Dims {
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v overflows", ti.Dims)
		}
		n *= d
	}
	bs := uint64(ti.Type.BlockSize())
	if len(ti.Dims) > 0 && ti.Dims[0]%bs != 0 {
		return 0, fmt.Errorf("row length %d is not a multiple of the %s block size %d", ti.Dims[0], ti.Type, bs)
	}
	// A tensor without dimensions holds one element, which a block type
	// cannot store.
	if n%bs != 0 {
		return 0, fmt.Errorf("%d elements are not a multiple of the %s block size %d", n, ti.Type, bs)
	}
	blocks := n / bs
	bb := uint64(ti.Type.BlockBytes())
	if blocks > math.MaxInt64/bb {
		return 0, fmt.Errorf("shape %v overflows", ti.Dims)
	}
	return blocks * bb, nil
}

func readScalar(r *reader, t ValueType) (any, error) {
	switch t {
	case TypeString:
		return r.str()
	case TypeArray:
		return nil, errors.New("nested array where a scalar was expected")
	}
	size := t.scalarSize()
	if size == 0 {
		return nil, fmt.Errorf("unknown value type %d", uint32(t))
	}
	b, err := r.bytes(size)
	if err != nil {
		return nil, err
	}
	switch t {
	case TypeUint8:
		return b[0], nil
	case TypeInt8:
		return int8(b[0]), nil
	case TypeBool:
		if b[0] > 1 {
			return nil, fmt.Errorf("bool value %d is not 0 or 1", b[0])
		}
		return b[0] == 1, nil
	case TypeUint16:
		return binary.LittleEndian.Uint16(b), nil
	case TypeInt16:
		return int16(binary.LittleEndian.Uint16(b)), nil
	case TypeUint32:
		return binary.LittleEndian.Uint32(b), nil
	case TypeInt32:
		return int32(binary.LittleEndian.Uint32(b)), nil
	case TypeFloat32:
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case TypeUint64:
		return binary.LittleEndian.Uint64(b), nil
	case TypeInt64:
		return int64(binary.LittleEndian.Uint64(b)), nil
	default: // TypeFloat64
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	}
}

// maxNesting bounds array-of-array depth so a hostile file cannot recurse deeply.
const maxNesting = 8

func readArray(r *reader, depth int) (any, ValueType, error) {
	if depth >= maxNesting {
		return nil, 0, fmt.Errorf("arrays nested more than %d deep", maxNesting)
	}
	et, err := r.u32()
	if err != nil {
		return nil, 0, errShort
	}
	elem := ValueType(et)
	n, err := r.u64()
	if err != nil {
		return nil, 0, errShort
	}
	minSize := uint64(elem.scalarSize())
	switch elem {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if minSize == 0 {
		return nil, 0, fmt.Errorf("array of unknown value type %d", et)
	}
	if n > uint64(r.remaining())/minSize {
		return nil, 0, fmt.Errorf("array of %d %s runs past the end of the file", n, elem)
	}
	count := int(n)
	if sz := elem.scalarSize(); sz > 0 {
		b, _ := r.bytes(count * sz)
		v, err := decodeScalars(elem, b, count)
		return v, elem, err
	}
	switch elem {
	case TypeString:
		out := make([]string, count)
		for i := range out {
			if out[i], err = r.str(); err != nil {
				return nil, 0, fmt.Errorf("array element %d: %v", i, err)
			}
		}
		return out, elem, nil
	default: // nested arrays
		out := make([]any, count)
		for i := range out {
			if out[i], _, err = readArray(r, depth+1); err != nil {
				return nil, 0, fmt.Errorf("array element %d: %v", i, err)
			}
		}
		return out, elem, nil
	}
}

func decodeScalars(t ValueType, b []byte, n int) (any, error) {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return append([]uint8(nil), b...), nil
	case TypeInt8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(b[i])
		}
		return out, nil
	case TypeBool:
		out := make([]bool, n)
		for i := range out {
			if b[i] > 1 {
				return nil, fmt.Errorf("array element %d: bool value %d is not 0 or 1", i, b[i])
			}
			out[i] = b[i] == 1
		}
		return out, nil
	case TypeUint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(b[2*i:])
		}
		return out, nil
	case TypeInt16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(b[2*i:]))
		}
		return out, nil
	case TypeUint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(b[4*i:])
		}
		return out, nil
	case TypeInt32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(b[4*i:]))
		}
		return out, nil
	case TypeFloat32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return out, nil
	case TypeUint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(b[8*i:])
		}
		return out, nil
	case TypeInt64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(b[8*i:]))
		}
		return out, nil
	default: // TypeFloat64
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
		return out, nil
	}
}
