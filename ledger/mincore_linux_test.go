package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

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

// mapAligned maps the file at path read-only and shared at an address
// aligned to 2 MiB, so that the kernel's fault-around (which maps the
// cached neighbours of a faulting page, within an aligned window) cannot
// reach past a boundary that is a multiple of its window.
func mapAligned(t *testing.T, path string, n int) []byte {
	t.Helper()
	const align = 2 << 20
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := unix.Mmap(-1, 0, n+align, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(res) }) // the file mapping lies inside
	skip := -int(addrOf(res)) & (align - 1)
	at := unsafe.Add(unsafe.Pointer(unsafe.SliceData(res)), skip)
	p, err := unix.MmapPtr(int(f.Fd()), 0, at, uintptr(n), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		t.Fatal(err)
	}
	return unsafe.Slice((*byte)(p), n)
}

// A file wholly in the page cache but only half touched through the
// mapping is half resident: the lines count what is in this process's
// RSS, and the untouched half is reported as page cache only, outside
// every line.
func TestPagemapHalfTouched(t *testing.T) {
	const pages = 256
	p := writeFile(t, pages*pageSize)
	smallFolios(t, p)
	if _, err := os.ReadFile(p); err != nil { // into the page cache
		t.Fatal(err)
	}
	b := mapAligned(t, p, pages*pageSize)
	half := pages / 2 * pageSize
	cached := func() int64 {
		vec, err := residency(addrOf(b), uintptr(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		return int64(countResident(vec) * pageSize)
	}
	inCache := cached()
	l := New()
	l.AddMapped("touched", WeightsMapped, b[:half])
	l.AddMapped("untouched", WeightsMapped, b[half:])
	r := l.Report()
	if e, _ := r.Find("touched"); e.Resident != 0 {
		t.Errorf("before any read: %d bytes resident, want 0 (%d bytes in the page cache)", e.Resident, inCache)
	}
	for i := 0; i < half; i += pageSize {
		sink += b[i]
	}
	r = l.Report()
	if strings.Contains(r.Source, "mincore") {
		t.Fatalf("fell back to mincore: %s", r.Source)
	}
	h, _ := r.Find("touched")
	u, _ := r.Find("untouched")
	if h.Resident != int64(half) {
		t.Errorf("touched half: %d bytes resident, want %d", h.Resident, half)
	}
	// The lines hold exactly what smaps counts in the mapping's Rss.
	sm := readSmaps()
	if i := sm.find(addrOf(b)); i < 0 {
		t.Errorf("no smaps region holds the mapping")
	} else if rss := sm.regions[i].rss; h.Resident+u.Resident != rss {
		t.Errorf("lines hold %d bytes, smaps Rss of the mapping %d", h.Resident+u.Resident, rss)
	} else if u.Resident > int64(2*pageSize) {
		t.Skipf("the kernel mapped %d untouched bytes with the touched ones (large folios kept in the page cache)", u.Resident)
	}
	if u.Resident > int64(2*pageSize) {
		t.Errorf("untouched half: %d bytes resident, want at most 2 pages", u.Resident)
	}
	// What mincore sees beyond the touched pages is reported apart.
	inCache = cached()
	if want := inCache - h.Resident - u.Resident; r.PageCacheOnlyBytes < want {
		t.Errorf("page cache only %d bytes, want at least %d (%d in the page cache)", r.PageCacheOnlyBytes, want, inCache)
	}
	t.Logf("page cache %d, touched %d, untouched %d, page cache only %d bytes", inCache, h.Resident, u.Resident, r.PageCacheOnlyBytes)
	if r.RSSBytes > 0 && r.UnattributedBytes < 0 {
		t.Errorf("lines claim %d bytes beyond RSS", -r.UnattributedBytes)
	}
}

// Without pagemap the mapped lines fall back to mincore, and the report
// says so.
func TestPagemapFallback(t *testing.T) {
	defer func(p string) { pagemapPath = p }(pagemapPath)
	pagemapPath = filepath.Join(t.TempDir(), "no-pagemap")
	b := anonMap(t, 8)
	for p := 0; p < 8; p += 2 {
		b[p*pageSize] = 1
	}
	l := New()
	l.AddMapped("anon", Scratch, b)
	r := l.Report()
	if e, _ := r.Find("anon"); e.Resident != int64(4*pageSize) {
		t.Errorf("mincore fallback: %d bytes resident, want %d", e.Resident, 4*pageSize)
	}
	if !strings.Contains(r.Source, "mincore") {
		t.Errorf("source %q does not name the fallback", r.Source)
	}
	if got := Resident(b); got != int64(4*pageSize) {
		t.Errorf("Resident = %d, want %d", got, 4*pageSize)
	}
}

// smallFolios drops the file's pages from the page cache and reads them
// back without read-ahead, so that the cache holds them in single pages:
// a fault maps a large folio whole on recent kernels (all of it then in
// RSS), which would blur which pages a test touched.
func smallFolios(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_ = f.Sync()
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
	buf := make([]byte, pageSize)
	for off := int64(0); ; off += int64(pageSize) {
		if n, _ := f.ReadAt(buf, off); n < len(buf) {
			break
		}
	}
}
