package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMapHugeScattered: a model mapped by Open and first touched out of
// file order (as two threads on their own rows do) is read in with 2 MiB
// pages, where the filesystem has large folios at all.
func TestMapHugeScattered(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("transparent huge pages are off")
	}
	path := filepath.Join(t.TempDir(), "w.bin")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 32<<20/7), 0o644); err != nil {
		t.Fatal(err)
	}
	// Control: read in through a mapping that asks for 2 MiB folios itself.
	evict(t, path)
	if !mapsHuge(t, path) {
		t.Skipf("%s: not read in as 2 MiB pages even when asked (a filesystem without large folios)", path)
	}
	evict(t, path)
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d := m.Data()
	var sum byte
	for i := 0; i < len(d); i += 3<<20 + 4096 { // out of order first
		sum += d[i]
	}
	for i := 0; i < len(d); i += 4096 {
		sum += d[i]
	}
	if p := pagesOf(t, path); p.Huge == 0 {
		t.Errorf("%s: %+v: read back with none of it in 2 MiB pages after an out-of-order first touch (sum %d)", path, p, sum)
	}
}

// evict drops path's clean pages from the page cache.
func evict(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Skipf("fadvise: %v", err)
	}
}

var sink byte

// mapsHuge maps path with MADV_HUGEPAGE (not through Open), touches every
// page in order, and says whether any of it is mapped in 2 MiB pages.
func mapsHuge(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	d, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(d)
	if err := unix.Madvise(d, unix.MADV_HUGEPAGE); err != nil {
		t.Skipf("madvise: %v", err)
	}
	var sum byte
	for i := 0; i < len(d); i += 4096 {
		sum += d[i]
	}
	sink += sum // keeps the reads
	return pagesOf(t, path).Huge > 0
}

func pagesOf(t *testing.T, path string) FilePages {
	t.Helper()
	files, err := MappedFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("%s is not mapped", path)
	return FilePages{}
}
