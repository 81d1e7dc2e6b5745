package ledger

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

var pageSize = os.Getpagesize()

// sink keeps the reads that fault pages in from being optimized away.
var sink byte

// anonMap maps n fresh pages that no huge page can back, so residency is
// exactly the pages written.
func anonMap(t *testing.T, pages int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, pages*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	_ = unix.Madvise(b, unix.MADV_NOHUGEPAGE)
	return b
}

func TestMincoreAnonymous(t *testing.T) {
	b := anonMap(t, 64)
	l := New()
	l.AddMapped("anon", Scratch, b)
	resident := func() int64 {
		e, ok := l.Report().Find("anon")
		if !ok || e.Bytes != int64(len(b)) {
			t.Fatalf("anon = %+v, %v", e, ok)
		}
		return e.Resident
	}
	if r := resident(); r != 0 {
		t.Errorf("fresh mapping: %d bytes resident, want 0", r)
	}
	for p := 0; p < 64; p += 2 {
		b[p*pageSize] = 1
	}
	if r := resident(); r != int64(32*pageSize) {
		t.Errorf("after touching every other page: %d bytes resident, want %d", r, 32*pageSize)
	}
	if got := Resident(b); got != int64(32*pageSize) {
		t.Errorf("Resident = %d, want %d", got, 32*pageSize)
	}
	if err := unix.Madvise(b, unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if r := resident(); r != 0 {
		t.Errorf("after MADV_DONTNEED: %d bytes resident, want 0", r)
	}
}

// Two lines sharing a page (tensors that meet mid-page) count it once,
// and a page partly in a heap buffer counts only the part it holds.
func TestSharedPageCountsOnce(t *testing.T) {
	b := anonMap(t, 4)
	for p := range 4 {
		b[p*pageSize] = 1
	}
	half := pageSize + pageSize/2
	l := New()
	l.AddMapped("first", Scratch, b[:half])
	l.AddMapped("second", Scratch, b[half:])
	r := l.Report()
	f, _ := r.Find("first")
	s, _ := r.Find("second")
	if f.Resident+s.Resident != int64(len(b)) {
		t.Errorf("first %d + second %d resident, want %d in all", f.Resident, s.Resident, len(b))
	}
	if got := Resident(b[half:]); got != int64(len(b)-half) {
		t.Errorf("Resident of a buffer starting mid-page = %d, want %d", got, len(b)-half)
	}
}

// A file mapped fresh, with its pages dropped from the page cache, is not
// resident; the pages read become resident, and the part of the mapping
// no line covers gets its own line.
func TestMincoreFile(t *testing.T) {
	const pages = 64
	p := writeFile(t, pages*pageSize)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	b, err := unix.Mmap(int(f.Fd()), 0, pages*pageSize, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	// No read-ahead: a fault reads the page it needs and no more.
	_ = unix.Madvise(b, unix.MADV_RANDOM)
	q := pages / 4
	l := New()
	l.AddMapped("head", WeightsMapped, b[:q*pageSize])
	l.AddMapped("tail", WeightsMapped, b[3*q*pageSize:])
	r := l.Report()
	h, _ := r.Find("head")
	if h.Resident != 0 {
		t.Skipf("the file system keeps dropped pages cached (%d bytes resident); cannot test a cold map", h.Resident)
	}
	for i := 0; i < q; i++ {
		sink += b[i*pageSize]
	}
	r = l.Report()
	h, _ = r.Find("head")
	tl, _ := r.Find("tail")
	if h.Resident != int64(q*pageSize) {
		t.Errorf("head after reading it: %d bytes resident, want %d", h.Resident, q*pageSize)
	}
	if tl.Resident >= int64(q*pageSize) {
		t.Errorf("tail never read but fully resident (%d bytes)", tl.Resident)
	}
	rest, ok := r.Find(filepath.Base(p) + ": header and padding (mapped)")
	if !ok || rest.Bytes != int64(2*q*pageSize) {
		t.Errorf("rest of the mapping: %+v, %v", rest, ok)
	}
	t.Logf("head %d, tail %d, rest %d bytes resident", h.Resident, tl.Resident, rest.Resident)
}

func TestHeaderParse(t *testing.T) {
	g, ok := header("7f05e0600000-7f05e0984000 r--s 00000000 fe:00 5308632                    /models/my model.gguf (deleted)")
	if !ok || g.start != 0x7f05e0600000 || g.end != 0x7f05e0984000 || g.path != "/models/my model.gguf" {
		t.Errorf("%+v %v", g, ok)
	}
	g, ok = header("2a4731c00000-2a4732800000 rw-p 00000000 00:00 0 ")
	if !ok || g.path != "" {
		t.Errorf("anonymous: %+v %v", g, ok)
	}
	if _, ok := header("Rss:                 4 kB"); ok {
		t.Error("a field line parsed as a header")
	}
	if v, ok := kB("Rss:                 4 kB", "Rss:"); !ok || v != 4096 {
		t.Errorf("kB = %d, %v", v, ok)
	}
}
