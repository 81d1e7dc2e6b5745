package gguf

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/tensor"
)

func TestRealFiles(t *testing.T) {
	cases := []struct {
		path    []string
		arch    string
		tensors int
	}{
		{[]string{"llm", "stories260K-gguf", "stories260K.gguf"}, "llama", 48},
		{[]string{"llm", "tiny", "models", "spark2_5-tiny-q4_k_m.gguf"}, "spark2_5", 66},
		{[]string{"llm", "tiny", "models", "qwen3-tiny-f32.gguf"}, "qwen3", -1},
	}
	for _, c := range cases {
		f, err := Open(testdata.Path(t, c.path...))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if a, _ := f.String("general.architecture"); a != c.arch {
			t.Errorf("%s: architecture %q, want %q", c.path, a, c.arch)
		}
		if c.tensors >= 0 && len(f.Tensors) != c.tensors {
			t.Errorf("%s: %d tensors, want %d", c.path, len(f.Tensors), c.tensors)
		}
		for _, ti := range f.Tensors {
			n, err := tensor.RowBytes(ti.Type, int(ti.Elements()))
			if err != nil || n != len(ti.Data) {
				t.Errorf("%s: %s: %d bytes, want %d (%v)", c.path, ti.Name, len(ti.Data), n, err)
			}
		}
	}
	f, err := Open(testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_k_m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pat, ok := f.Bools("spark2_5.attention.sliding_window_pattern")
	if !ok || len(pat) != 8 || !pat[0] || pat[3] {
		t.Errorf("sliding_window_pattern = %v", pat)
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	if len(toks) != 512 || toks[0] != "<|bos|>" {
		t.Errorf("tokens: %d, first %q", len(toks), toks[:1])
	}
	if n, _ := f.Uint("spark2_5.block_count"); n != 8 {
		t.Errorf("block_count %d", n)
	}
	if eps, _ := f.Float("spark2_5.attention.layer_norm_rms_epsilon"); eps < 9e-7 || eps > 1.1e-6 {
		t.Errorf("eps %g", eps)
	}
	qkv, ok := f.Tensor("blk.0.attn_qkv.weight")
	if !ok || qkv.Type != tensor.Q6_K || qkv.Dims[0] != 256 || qkv.Dims[1] != 512 {
		t.Errorf("attn_qkv: %+v", qkv)
	}
}

func validFile() *Builder {
	b := NewBuilder()
	b.Add("general.architecture", "llama")
	b.Add("general.name", "test")
	b.Add("some.ints", []int32{1, -2, 3})
	b.Add("some.flag", true)
	b.Add("some.float", float32(0.5))
	b.Add("some.strings", []string{"a", "bc"})
	b.AddTensor("a", tensor.F32, []uint64{4, 2}, make([]byte, 32))
	b.AddTensor("b", tensor.Q8_0, []uint64{32}, make([]byte, 34))
	return b
}

// Version 2 has the same layout as version 3 (v3 only added big-endian
// files, which carry the version byte-swapped and are refused as v3<<24).
func TestVersion2(t *testing.T) {
	data := validFile().Bytes()
	copy(data[4:], u32le(2))
	f, err := Parse(data, "v2.gguf")
	if err != nil || f.Version != 2 || len(f.Tensors) != 2 {
		t.Fatalf("v2: %v", err)
	}
}

func TestBuilderRoundTrip(t *testing.T) {
	f, err := Parse(validFile().Bytes(), "mem.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Int32s("some.ints"); len(v) != 3 || v[1] != -2 {
		t.Errorf("ints %v", v)
	}
	if v, _ := f.Float("some.float"); v != 0.5 {
		t.Errorf("float %v", v)
	}
	if b, _ := f.Bool("some.flag"); !b {
		t.Error("flag")
	}
	if ti, ok := f.Tensor("b"); !ok || ti.Type != tensor.Q8_0 || len(ti.Data) != 34 {
		t.Errorf("tensor b %+v", ti)
	}
}

// patchAfter returns the valid file with a patch applied at the offset of
// the last occurrence of marker plus delta.
func patchAfter(t *testing.T, data []byte, marker string, delta int, patch []byte) []byte {
	t.Helper()
	i := strings.LastIndex(string(data), marker)
	if i < 0 {
		t.Fatalf("marker %q not found", marker)
	}
	out := append([]byte(nil), data...)
	copy(out[i+len(marker)+delta:], patch)
	return out
}

func u64le(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func u32le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func TestHostileFiles(t *testing.T) {
	good := validFile().Bytes()
	// Offsets of the tensor info for "a": name, n_dims, dims, type, offset.
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"bad magic", append([]byte("GGML"), good[4:]...), "bad magic"},
		{"version 1", patchAfter(t, good, "GGUF", 0, u32le(1)), "version 1"},
		{"huge kv count", patchAfter(t, good, "GGUF", 12, u64le(1<<60)), "metadata count"},
		{"huge tensor count", patchAfter(t, good, "GGUF", 4, u64le(1<<40)), "tensor count"},
		{"huge string", patchAfter(t, good, "general.architecture", 4, u64le(1<<62)), "general.architecture"},
		{"huge array", patchAfter(t, good, "some.ints", 8, u64le(1<<61)), "some.ints"},
		{"unknown value type", patchAfter(t, good, "some.flag", 0, u32le(99)), "unknown value type"},
		{"bad bool", patchAfter(t, good, "some.flag", 4, []byte{7}), "not 0 or 1"},
		{"too many dims", patchAfter(t, good, "\x01\x00\x00\x00\x00\x00\x00\x00a", 0, u32le(9)), "dimensions"},
		{"unknown tensor type", patchAfter(t, good, "\x01\x00\x00\x00\x00\x00\x00\x00a", 4+16, u32le(1000)), "unknown tensor type"},
		{"offset past end", patchAfter(t, good, "\x01\x00\x00\x00\x00\x00\x00\x00a", 4+16+4, u64le(1<<20)), "past the end"},
		{"misaligned", patchAfter(t, good, "\x01\x00\x00\x00\x00\x00\x00\x00a", 4+16+4, u64le(3)), "not aligned"},
		{"overlap", patchAfter(t, good, "\x01\x00\x00\x00\x00\x00\x00\x00b", 4+8+4, u64le(0)), "overlaps"},
		{"dim overflow", patchAfter(t, good, "\x01\x00\x00\x00\x00\x00\x00\x00a", 4, u64le(1<<62)), "a:"},
		{"ragged row", patchAfter(t, good, "\x01\x00\x00\x00\x00\x00\x00\x00b", 4, u64le(33)), "block size"},
		{"truncated", good[:len(good)-40], "past the end"},
	}
	for _, c := range cases {
		_, err := Parse(c.data, "evil.gguf")
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), "evil.gguf") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q should name the file and say %q", c.name, err, c.want)
		}
	}
	// Every prefix of a valid file is refused without a panic.
	for n := 0; n < len(good); n++ {
		// The last tensor's 34 bytes end 30 bytes of padding before the end.
		if _, err := Parse(good[:n], "cut.gguf"); err == nil && n < len(good)-30 {
			t.Errorf("prefix of %d bytes accepted", n)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("missing file accepted")
	}
	p := filepath.Join(t.TempDir(), "x.gguf")
	os.WriteFile(p, []byte("not a gguf file at all"), 0o644)
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("error %v should name %s", err, p)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(validFile().Bytes())
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	b := NewBuilder()
	b.Add("nested", []string{"x"})
	b.AddTensor("t", tensor.Q4_K, []uint64{256, 1}, make([]byte, 144))
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "fuzz.gguf")
		if err != nil {
			return
		}
		for _, ti := range file.Tensors {
			n, err := tensor.RowBytes(ti.Type, int(ti.Elements()))
			if err != nil || n != len(ti.Data) {
				t.Fatalf("%s: %d bytes for %v", ti.Name, len(ti.Data), ti.Dims)
			}
		}
	})
}
