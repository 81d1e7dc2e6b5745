package weightpath

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A seal holds only while the sealed file is unchanged: any write to it,
// even right after sealing and with the same bytes, a new time stamp, a
// different table checksum or a missing seal file all void it.
func TestSeal(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no inode or ctime here: caches are never sealed")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "cache.gguf")
	data := []byte("weights")
	write := func() {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write()
	mustSeal := func() {
		t.Helper()
		if err := seal(file, 42); err != nil {
			t.Fatal(err)
		}
		if !sealed(file, 42) {
			t.Fatal("a freshly sealed file is not sealed")
		}
	}
	mustSeal()
	if sealed(file, 43) {
		t.Error("sealed for another checksum table")
	}
	// The same bytes written again at once: the seal's ctime is past the
	// file's, so the rewrite gets a ctime of its own.
	write()
	if sealed(file, 42) {
		t.Error("still sealed after a rewrite")
	}
	mustSeal()
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	if sealed(file, 42) {
		t.Error("still sealed after a time stamp change")
	}
	mustSeal()
	unseal(file)
	if sealed(file, 42) {
		t.Error("sealed without a seal file")
	}
	mustSeal()
	if err := os.WriteFile(file+sealSuffix, []byte(sealHeader+"forged\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if sealed(file, 42) {
		t.Error("sealed by a seal file that describes another file")
	}
}
