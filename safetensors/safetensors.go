// Package safetensors reads Hugging Face safetensors checkpoints through a
// read-only memory map, so tensor data is never copied onto the heap.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON
// mapping tensor names to {"dtype", "shape", "data_offsets"} (plus an
// optional "__metadata__" string map), then the data section that the
// offsets are relative to. Only F32, F16 and BF16 tensors are accepted.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/siskin-ml/siskin/mmap"
	"github.com/siskin-ml/siskin/tensor"
)

// MaxHeaderSize bounds the JSON header; real headers are kilobytes, so a
// larger length means a corrupt or hostile file rather than a big model.
const MaxHeaderSize = 100 << 20

const metadataKey = "__metadata__"

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name  string
	Type  tensor.Type // F32, F16 or BF16
	Shape []int       // as stored, torch order (e.g. [out, in])
	// Data is the tensor's bytes, a sub-slice of the file (capacity
	// clipped to the tensor). It may be unaligned and is only valid until
	// the File is closed.
	Data []byte

	begin, end int // offsets within the data section
}

// Elements returns the number of elements, the product of Shape.
func (t *TensorInfo) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a parsed safetensors file.
type File struct {
	Path     string            // the name given to Parse, or the path given to Open
	Metadata map[string]string // the "__metadata__" map; nil when absent
	Tensors  []TensorInfo      // sorted by data offset, ties by name

	index map[string]int
	m     *mmap.File // nil when the data came from Parse
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

// Close unmaps a file from Open; every TensorInfo.Data becomes invalid.
// It is a no-op for a file from Parse and safe to call twice.
func (f *File) Close() error {
	if f == nil || f.m == nil {
		return nil
	}
	err := f.m.Close()
	f.m = nil
	return err
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.index[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// dtypes maps the safetensors dtype names siskin accepts to their types.
var dtypes = map[string]tensor.Type{
	"F32":  tensor.F32,
	"F16":  tensor.F16,
	"BF16": tensor.BF16,
}

// Parse parses and validates a whole safetensors file held in data. The
// tensors' Data slices point into data. name is used in error messages.
func Parse(data []byte, name string) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("%s: file is %d bytes, too short for the 8-byte header length", name, len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	switch {
	case n == 0:
		return nil, fmt.Errorf("%s: header length is 0", name)
	case n > MaxHeaderSize:
		return nil, fmt.Errorf("%s: header length %d exceeds the %d-byte limit (corrupt file?)", name, n, MaxHeaderSize)
	case n > uint64(len(data)-8):
		return nil, fmt.Errorf("%s: header length %d runs past the end of the %d-byte file", name, n, len(data))
	}
	header := data[8 : 8+n]
	body := data[8+n:]
	if !utf8.Valid(header) {
		return nil, fmt.Errorf("%s: header is not valid UTF-8", name)
	}
	fields, err := objectFields(header)
	if err != nil {
		return nil, fmt.Errorf("%s: header: %v", name, err)
	}

	f := &File{Path: name, index: make(map[string]int, len(fields))}
	for _, fd := range fields {
		if fd.key == metadataKey {
			if f.Metadata, err = parseMetadata(fd.value); err != nil {
				return nil, fmt.Errorf("%s: %s: %v", name, metadataKey, err)
			}
			continue
		}
		ti, err := parseTensor(fd.key, fd.value, len(body))
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %v", name, fd.key, err)
		}
		ti.Data = body[ti.begin:ti.end:ti.end]
		f.Tensors = append(f.Tensors, ti)
	}

	sort.Slice(f.Tensors, func(i, j int) bool {
		a, b := &f.Tensors[i], &f.Tensors[j]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.Name < b.Name
	})
	// Sorted by begin, a non-empty tensor overlaps an earlier one exactly
	// when it starts before the furthest end seen so far. Empty tensors
	// hold no bytes, so they may sit anywhere in range.
	maxEnd, last := 0, -1
	for i := range f.Tensors {
		t := &f.Tensors[i]
		f.index[t.Name] = i
		if t.begin == t.end {
			continue
		}
		if last >= 0 && t.begin < maxEnd {
			p := &f.Tensors[last]
			return nil, fmt.Errorf("%s: tensor %q (bytes %d..%d) overlaps tensor %q (bytes %d..%d)",
				name, t.Name, t.begin, t.end, p.Name, p.begin, p.end)
		}
		if t.end > maxEnd {
			maxEnd, last = t.end, i
		}
	}
	return f, nil
}

func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	fields, err := objectFields(raw)
	if err != nil {
		return nil, err
	}
	md := make(map[string]string, len(fields))
	for _, fd := range fields {
		s, err := jsonString(fd.value)
		if err != nil {
			return nil, fmt.Errorf("key %q: %v", fd.key, err)
		}
		md[fd.key] = s
	}
	return md, nil
}

// parseTensor checks one header entry against a data section of dataLen
// bytes and returns it with begin and end set but Data still nil.
func parseTensor(name string, raw json.RawMessage, dataLen int) (TensorInfo, error) {
	ti := TensorInfo{Name: name}
	if name == "" {
		return ti, errors.New("empty tensor name")
	}
	fields, err := objectFields(raw)
	if err != nil {
		return ti, err
	}
	var dtypeRaw, shapeRaw, offRaw json.RawMessage
	for _, fd := range fields {
		// Unknown fields are ignored so that future writers stay readable.
		switch fd.key {
		case "dtype":
			dtypeRaw = fd.value
		case "shape":
			shapeRaw = fd.value
		case "data_offsets":
			offRaw = fd.value
		}
	}
	for _, req := range []struct {
		key string
		raw json.RawMessage
	}{{"dtype", dtypeRaw}, {"shape", shapeRaw}, {"data_offsets", offRaw}} {
		if req.raw == nil {
			return ti, fmt.Errorf("missing %q", req.key)
		}
	}

	dtype, err := jsonString(dtypeRaw)
	if err != nil {
		return ti, fmt.Errorf("dtype: %v", err)
	}
	typ, ok := dtypes[dtype]
	if !ok {
		return ti, fmt.Errorf("unsupported dtype %q (siskin reads F32, F16 and BF16)", dtype)
	}
	ti.Type = typ

	dims, err := jsonInts(shapeRaw)
	if err != nil {
		return ti, fmt.Errorf("shape: %v", err)
	}
	// The byte size is built up with an overflow check so that a product
	// of huge dims cannot wrap around to the real span. Zero dims are
	// skipped in the product so that [0, huge] is still refused.
	elem, _ := tensor.RowBytes(typ, 1)
	size, empty := elem, false
	ti.Shape = make([]int, len(dims))
	for i, d := range dims {
		if d < 0 {
			return ti, fmt.Errorf("shape %s: negative dimension %d", shapeRaw, d)
		}
		if d > math.MaxInt {
			return ti, fmt.Errorf("shape %s: dimension %d overflows int", shapeRaw, d)
		}
		ti.Shape[i] = int(d)
		if d == 0 {
			empty = true
			continue
		}
		if size > math.MaxInt/int(d) {
			return ti, fmt.Errorf("shape %s: byte size overflows int", shapeRaw)
		}
		size *= int(d)
	}
	if empty {
		size = 0
	}

	offs, err := jsonInts(offRaw)
	if err != nil {
		return ti, fmt.Errorf("data_offsets: %v", err)
	}
	if len(offs) != 2 {
		return ti, fmt.Errorf("data_offsets %s: want [begin, end]", offRaw)
	}
	begin, end := offs[0], offs[1]
	switch {
	case begin < 0 || end < 0:
		return ti, fmt.Errorf("data_offsets %s: negative offset", offRaw)
	case begin > end:
		return ti, fmt.Errorf("data_offsets %s: begin is after end", offRaw)
	case end > int64(dataLen):
		return ti, fmt.Errorf("data_offsets %s: end is past the %d-byte data section", offRaw, dataLen)
	case end-begin != int64(size):
		return ti, fmt.Errorf("data_offsets %s span %d bytes but %s %s needs %d", offRaw, end-begin, dtype, shapeRaw, size)
	}
	ti.begin, ti.end = int(begin), int(end)
	return ti, nil
}

type field struct {
	key   string
	value json.RawMessage
}

// objectFields splits a JSON object into its fields in file order. Unlike
// decoding into a map it refuses duplicate keys, which would make a
// tensor's meaning depend on which copy a reader keeps, and it refuses
// anything after the object.
func objectFields(data []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object: %s", abbrev(data))
	}
	var fields []field
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("invalid JSON: object key %v", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON at key %q: %v", key, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		fields = append(fields, field{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, fmt.Errorf("invalid JSON after the object: %v", err)
		}
		return nil, fmt.Errorf("unexpected %v after the object", tok)
	}
	return fields, nil
}

func jsonString(raw json.RawMessage) (string, error) {
	var s string
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%s is not a string", abbrev(raw))
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// jsonInts decodes an array of integers, refusing fractions, exponents
// and quoted numbers that a decode into []int64 or json.Number would let
// through or round.
func jsonInts(raw json.RawMessage) ([]int64, error) {
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("%s is not an array", abbrev(raw))
	}
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, err
	}
	out := make([]int64, len(elems))
	for i, e := range elems {
		v, err := strconv.ParseInt(string(bytes.TrimSpace(e)), 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return nil, fmt.Errorf("element %d (%s) is out of range", i, abbrev(e))
			}
			return nil, fmt.Errorf("element %d (%s) is not an integer", i, abbrev(e))
		}
		out[i] = v
	}
	return out, nil
}

// abbrev shortens JSON for error messages so a corrupt header cannot
// flood the log.
func abbrev(b []byte) string {
	const max = 40
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return string(b)
}
