package ledger

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residency returns mincore's vector for [addr, addr+n): one byte per
// page, bit 0 set when the page is resident. addr must be page-aligned.
// x/sys/unix has no Mincore wrapper, hence the raw system call; the
// ranges are mappings or heap memory, neither of which moves.
func residency(addr, n uintptr) ([]byte, error) {
	page := uintptr(os.Getpagesize())
	vec := make([]byte, (n+page-1)/page)
	if len(vec) == 0 {
		return vec, nil
	}
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, addr, n, uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if errno != 0 {
		return nil, errno
	}
	return vec, nil
}

// pagemapChunk bounds one pread of /proc/self/pagemap: 128k entries of 8
// bytes, 512 MiB of address space with 4 KiB pages. A 1.1 GB mapping is
// five reads.
const pagemapChunk = 1 << 20

// pagemap reads /proc/self/pagemap: one 64-bit entry per virtual page,
// bit 63 set when the page is in RAM and mapped into this process's page
// tables (what RSS counts), bit 62 when it is swapped out. An unprivileged
// reader sees the PFNs zeroed but both bits. One pagemap serves a whole
// report; it is not safe for concurrent use.
type pagemap struct {
	f   *os.File
	buf []byte
}

// pagemapPath is the file openPagemap reads; tests point it elsewhere to
// see the fallback to mincore.
var pagemapPath = "/proc/self/pagemap"

func openPagemap() (*pagemap, error) {
	f, err := os.Open(pagemapPath)
	if err != nil {
		return nil, err
	}
	return &pagemap{f: f}, nil
}

func (m *pagemap) close() {
	if m != nil {
		m.f.Close()
	}
}

// present returns a vector shaped like residency's for [addr, addr+n):
// one byte per page, bit 0 set when the page is in this process's RSS.
// A page in the page cache that this process never faulted in has no
// entry, and a swapped-out page (bit 62) is not resident: both stay
// clear. addr must be page-aligned.
func (m *pagemap) present(addr, n uintptr) ([]byte, error) {
	page := uintptr(os.Getpagesize())
	vec := make([]byte, (n+page-1)/page)
	if want := min(pagemapChunk, 8*len(vec)); len(m.buf) < want {
		m.buf = make([]byte, want)
	}
	off := int64(addr/page) * 8
	for i := 0; i < len(vec); {
		k := min(len(vec)-i, len(m.buf)/8)
		b := m.buf[:8*k]
		// ReadAt is pread, repeated until b is full.
		if _, err := m.f.ReadAt(b, off+int64(8*i)); err != nil {
			return nil, err
		}
		for j := range k {
			vec[i+j] = byte(binary.NativeEndian.Uint64(b[8*j:]) >> 63)
		}
		i += k
	}
	return vec, nil
}

// readProc reads the mappings from smaps, and RSS and Pss as their sums.
// The executable's mappings (and the anonymous one right after them, its
// bss) become the program line, the main thread's stack and the kernel's
// vDSO pages another; the remaining anonymous memory is the Go runtime's,
// split into lines by runtimeEntries.
//
// RSS is summed from the same reading, not taken from smaps_rollup: the
// runtime's scavenger returns memory to the OS in small steps for a while
// after a GC, so two files read a moment apart can disagree by megabytes,
// and lines measured from one against RSS from the other then claimed
// more than RSS. One reading keeps the lines and RSS of the same moment.
func readProc() *procInfo {
	p := readSmaps()
	if !p.ok {
		p.source = "unavailable: /proc/self/smaps could not be read"
		return p
	}
	p.source = "/proc/self/smaps"
	return p
}

// readSmaps reads the mappings; ok stays false when smaps is unreadable.
func readSmaps() *procInfo {
	p := &procInfo{}
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return p
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	var (
		prog, libs, special Entry
		progEnd             uintptr
		cur                 *region
	)
	prog = Entry{Name: "program text and data (" + filepath.Base(exe) + ")", Category: Program}
	libs = Entry{Name: "shared libraries (cgo builds)", Category: Program}
	special = Entry{Name: "main thread stack and vDSO", Category: Program}
	flush := func() {
		if cur == nil {
			return
		}
		g := *cur
		cur = nil
		size := int64(g.end - g.start)
		switch {
		case g.path != "" && g.path == exe, g.path == "" && g.start == progEnd && progEnd != 0:
			// The bss follows the last file mapping of the executable.
			g.program = true
			prog.Bytes += size
			prog.Resident += g.rss
			if g.path == "" {
				progEnd = 0 // one bss, not whatever happens to follow it
			}
		case sharedLib(g.path):
			// A build with cgo links libc; its text and data are the
			// program's too.
			g.program = true
			libs.Bytes += size
			libs.Resident += g.rss
		case g.path == "[stack]" || g.path == "[vdso]" || g.path == "[vvar]" || g.path == "[vvar_vclock]" || g.path == "[vsyscall]":
			g.program = true
			special.Bytes += size
			special.Resident += g.rss
		case g.path == "" || g.path == "[heap]" || strings.HasPrefix(g.path, "[anon"):
			p.anonRSS += g.rss
			g.path = ""
		}
		if n := len(p.regions); n > 0 && g.path != "" && g.path[0] != '[' && p.regions[n-1].path == g.path && p.regions[n-1].end == g.start {
			p.regions[n-1].end = g.end
			p.regions[n-1].rss += g.rss
			return
		}
		p.regions = append(p.regions, g)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		ln := sc.Text()
		if g, ok := header(ln); ok {
			flush()
			cur = &g
			if g.path == exe {
				progEnd = g.end
			}
			continue
		}
		if cur != nil {
			if v, ok := kB(ln, "Rss:"); ok {
				cur.rss = v
				p.rss += v
			} else if v, ok := kB(ln, "Pss:"); ok {
				p.pss += v
			}
		}
	}
	flush()
	p.ok = true
	p.program = []Entry{prog, special}
	if libs.Bytes > 0 {
		p.program = append(p.program, libs)
	}
	return p
}

// sharedLib reports whether path names a shared object (libc.so.6,
// ld-linux-x86-64.so.2).
func sharedLib(path string) bool {
	b := filepath.Base(path)
	return strings.HasSuffix(b, ".so") || strings.Contains(b, ".so.")
}

// header parses a mapping's first line: "start-end perms offset dev inode
// [path]"; the path may hold spaces and ends in " (deleted)" once the file
// is gone.
func header(ln string) (region, bool) {
	f := strings.SplitN(ln, " ", 6)
	if len(f) < 5 || strings.HasSuffix(f[0], ":") {
		return region{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return region{}, false
	}
	a, err1 := strconv.ParseUint(lo, 16, 64)
	b, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil {
		return region{}, false
	}
	g := region{start: uintptr(a), end: uintptr(b)}
	if len(f) == 6 {
		g.path = strings.TrimSuffix(strings.TrimSpace(f[5]), " (deleted)")
	}
	return g, true
}

// kB parses a "Key:   123 kB" line into bytes.
func kB(ln, key string) (int64, bool) {
	rest, ok := strings.CutPrefix(ln, key)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
	if err != nil {
		return 0, false
	}
	return v << 10, true
}
