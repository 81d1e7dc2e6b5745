package model

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/ledger"
)

// MemoryRegistrar is a model that names its own heap buffers (float32
// norm vectors, RoPE tables) in a memory ledger; the mapped weights are
// registered from the Source.
type MemoryRegistrar interface {
	RegisterMemory(l *ledger.Ledger)
}

// RegisterMemory adds the mapped tensors to l, one line per layer
// ("blk.3 weights (mapped)") and one per other tensor, which keeps the
// table readable while residency is still measured over each tensor's
// own range, plus the parsed header the Source keeps on the heap.
func (s *Source) RegisterMemory(l *ledger.Ledger) {
	type group struct {
		name string
		data [][]byte
	}
	var groups []*group
	byName := map[string]*group{}
	add := func(tensor string, data []byte) {
		name := tensor + " (mapped)"
		if n, ok := layerOf(tensor); ok {
			name = fmt.Sprintf("blk.%d weights (mapped)", n)
		}
		g := byName[name]
		if g == nil {
			g = &group{name: name}
			byName[name] = g
			groups = append(groups, g)
		}
		g.data = append(g.data, data)
	}
	switch {
	case s.GGUF != nil:
		for _, t := range s.GGUF.Tensors {
			add(t.Name, t.Data)
		}
		l.Add("gguf metadata (heap copies)", ledger.Metadata, ggufHeapBytes(s.GGUF))
	case s.HF != nil:
		var hdr int64
		for _, name := range s.HF.Names() {
			t, _ := s.HF.Tensor(name)
			add(name, t.Data)
			// Name, shape, offsets and the index entry: an estimate.
			hdr += int64(2*len(name)) + 160
		}
		l.Add("safetensors headers (heap)", ledger.Metadata, hdr)
	}
	for _, g := range groups {
		l.AddMapped(g.name, ledger.WeightsMapped, g.data...)
	}
}

// layerOf finds the layer number in a tensor name: GGUF "blk.N." or
// Hugging Face "model.layers.N.".
func layerOf(name string) (int, bool) {
	for _, p := range []string{"blk.", "layers."} {
		i := strings.Index(name, p)
		if i < 0 || (i > 0 && name[i-1] != '.') {
			continue
		}
		rest := name[i+len(p):]
		end := strings.IndexByte(rest, '.')
		if end < 0 {
			continue
		}
		if n, err := strconv.Atoi(rest[:end]); err == nil {
			return n, true
		}
	}
	return 0, false
}

// ggufHeapBytes estimates the heap a parsed GGUF file holds: metadata
// values (strings are copied out of the mapping) and tensor descriptions.
// The vocabulary's string bytes are left out: the tokenizer shares them
// and counts them.
func ggufHeapBytes(f *gguf.File) int64 {
	const str, slice, iface = 16, 24, 16
	n := int64(len(f.KV)) * int64(unsafe.Sizeof(gguf.KV{}))
	for _, kv := range f.KV {
		n += int64(len(kv.Key)) + iface
		shared := kv.Key == "tokenizer.ggml.tokens"
		n += valueBytes(kv.Value, shared)
	}
	n += int64(len(f.Tensors)) * int64(unsafe.Sizeof(gguf.TensorInfo{}))
	for _, t := range f.Tensors {
		n += int64(len(t.Name)) + 8*int64(len(t.Dims))
	}
	n += ledger.MapBytes(len(f.KV), str+8) + ledger.MapBytes(len(f.Tensors), str+8)
	return n + slice
}

func valueBytes(v any, shared bool) int64 {
	const str, slice = 16, 24
	switch v := v.(type) {
	case string:
		return int64(len(v))
	case []string:
		n := int64(slice + str*len(v))
		if !shared {
			for _, s := range v {
				n += int64(len(s))
			}
		}
		return n
	case []uint8:
		return int64(slice + len(v))
	case []int8:
		return int64(slice + len(v))
	case []bool:
		return int64(slice + len(v))
	case []uint16:
		return int64(slice + 2*len(v))
	case []int16:
		return int64(slice + 2*len(v))
	case []uint32:
		return int64(slice + 4*len(v))
	case []int32:
		return int64(slice + 4*len(v))
	case []float32:
		return int64(slice + 4*len(v))
	case []uint64:
		return int64(slice + 8*len(v))
	case []int64:
		return int64(slice + 8*len(v))
	case []float64:
		return int64(slice + 8*len(v))
	case []any:
		n := int64(slice + 16*len(v))
		for _, e := range v {
			n += valueBytes(e, shared)
		}
		return n
	}
	return 8 // a boxed scalar
}

// AddVectors registers float32 vectors (norm weights copied out of the
// file at load) as one heap line.
func AddVectors(l *ledger.Ledger, name string, vecs ...[]float32) {
	var n int64
	for _, v := range vecs {
		n += 4 * int64(cap(v))
	}
	l.Add(name, ledger.WeightsConverted, n)
}

// AddRoPE registers a RoPE table; its size is read at each report, since
// the table grows with the longest sequence seen.
func AddRoPE(l *ledger.Ledger, name string, t *kernels.RoPETable) {
	l.AddFunc(name, ledger.RoPE, func() (int64, int64) {
		b := t.Bytes()
		return b, b
	})
}
