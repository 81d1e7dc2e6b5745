package ledger

import (
	"bufio"
	"bytes"
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

// readProc reads RSS and Pss from smaps_rollup and the mappings from
// smaps. The executable's mappings (and the anonymous one right after
// them, its bss) become the program line, the main thread's stack and the
// kernel's vDSO pages another; the remaining anonymous memory is the Go
// runtime's, split into lines by runtimeEntries.
//
// The two files are read at different moments, and the runtime's
// scavenger may return megabytes to the OS in between (right after a GC
// it often does): smaps_rollup is read before and after smaps, and the
// reading is repeated until both agree, so that RSS and the mappings
// describe the same moment.
func readProc() *procInfo {
	var p *procInfo
	for range 8 {
		before, err := readRollup()
		if err != nil {
			return &procInfo{source: "unavailable: " + err.Error()}
		}
		p = readSmaps()
		after, err := readRollup()
		if err != nil {
			return &procInfo{source: "unavailable: " + err.Error()}
		}
		p.rss, p.pss, p.source = after.rss, after.pss, "/proc/self/smaps_rollup"
		if before.rss == after.rss {
			break
		}
	}
	return p
}

func readRollup() (*procInfo, error) {
	roll, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return nil, err
	}
	p := &procInfo{}
	for _, ln := range strings.Split(string(roll), "\n") {
		if v, ok := kB(ln, "Rss:"); ok {
			p.rss = v
		} else if v, ok := kB(ln, "Pss:"); ok {
			p.pss = v
		}
	}
	return p, nil
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
