package weightpath

import (
	"bytes"
	"hash/crc32"
	"os"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/tensor"
)

// cacheLike builds a file laid out as write lays out a cache file: the
// tensors, then their checksum table.
func cacheLike(t *testing.T, sizes ...int) []byte {
	t.Helper()
	b := gguf.NewBuilder()
	b.Add("general.alignment", uint32(alignment))
	b.Add(keyVersion, "test")
	var data [][]byte
	chunks := 1
	for i, n := range sizes {
		d := make([]byte, n)
		for j := range d {
			d[j] = byte(i*131 + j*7 + j>>9)
		}
		b.AddTensor(string(rune('a'+i)), tensor.I8, []uint64{uint64(n)}, d)
		data = append(data, d)
		chunks += chunkCount(n)
	}
	table := make([]byte, 4*chunks)
	b.AddTensor(checksumTensor, tensor.I32, []uint64{uint64(chunks)}, table)
	checksums(b, data, table)
	return b.Bytes()
}

func verifyBytes(b []byte) string {
	f, err := gguf.Parse(b, "cache")
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return verify(f, nil).reason
}

// Every single-byte change anywhere in a small file, and a truncated or
// extended one, fails the check; the intact file passes.
func TestVerifyEveryByte(t *testing.T) {
	orig := cacheLike(t, 0, 1, 63, 64, 65, 700)
	if r := verifyBytes(orig); r != "" {
		t.Fatalf("intact file refused: %s", r)
	}
	for i := range orig {
		b := bytes.Clone(orig)
		b[i] ^= 0x80
		if verifyBytes(b) == "" {
			t.Fatalf("byte %d of %d changed: passed", i, len(orig))
		}
	}
	if r := verifyBytes(orig[:len(orig)-1]); r == "" {
		t.Error("truncated file passed")
	}
	if r := verifyBytes(append(bytes.Clone(orig), make([]byte, alignment)...)); r == "" {
		t.Error("extended file passed")
	}
}

// A tensor of several chunks is checked chunk by chunk, the last one
// with its padding; a change is reported with its tensor and range.
func TestVerifyChunks(t *testing.T) {
	orig := cacheLike(t, 2*chunkBytes+100, 5)
	f, err := gguf.Parse(orig, "cache")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Tensors[2].Data) / 4; n != 1+3+1 {
		t.Fatalf("%d checksums, want 5", n)
	}
	if r := verify(f, nil).reason; r != "" {
		t.Fatalf("intact file refused: %s", r)
	}
	a := f.DataOffset + int(f.Tensors[0].Offset)
	for _, off := range []int{a, a + chunkBytes - 1, a + chunkBytes, a + 2*chunkBytes + 99, a + 2*chunkBytes + 100} {
		b := bytes.Clone(orig)
		b[off] ^= 1
		if r := verifyBytes(b); !strings.HasPrefix(r, "corrupt: checksum mismatch in a (file bytes") {
			t.Errorf("byte %d changed: %q", off, r)
		}
	}
}

// sum is the CRC-32C of any length.
func TestSum(t *testing.T) {
	b := make([]byte, 300<<10)
	for i := range b {
		b[i] = byte(i*37 + i>>11)
	}
	for _, n := range []int{0, 1, 63, 4095, 4096, 4097, 65536, 65537, 70001, len(b)} {
		if got, want := sum(b[:n]), crc32.Checksum(b[:n], castagnoli); got != want {
			t.Errorf("%d bytes: %08x, want %08x", n, got, want)
		}
	}
}

// BenchmarkVerify maps the cache file $SISKIN_BENCH_CACHE_FILE and checks
// it whole, as a start does (the page cache warm after the first pass).
func BenchmarkVerify(b *testing.B) {
	file := os.Getenv("SISKIN_BENCH_CACHE_FILE")
	if file == "" {
		b.Skip("set SISKIN_BENCH_CACHE_FILE to a weight cache file")
	}
	for b.Loop() {
		f, err := gguf.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		if r := verify(f, nil).reason; r != "" {
			b.Fatal(r)
		}
		b.SetBytes(int64(f.FileBytes()))
		f.Close()
	}
}
