package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/tensor"
)

// raw builds a file from a literal header and data section.
func raw(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

type spec struct {
	name, dtype string
	shape       []int
}

var dtypeSize = map[string]int{"F32": 4, "F16": 2, "BF16": 2}

// build lays out tensors back to back, filling tensor i's bytes with
// i+1 so tests can tell them apart.
func build(meta string, specs ...spec) []byte {
	var hdr strings.Builder
	var data []byte
	hdr.WriteString("{")
	if meta != "" {
		fmt.Fprintf(&hdr, `"__metadata__":%s`, meta)
	}
	for i, s := range specs {
		n := dtypeSize[s.dtype]
		for _, d := range s.shape {
			n *= d
		}
		if hdr.Len() > 1 {
			hdr.WriteString(",")
		}
		hdr.WriteString(entry(s.name, s.dtype, dimsJSON(s.shape), int64(len(data)), int64(len(data)+n)))
		data = append(data, bytes.Repeat([]byte{byte(i + 1)}, n)...)
	}
	hdr.WriteString("}")
	return raw(hdr.String(), data)
}

func dimsJSON(dims []int) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// entry formats one header entry.
func entry(name, dtype, shape string, begin, end int64) string {
	return fmt.Sprintf(`%q:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, name, dtype, shape, begin, end)
}

func TestParseValid(t *testing.T) {
	b := build(`{"format":"pt"}`,
		spec{"w", "BF16", []int{3, 2}},
		spec{"b", "F32", []int{3}},
		spec{"h", "F16", []int{2, 2, 2}},
		spec{"s", "F32", []int{}},
	)
	f, err := Parse(b, "x.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != "x.safetensors" || f.Metadata["format"] != "pt" || len(f.Tensors) != 4 {
		t.Fatalf("got %+v", f)
	}
	want := []struct {
		name  string
		typ   tensor.Type
		shape []int
		fill  byte
	}{
		{"w", tensor.BF16, []int{3, 2}, 1},
		{"b", tensor.F32, []int{3}, 2},
		{"h", tensor.F16, []int{2, 2, 2}, 3},
		{"s", tensor.F32, []int{}, 4},
	}
	for i, w := range want {
		if f.Tensors[i].Name != w.name {
			t.Errorf("Tensors[%d] = %q, want %q (offset order)", i, f.Tensors[i].Name, w.name)
		}
		ti, ok := f.Tensor(w.name)
		if !ok {
			t.Fatalf("Tensor(%q) missing", w.name)
		}
		n := ti.Elements() * dtypeSize[ti.Type.String()]
		if ti.Type != w.typ || fmt.Sprint(ti.Shape) != fmt.Sprint(w.shape) || len(ti.Data) != n || cap(ti.Data) != n {
			t.Errorf("%s: got %v %v len %d cap %d", w.name, ti.Type, ti.Shape, len(ti.Data), cap(ti.Data))
		}
		if !bytes.Equal(ti.Data, bytes.Repeat([]byte{w.fill}, n)) {
			t.Errorf("%s: wrong bytes % x", w.name, ti.Data)
		}
	}
	if _, ok := f.Tensor("nope"); ok {
		t.Error("Tensor(nope) found")
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
}

// TestParseLenient covers what the format allows even though the
// reference writer never produces it.
func TestParseLenient(t *testing.T) {
	cases := map[string][]byte{
		"no tensors":       raw(`{}`, nil),
		"metadata null":    raw(`{"__metadata__":null}`, nil),
		"space padding":    raw(`{`+entry("a", "F32", "[1]", 0, 4)+`}      `, make([]byte, 4)),
		"gap and trailing": raw(`{`+entry("a", "F32", "[1]", 4, 8)+`}`, make([]byte, 16)),
		"unknown field":    raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}}`, make([]byte, 4)),
		"zero-size":        raw(`{`+entry("a", "BF16", "[0,256]", 0, 0)+`}`, nil),
		// An empty tensor holds no bytes, so sitting inside another's
		// range is not an overlap.
		"zero-size inside": raw(`{`+entry("a", "F32", "[2]", 0, 8)+`,`+entry("e", "F16", "[4,0]", 4, 4)+`}`, make([]byte, 8)),
		"zero-size at end": raw(`{`+entry("a", "F32", "[2]", 0, 8)+`,`+entry("e", "F16", "[0]", 8, 8)+`}`, make([]byte, 8)),
		"spaced arrays":    raw(`{"a": {"dtype": "F16", "shape": [ 1 , 2 ], "data_offsets": [ 0 , 4 ]}}`, make([]byte, 4)),
		"out of order":     raw(`{`+entry("b", "F32", "[1]", 4, 8)+`,`+entry("a", "F32", "[1]", 0, 4)+`}`, make([]byte, 8)),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := Parse(b, "x.safetensors")
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, f, b)
		})
	}
}

func TestParseErrors(t *testing.T) {
	four := make([]byte, 4)
	huge := make([]byte, 16)
	binary.LittleEndian.PutUint64(huge, 1<<40)
	big := make([]byte, 16)
	binary.LittleEndian.PutUint64(big, MaxHeaderSize+1)
	zero := make([]byte, 16)
	past := make([]byte, 16)
	binary.LittleEndian.PutUint64(past, 9)

	cases := []struct {
		name string
		b    []byte
		want []string // substrings of the error, besides the file name
	}{
		{"short", []byte{1, 2, 3}, []string{"too short"}},
		{"header past end", past, []string{"header length 9", "past the end"}},
		{"header huge", huge, []string{"limit"}},
		{"header just over limit", big, []string{"limit"}},
		{"header zero", zero, []string{"header length is 0"}},
		{"invalid json", raw(`{"a":`, nil), []string{"invalid JSON"}},
		{"not object", raw(`[1,2]`, nil), []string{"not a JSON object"}},
		{"trailing", raw(`{}{}`, nil), []string{"after the object"}},
		{"trailing junk", raw(`{} x`, nil), []string{"after the object"}},
		{"nul padding", raw("{}\x00", nil), []string{"after the object"}},
		{"bad utf8", raw("{\"\xff\":1}", nil), []string{"UTF-8"}},
		{"duplicate", raw(`{`+entry("a", "F32", "[1]", 0, 4)+`,`+entry("a", "F32", "[1]", 0, 4)+`}`, four), []string{`duplicate key "a"`}},
		{"entry not object", raw(`{"a":5}`, nil), []string{`"a"`, "not a JSON object"}},
		{"entry null", raw(`{"a":null}`, nil), []string{`"a"`, "not a JSON object"}},
		{"missing dtype", raw(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, four), []string{`"a"`, `missing "dtype"`}},
		{"missing shape", raw(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, four), []string{`"a"`, `missing "shape"`}},
		{"missing offsets", raw(`{"a":{"dtype":"F32","shape":[1]}}`, four), []string{`"a"`, `missing "data_offsets"`}},
		{"empty name", raw(`{`+entry("", "F32", "[1]", 0, 4)+`}`, four), []string{"empty tensor name"}},
		{"dtype I64", raw(`{`+entry("pos", "I64", "[1]", 0, 8)+`}`, make([]byte, 8)), []string{`"pos"`, `"I64"`}},
		{"dtype F8", raw(`{`+entry("q", "F8_E4M3", "[4]", 0, 4)+`}`, four), []string{`"q"`, `"F8_E4M3"`}},
		{"dtype lower", raw(`{`+entry("q", "bf16", "[2]", 0, 4)+`}`, four), []string{`"q"`, `"bf16"`}},
		{"dtype number", raw(`{"a":{"dtype":1,"shape":[1],"data_offsets":[0,4]}}`, four), []string{`"a"`, "dtype", "not a string"}},
		{"shape null", raw(`{"a":{"dtype":"F32","shape":null,"data_offsets":[0,4]}}`, four), []string{`"a"`, "shape", "not an array"}},
		{"shape fraction", raw(`{`+entry("a", "F32", "[1.0]", 0, 4)+`}`, four), []string{`"a"`, "not an integer"}},
		{"shape exponent", raw(`{`+entry("a", "F32", "[1e0]", 0, 4)+`}`, four), []string{`"a"`, "not an integer"}},
		{"shape quoted", raw(`{`+entry("a", "F32", `["1"]`, 0, 4)+`}`, four), []string{`"a"`, "not an integer"}},
		{"shape negative", raw(`{`+entry("a", "F32", "[-1,-4]", 0, 16)+`}`, make([]byte, 16)), []string{`"a"`, "negative dimension -1"}},
		{"shape out of range", raw(`{`+entry("a", "F32", "[99999999999999999999]", 0, 4)+`}`, four), []string{`"a"`, "out of range"}},
		// 2^32 * 2^32 * 4 wraps to 0 in 64 bits, which would match [0,0].
		{"shape overflow", raw(`{`+entry("a", "F32", "[4294967296,4294967296]", 0, 0)+`}`, nil), []string{`"a"`, "overflows"}},
		{"shape overflow by size", raw(`{`+entry("a", "BF16", "[4611686018427387904]", 0, 0)+`}`, nil), []string{`"a"`, "overflows"}},
		{"shape zero and huge", raw(`{`+entry("a", "F32", "[0,9223372036854775807]", 0, 0)+`}`, nil), []string{`"a"`, "overflows"}},
		{"offsets one", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4]}}`, four), []string{`"a"`, "want [begin, end]"}},
		{"offsets three", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,4]}}`, four), []string{`"a"`, "want [begin, end]"}},
		{"offsets object", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":{}}}`, four), []string{`"a"`, "not an array"}},
		{"offsets negative", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, four), []string{`"a"`, "negative offset"}},
		{"offsets huge", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551616]}}`, four), []string{`"a"`, "out of range"}},
		{"size mismatch", raw(`{`+entry("a", "F32", "[2,3]", 0, 8)+`}`, make([]byte, 24)), []string{`"a"`, "span 8 bytes", "needs 24"}},
		{"begin after end", raw(`{`+entry("a", "F32", "[1]", 8, 4)+`}`, make([]byte, 8)), []string{`"a"`, "begin is after end"}},
		{"end past data", raw(`{`+entry("a", "F32", "[2]", 0, 8)+`}`, four), []string{`"a"`, "past the 4-byte data section"}},
		{"end far past data", raw(`{`+entry("a", "F32", "[1]", 1<<40, 1<<40+4)+`}`, four), []string{`"a"`, "past the 4-byte data section"}},
		{"overlap", raw(`{`+entry("a", "F32", "[2]", 0, 8)+`,`+entry("b", "F32", "[2]", 4, 12)+`}`, make([]byte, 12)), []string{`"a"`, `"b"`, "overlaps"}},
		{"overlap same", raw(`{`+entry("a", "F32", "[1]", 0, 4)+`,`+entry("b", "F16", "[2]", 0, 4)+`}`, four), []string{`"a"`, `"b"`, "overlaps"}},
		// b lies wholly inside a.
		{"overlap nested", raw(`{`+entry("a", "F32", "[4]", 0, 16)+`,`+entry("b", "F32", "[1]", 4, 8)+`}`, make([]byte, 16)), []string{`"a"`, "overlaps"}},
		{"metadata not object", raw(`{"__metadata__":"pt"}`, nil), []string{"__metadata__", "not a JSON object"}},
		{"metadata number value", raw(`{"__metadata__":{"format":"pt","n":3}}`, nil), []string{"__metadata__", `"n"`, "not a string"}},
		{"metadata duplicate", raw(`{"__metadata__":{"a":"1","a":"2"}}`, nil), []string{"__metadata__", `duplicate key "a"`}},
		{"metadata twice", raw(`{"__metadata__":{},"__metadata__":{}}`, nil), []string{`duplicate key "__metadata__"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(c.b, "x.safetensors")
			if err == nil {
				t.Fatalf("no error; tensors %+v", f.Tensors)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "x.safetensors: ") {
				t.Errorf("error %q does not name the file first", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

// checkFile verifies the invariants Parse promises: every tensor's Data
// lies inside input, has the size its shape needs, overlaps no other
// non-empty tensor, and is found by name.
func checkFile(t testing.TB, f *File, input []byte) {
	t.Helper()
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(input)))
	hi := lo + uintptr(len(input))
	type span struct{ a, b uintptr }
	var spans []span
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		size := map[tensor.Type]int{tensor.F32: 4, tensor.F16: 2, tensor.BF16: 2}[ti.Type]
		if size == 0 {
			t.Fatalf("%s: type %v", ti.Name, ti.Type)
		}
		n := size
		for _, d := range ti.Shape {
			if d < 0 {
				t.Fatalf("%s: shape %v", ti.Name, ti.Shape)
			}
			n *= d
		}
		if len(ti.Data) != n || cap(ti.Data) != n {
			t.Fatalf("%s: %v %v has len %d cap %d", ti.Name, ti.Type, ti.Shape, len(ti.Data), cap(ti.Data))
		}
		if n > 0 {
			a := uintptr(unsafe.Pointer(unsafe.SliceData(ti.Data)))
			b := a + uintptr(n)
			if a < lo || b > hi {
				t.Fatalf("%s: data outside the input", ti.Name)
			}
			for _, s := range spans {
				if a < s.b && s.a < b {
					t.Fatalf("%s: data overlaps another tensor", ti.Name)
				}
			}
			spans = append(spans, span{a, b})
		}
		if got, ok := f.Tensor(ti.Name); !ok || got != ti {
			t.Fatalf("Tensor(%q) = %p, %v; want %p", ti.Name, got, ok, ti)
		}
	}
}

func TestOpenReal(t *testing.T) {
	cases := []struct {
		model      string
		count      int
		embed      string
		layerNames []string
	}{
		{"spark2_5-tiny", 66, "model.embedding.weight", []string{"model.layers.0.self_attn.q_k_v_proj.weight", "model.layers.0.self_attn.g_proj.weight"}},
		{"qwen3-tiny", 90, "model.embed_tokens.weight", []string{"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_norm.weight"}},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			path := testdata.Path(t, "llm", "tiny", "hf", c.model, "bf16", "model.safetensors")
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(f.Tensors) != c.count {
				t.Errorf("%d tensors, want %d", len(f.Tensors), c.count)
			}
			if f.Metadata["format"] != "pt" {
				t.Errorf("metadata %v", f.Metadata)
			}
			emb, ok := f.Tensor(c.embed)
			if !ok {
				t.Fatalf("no %s", c.embed)
			}
			if emb.Type != tensor.BF16 || fmt.Sprint(emb.Shape) != "[512 256]" || len(emb.Data) != 512*256*2 {
				t.Errorf("%s: %v %v %d bytes", c.embed, emb.Type, emb.Shape, len(emb.Data))
			}
			if &f.Tensors[0] != emb {
				t.Errorf("first tensor by offset is %s", f.Tensors[0].Name)
			}
			norm, ok := f.Tensor("model.norm.weight")
			if !ok || fmt.Sprint(norm.Shape) != "[256]" {
				t.Errorf("model.norm.weight: %v %v", norm, ok)
			}
			for _, n := range c.layerNames {
				if _, ok := f.Tensor(n); !ok {
					t.Errorf("no %s", n)
				}
			}
			// The reference writer leaves no gaps: the data section ends
			// where the last tensor does.
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			last := f.Tensors[len(f.Tensors)-1]
			end := uintptr(unsafe.Pointer(unsafe.SliceData(last.Data))) + uintptr(len(last.Data))
			start := uintptr(unsafe.Pointer(unsafe.SliceData(f.Tensors[0].Data)))
			hdr := st.Size() - int64(end-start)
			if hdr < 8 || hdr > 1<<20 {
				t.Errorf("tensors span %d of %d bytes", end-start, st.Size())
			}

			ck, err := OpenDir(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			names := ck.Names()
			if len(names) != c.count {
				t.Errorf("OpenDir: %d names", len(names))
			}
			for i := 1; i < len(names); i++ {
				if names[i-1] >= names[i] {
					t.Fatalf("names not sorted: %q, %q", names[i-1], names[i])
				}
			}
			ce, ok := ck.Tensor(c.embed)
			if !ok || !bytes.Equal(ce.Data, emb.Data) {
				t.Errorf("OpenDir: %s differs", c.embed)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.safetensors")
	if err := os.WriteFile(bad, raw(`{`+entry("w", "F32", "[2]", 0, 8)+`}`, make([]byte, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `"w"`) {
		t.Errorf("Open(bad) = %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing.safetensors")); err == nil || !strings.Contains(err.Error(), "missing.safetensors") {
		t.Errorf("Open(missing) = %v", err)
	}
	empty := filepath.Join(dir, "empty.safetensors")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("Open(empty) = %v", err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shardedDir writes two shards and an index naming all their tensors
// plus extra weight_map entries.
func shardedDir(t *testing.T, extra string) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "model-00001-of-00002.safetensors"),
		build(`{"format":"pt"}`, spec{"embed", "BF16", []int{4, 2}}, spec{"norm", "F32", []int{2}}))
	writeFile(t, filepath.Join(dir, "model-00002-of-00002.safetensors"),
		build("", spec{"head", "F16", []int{3, 2}}, spec{"unlisted", "F32", []int{1}}))
	writeFile(t, filepath.Join(dir, IndexFile), []byte(`{
  "metadata": {"total_size": 64},
  "weight_map": {
    "embed": "model-00001-of-00002.safetensors",
    "head": "model-00002-of-00002.safetensors",
    "norm": "model-00001-of-00002.safetensors"`+extra+`
  }
}`))
	return dir
}

func TestOpenDirSharded(t *testing.T) {
	dir := shardedDir(t, "")
	c, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := fmt.Sprint(c.Names()); got != "[embed head norm]" {
		t.Errorf("Names = %s", got)
	}
	if len(c.Files()) != 2 {
		t.Errorf("%d files, want one per shard", len(c.Files()))
	}
	for _, w := range []struct {
		name  string
		typ   tensor.Type
		shape string
		fill  byte
	}{{"embed", tensor.BF16, "[4 2]", 1}, {"norm", tensor.F32, "[2]", 2}, {"head", tensor.F16, "[3 2]", 1}} {
		ti, ok := c.Tensor(w.name)
		if !ok {
			t.Fatalf("no %s", w.name)
		}
		if ti.Type != w.typ || fmt.Sprint(ti.Shape) != w.shape || len(ti.Data) == 0 || !bytes.Equal(ti.Data, bytes.Repeat([]byte{w.fill}, len(ti.Data))) {
			t.Errorf("%s: %v %v % x", w.name, ti.Type, ti.Shape, ti.Data)
		}
	}
	// The index is authoritative: a tensor no weight_map entry names is
	// not part of the checkpoint.
	if _, ok := c.Tensor("unlisted"); ok {
		t.Error("unlisted tensor visible")
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

func TestOpenDirPrefersSingle(t *testing.T) {
	dir := shardedDir(t, `, "ghost": "gone.safetensors"`)
	writeFile(t, filepath.Join(dir, SingleFile), build("", spec{"only", "F32", []int{1}}))
	c, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := fmt.Sprint(c.Names()); got != "[only]" {
		t.Errorf("Names = %s", got)
	}
}

func TestOpenDirErrors(t *testing.T) {
	cases := []struct {
		name  string
		extra string
		want  []string
	}{
		{"missing shard", `, "ghost": "model-00003-of-00003.safetensors"`, []string{"model-00003-of-00003.safetensors", `"ghost"`}},
		{"tensor not in shard", `, "ghost": "model-00002-of-00002.safetensors"`, []string{"model-00002-of-00002.safetensors", `"ghost"`, "lacks"}},
		{"parent", `, "ghost": "../model.safetensors"`, []string{`"ghost"`, `"../model.safetensors"`, "not a plain file name"}},
		{"dotdot", `, "ghost": ".."`, []string{`"ghost"`, "not a plain file name"}},
		{"subdir", `, "ghost": "sub/x.safetensors"`, []string{`"ghost"`, "not a plain file name"}},
		{"backslash", `, "ghost": "sub\\x.safetensors"`, []string{`"ghost"`, "not a plain file name"}},
		{"absolute", `, "ghost": "/etc/passwd"`, []string{`"ghost"`, "not a plain file name"}},
		{"empty", `, "ghost": ""`, []string{`"ghost"`, "not a plain file name"}},
		{"not string", `, "ghost": 3`, []string{`"ghost"`, "not a string"}},
		{"duplicate", `, "head": "model-00002-of-00002.safetensors"`, []string{`duplicate key "head"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := shardedDir(t, c.extra)
			ck, err := OpenDir(dir)
			if err == nil {
				ck.Close()
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range append(c.want, IndexFile) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}

	t.Run("bad shard", func(t *testing.T) {
		dir := shardedDir(t, "")
		writeFile(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), raw(`{"head":{}}`, nil))
		_, err := OpenDir(dir)
		if err == nil || !strings.Contains(err.Error(), "model-00002-of-00002.safetensors") || !strings.Contains(err.Error(), `missing "dtype"`) {
			t.Errorf("err = %v", err)
		}
	})
	for name, index := range map[string]string{
		"no weight_map":    `{"metadata":{}}`,
		"empty weight_map": `{"weight_map":{}}`,
		"weight_map array": `{"weight_map":[]}`,
		"invalid json":     `{"weight_map":`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, IndexFile), []byte(index))
			_, err := OpenDir(dir)
			if err == nil || !strings.Contains(err.Error(), IndexFile) {
				t.Errorf("err = %v", err)
			}
		})
	}
	t.Run("bad single file", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, SingleFile), raw(`{"w":[]}`, nil))
		_, err := OpenDir(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, SingleFile)) || !strings.Contains(err.Error(), `"w"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("empty folder", func(t *testing.T) {
		dir := t.TempDir()
		_, err := OpenDir(dir)
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), IndexFile) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no folder", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nope")
		if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("err = %v", err)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add(build(`{"format":"pt"}`, spec{"w", "BF16", []int{3, 2}}, spec{"b", "F32", []int{3}}, spec{"s", "F16", []int{}}))
	f.Add(raw(`{`+entry("a", "F32", "[2]", 0, 8)+`,`+entry("e", "F16", "[4,0]", 4, 4)+`}`, make([]byte, 8)))
	f.Add(raw(`{`+entry("a", "F32", "[2]", 0, 8)+`,`+entry("b", "F32", "[2]", 4, 12)+`}`, make([]byte, 12)))
	f.Add(raw(`{`+entry("a", "F32", "[4294967296,4294967296]", 0, 0)+`}`, nil))
	f.Add(raw(`{`+entry("a", "F32", "[1]", 8, 4)+`}`, make([]byte, 8)))
	f.Add(raw(`{`+entry("pos", "I64", "[1]", 0, 8)+`}`, make([]byte, 8)))
	f.Add(raw(`{"__metadata__":{"a":"1"},"x":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}}  `, []byte{1, 2, 3}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b, "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		checkFile(t, file, b)
	})
}

// FuzzParseHeader fuzzes the JSON header with a consistent length prefix,
// which random mutations of FuzzParse's whole file rarely keep.
func FuzzParseHeader(f *testing.F) {
	f.Add(`{"__metadata__":{"format":"pt"},`+entry("w", "BF16", "[3,2]", 0, 12)+`,`+entry("b", "F32", "[3]", 12, 24)+`}`, 24)
	f.Add(`{`+entry("a", "F32", "[2]", 0, 8)+`,`+entry("e", "F16", "[4,0]", 4, 4)+`}`, 8)
	f.Add(`{`+entry("a", "F32", "[2]", 0, 8)+`,`+entry("b", "F32", "[2]", 4, 12)+`}`, 12)
	f.Add(`{`+entry("a", "F32", "[4294967296,4294967296]", 0, 0)+`}`, 0)
	f.Add(`{"a":{"dtype":"F16","shape":[],"data_offsets":[2,4]}}  `, 5)
	f.Fuzz(func(t *testing.T, header string, dataLen int) {
		if dataLen < 0 || dataLen > 1<<16 {
			return
		}
		b := raw(header, make([]byte, dataLen))
		file, err := Parse(b, "fuzz")
		if err != nil {
			return
		}
		checkFile(t, file, b)
	})
}
