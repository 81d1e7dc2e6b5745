package mmap

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const smapsSample = `55d0c0a00000-55d0c0c00000 r--p 00000000 fd:00 1311 /usr/bin/siskin
Size:               2048 kB
Rss:                1024 kB
FilePmdMapped:         0 kB
7f0000000000-7f0040000000 r--s 00000000 fd:00 4242 /models/my model.gguf
Size:            1048576 kB
Rss:              524288 kB
Pss:              524288 kB
FilePmdMapped:    393216 kB
VmFlags: rd sh mr mw me ms sd
7f0040000000-7f0040200000 rw-p 00000000 00:00 0 
Rss:                2048 kB
AnonHugePages:      2048 kB
7f0040200000-7f0080000000 r--s 40000000 fd:00 4242 /models/my model.gguf
Rss:               10240 kB
FilePmdMapped:      8192 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                  16 kB
`

func TestParseSmaps(t *testing.T) {
	got, err := parseSmaps(strings.NewReader(smapsSample))
	if err != nil {
		t.Fatal(err)
	}
	want := []FilePages{
		{"/usr/bin/siskin", 1024 << 10, 0},
		{"/models/my model.gguf", (524288 + 10240) << 10, (393216 + 8192) << 10},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("file %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestMappedFiles maps a file and finds it in this process's smaps.
func TestMappedFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/smaps is Linux's")
	}
	path := filepath.Join(t.TempDir(), "w.bin")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var sum byte
	for i := 0; i < len(m.Data()); i += 4096 {
		sum += m.Data()[i]
	}
	files, err := MappedFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == path {
			if f.Resident != 1<<20 || f.Huge > f.Resident {
				t.Errorf("%s: %+v, want 1 MiB resident (sum %d)", path, f, sum)
			}
			return
		}
	}
	t.Errorf("%s not among the mapped files %+v", path, files)
}
