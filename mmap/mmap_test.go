package mmap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/siskin-ml/siskin/ledger"
	"github.com/siskin-ml/siskin/mmap"
)

// Release drops a range's whole pages from the resident set, leaves the
// bytes readable as they were, and ignores bytes outside the mapping.
func TestRelease(t *testing.T) {
	page := os.Getpagesize()
	want := make([]byte, 64*page)
	for i := range want {
		want[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := mmap.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	data := m.Data()
	var sum byte
	for i := 0; i < len(data); i += page {
		sum += data[i]
	}
	runtime.KeepAlive(sum)
	m.Release(make([]byte, page)) // not in the mapping
	// Half a page in from each end: the 30 whole pages between go.
	r := data[8*page+page/2 : 39*page+page/2]
	m.Release(r)
	if runtime.GOOS == "linux" {
		if got := ledger.Resident(data[9*page : 39*page : 39*page]); got != 0 {
			t.Errorf("%d bytes of released pages resident", got)
		}
		if got := ledger.Resident(data[: 8*page : 8*page]); got != int64(8*page) {
			t.Errorf("%d of %d bytes before the range resident", got, 8*page)
		}
	}
	if !bytes.Equal(data, want) {
		t.Error("released bytes read back differently")
	}
}
