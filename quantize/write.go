package quantize

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/mmap"
	"github.com/siskin-ml/siskin/tensor"
)

// outTensor is one tensor of the file being written: its bytes are either
// given (raw, copied as is) or produced row by row from float32 values
// that fill computes, quantized to typ on the way out.
type outTensor struct {
	name    string
	typ     tensor.Type
	dims    []uint64 // GGML order: dims[0] is the row length
	srcType tensor.Type
	raw     []byte
	// fill writes rows [r0, r0+n) as float32 into dst (n*dims[0] values).
	// It is called concurrently for disjoint rows.
	fill func(dst []float32, r0, n int) error
}

func (t *outTensor) rowLen() int { return int(t.dims[0]) }

func (t *outTensor) rows() int {
	n := 1
	for _, d := range t.dims[1:] {
		n *= int(d)
	}
	return n
}

func (t *outTensor) elements() int64 { return int64(t.rowLen()) * int64(t.rows()) }

func (t *outTensor) bytes() int64 {
	rb, _ := tensor.RowBytes(t.typ, t.rowLen())
	return int64(rb) * int64(t.rows())
}

// writeOptions controls writeGGUF.
type writeOptions struct {
	threads  int
	progress func(done, total int64) // elements done; may be nil
}

// writeGGUF streams a GGUF v3 file to path: the header with every tensor's
// description first (sizes follow from shape and type alone), then each
// tensor's data in order, so only a few chunks of rows are in memory at a
// time, whatever the model's size. gguf.Builder holds the whole file in
// memory, which a 4B-parameter F16 model does not allow. The file is
// written under a temporary name and renamed when complete, so a failed
// run leaves no truncated model behind.
func writeGGUF(path string, kvs []gguf.KV, tensors []outTensor, opt writeOptions) (err error) {
	align := gguf.DefaultAlignment
	for _, kv := range kvs {
		if kv.Key == "general.alignment" {
			if a, ok := kv.Value.(uint32); ok && a > 0 && a&(a-1) == 0 {
				align = int(a)
			}
		}
	}
	for i := range tensors {
		t := &tensors[i]
		if len(t.dims) == 0 || len(t.dims) > gguf.MaxDims {
			return fmt.Errorf("%s: tensor %s: %d dimensions", path, t.name, len(t.dims))
		}
		if _, err := tensor.RowBytes(t.typ, t.rowLen()); err != nil {
			return fmt.Errorf("%s: tensor %s: %w", path, t.name, err)
		}
		if t.raw != nil && int64(len(t.raw)) != t.bytes() {
			return fmt.Errorf("%s: tensor %s: %d bytes for %v %s (want %d)", path, t.name, len(t.raw), t.dims, t.typ, t.bytes())
		}
	}
	header, err := encodeHeader(kvs, tensors, align)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}

	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := mmap.NewWriter(tmp, 0)
	if _, err = w.Write(header); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var total, done int64
	for i := range tensors {
		total += tensors[i].elements()
	}
	threads := opt.threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	pad := make([]byte, align)
	for i := range tensors {
		t := &tensors[i]
		if t.raw != nil {
			_, err = w.Write(t.raw)
		} else {
			err = streamTensor(w, t, threads, func(n int64) {
				if opt.progress != nil {
					opt.progress(done+n, total)
				}
			})
		}
		if err != nil {
			return fmt.Errorf("%s: tensor %s: %w", path, t.name, err)
		}
		done += t.elements()
		if opt.progress != nil {
			opt.progress(done, total)
		}
		if r := int(t.bytes() % int64(align)); r != 0 {
			if _, err = w.Write(pad[:align-r]); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	if err = w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// CreateTemp makes the file private; a model file is for everyone.
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}

// chunkElems is about how many elements one work item covers: big enough
// to amortize the hand-off, small enough that 2*threads of them in flight
// stay a few tens of MiB.
const chunkElems = 1 << 18

// rowsPerChunk depends on the row length only, so work items (and the
// synthetic generator's seeds, which are per row anyway) never depend on
// the thread count.
func rowsPerChunk(rowLen int) int { return max(1, chunkElems/rowLen) }

type chunkResult struct {
	data []byte
	err  error
}

// streamTensor computes and writes one tensor's rows. Chunks are handed to
// workers in order, at most 2*threads ahead of the writer, and written in
// order as they complete.
func streamTensor(w io.Writer, t *outTensor, threads int, progress func(int64)) error {
	rowLen, rows := t.rowLen(), t.rows()
	rowBytes, _ := tensor.RowBytes(t.typ, rowLen)
	per := rowsPerChunk(rowLen)
	nChunks := (rows + per - 1) / per
	threads = max(1, min(threads, nChunks))

	results := make([]chan chunkResult, nChunks)
	for i := range results {
		results[i] = make(chan chunkResult, 1)
	}
	jobs := make(chan int)
	slots := make(chan struct{}, 2*threads)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		defer close(jobs)
		for c := 0; c < nChunks; c++ {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			select {
			case jobs <- c:
			case <-stop:
				return
			}
		}
	}()
	for range threads {
		wg.Go(func() {
			var f32 []float32
			for c := range jobs {
				r0 := c * per
				n := min(per, rows-r0)
				f32 = growF32(f32, n*rowLen)
				out := make([]byte, n*rowBytes)
				err := t.fill(f32, r0, n)
				for r := 0; r < n && err == nil; r++ {
					err = QuantizeRow(out[r*rowBytes:(r+1)*rowBytes], t.typ, f32[r*rowLen:(r+1)*rowLen])
				}
				results[c] <- chunkResult{out, err}
			}
		})
	}
	defer func() {
		close(stop)
		// Drain so that workers blocked on nothing remain; results are
		// buffered, so workers never block on them.
		for range jobs {
		}
		wg.Wait()
	}()
	for c := 0; c < nChunks; c++ {
		res := <-results[c]
		if res.err != nil {
			return res.err
		}
		if _, err := w.Write(res.data); err != nil {
			return err
		}
		<-slots
		progress(int64(min((c+1)*per, rows)) * int64(rowLen))
	}
	return nil
}

func growF32(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// encodeHeader lays out the GGUF header: magic, version 3, counts, the
// metadata in the given order, the tensor descriptions with aligned data
// offsets, and zero padding up to the data section.
func encodeHeader(kvs []gguf.KV, tensors []outTensor, align int) ([]byte, error) {
	var b bytes.Buffer
	le := binary.LittleEndian
	binary.Write(&b, le, uint32(gguf.Magic))
	binary.Write(&b, le, uint32(3))
	binary.Write(&b, le, uint64(len(tensors)))
	binary.Write(&b, le, uint64(len(kvs)))
	for _, kv := range kvs {
		putStr(&b, kv.Key)
		if err := putValue(&b, kv.Value, true); err != nil {
			return nil, fmt.Errorf("metadata %s: %w", kv.Key, err)
		}
	}
	var off int64
	for _, t := range tensors {
		putStr(&b, t.name)
		binary.Write(&b, le, uint32(len(t.dims)))
		for _, d := range t.dims {
			binary.Write(&b, le, d)
		}
		binary.Write(&b, le, uint32(t.typ))
		binary.Write(&b, le, uint64(off))
		off += t.bytes()
		off = (off + int64(align) - 1) / int64(align) * int64(align)
	}
	if r := b.Len() % align; r != 0 {
		b.Write(make([]byte, align-r))
	}
	return b.Bytes(), nil
}

func putStr(b *bytes.Buffer, s string) {
	binary.Write(b, binary.LittleEndian, uint64(len(s)))
	b.WriteString(s)
}

// valueType maps the Go types gguf.Parse produces back to GGUF value types.
func valueType(v any) (gguf.ValueType, bool) {
	switch v.(type) {
	case uint8:
		return gguf.TypeUint8, true
	case int8:
		return gguf.TypeInt8, true
	case uint16:
		return gguf.TypeUint16, true
	case int16:
		return gguf.TypeInt16, true
	case uint32:
		return gguf.TypeUint32, true
	case int32:
		return gguf.TypeInt32, true
	case float32:
		return gguf.TypeFloat32, true
	case bool:
		return gguf.TypeBool, true
	case string:
		return gguf.TypeString, true
	case uint64:
		return gguf.TypeUint64, true
	case int64:
		return gguf.TypeInt64, true
	case float64:
		return gguf.TypeFloat64, true
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32, []bool, []string, []uint64, []int64, []float64, []any:
		return gguf.TypeArray, true
	}
	return 0, false
}

// putValue writes a value (with its type tag when tagged), mirroring the
// Go types that gguf.Parse returns, so metadata read from one file is
// written back unchanged.
func putValue(b *bytes.Buffer, v any, tagged bool) error {
	le := binary.LittleEndian
	t, ok := valueType(v)
	if !ok {
		return fmt.Errorf("unsupported value type %T", v)
	}
	if tagged {
		binary.Write(b, le, uint32(t))
	}
	switch x := v.(type) {
	case string:
		putStr(b, x)
	case bool:
		if x {
			b.WriteByte(1)
		} else {
			b.WriteByte(0)
		}
	case float32:
		binary.Write(b, le, math.Float32bits(x))
	case float64:
		binary.Write(b, le, math.Float64bits(x))
	case uint8, int8, uint16, int16, uint32, int32, uint64, int64:
		binary.Write(b, le, x)
	case []string:
		binary.Write(b, le, uint32(gguf.TypeString))
		binary.Write(b, le, uint64(len(x)))
		for _, s := range x {
			putStr(b, s)
		}
	case []bool:
		binary.Write(b, le, uint32(gguf.TypeBool))
		binary.Write(b, le, uint64(len(x)))
		for _, e := range x {
			putValue(b, e, false)
		}
	case []any:
		// Nested arrays: each element is written as an array body.
		binary.Write(b, le, uint32(gguf.TypeArray))
		binary.Write(b, le, uint64(len(x)))
		for _, e := range x {
			if err := putValue(b, e, false); err != nil {
				return err
			}
		}
	default: // numeric slices
		var et gguf.ValueType
		switch x.(type) {
		case []uint8:
			et = gguf.TypeUint8
		case []int8:
			et = gguf.TypeInt8
		case []uint16:
			et = gguf.TypeUint16
		case []int16:
			et = gguf.TypeInt16
		case []uint32:
			et = gguf.TypeUint32
		case []int32:
			et = gguf.TypeInt32
		case []float32:
			et = gguf.TypeFloat32
		case []uint64:
			et = gguf.TypeUint64
		case []int64:
			et = gguf.TypeInt64
		case []float64:
			et = gguf.TypeFloat64
		}
		binary.Write(b, le, uint32(et))
		binary.Write(b, le, uint64(binary.Size(x)/elemSize(et)))
		binary.Write(b, le, x)
	}
	return nil
}

func elemSize(t gguf.ValueType) int {
	switch t {
	case gguf.TypeUint8, gguf.TypeInt8, gguf.TypeBool:
		return 1
	case gguf.TypeUint16, gguf.TypeInt16:
		return 2
	case gguf.TypeUint32, gguf.TypeInt32, gguf.TypeFloat32:
		return 4
	}
	return 8
}
