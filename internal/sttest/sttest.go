// Package sttest writes safetensors files for tests that need a
// checkpoint variant of their own (a changed tensor, another shape).
package sttest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"sort"
)

// Tensor is one tensor to write: its dtype ("F32", "F16", "BF16"), shape
// and little-endian bytes.
type Tensor struct {
	DType string
	Shape []int
	Data  []byte
}

// Write writes tensors in the safetensors layout (an 8-byte header
// length, the JSON header, the data), in order of name.
func Write(path string, tensors map[string]Tensor) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	header := map[string]any{}
	var data []byte
	for _, n := range names {
		ts := tensors[n]
		header[n] = map[string]any{"dtype": ts.DType, "shape": ts.Shape, "data_offsets": []int{len(data), len(data) + len(ts.Data)}}
		data = append(data, ts.Data...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(h)))
	buf.Write(h)
	buf.Write(data)
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
