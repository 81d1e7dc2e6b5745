package ledger

import (
	"os"
	"path/filepath"
	"sort"
	"unsafe"
)

// region is a stretch of the address space from /proc/self/smaps: one
// mapping, or several adjacent ones of the same file merged (an madvise
// can split one mmap into several).
type region struct {
	start, end uintptr
	path       string // "" for anonymous memory
	rss        int64
	program    bool // the executable's own mapping, reported with the program
}

func (g *region) file() bool { return g.path != "" && g.path[0] != '[' }

// procInfo is what the kernel says about the process.
type procInfo struct {
	rss, pss int64
	source   string
	ok       bool     // smaps was read: regions, anonRSS and program are valid
	regions  []region // sorted by start
	anonRSS  int64    // resident anonymous memory: the Go runtime's, in a program without cgo
	program  []Entry  // the executable's mappings, the main thread's stack, the vDSO
}

// find returns the region holding addr, or -1.
func (p *procInfo) find(addr uintptr) int {
	i := sort.Search(len(p.regions), func(i int) bool { return p.regions[i].end > addr })
	if i < len(p.regions) && p.regions[i].start <= addr {
		return i
	}
	return -1
}

func addrOf(d []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(d))) }

// mappedResult is what measureMapped finds.
type mappedResult struct {
	entries []Entry
	// inAnon is the resident bytes of lines that lie in anonymous memory,
	// already part of anonRSS.
	inAnon int64
	// pcOnly is what mincore sees of the file regions in the page cache
	// beyond what is in this process's RSS: information, never attributed.
	pcOnly int64
	// unseen lists the file mappings no line covers.
	unseen []Mapping
	// note says how residency was measured when /proc/self/pagemap could
	// not serve every range ("" when it did).
	note string
}

// residencyMeter measures which pages of a range are resident: from
// /proc/self/pagemap, which says what is mapped into this process (what
// RSS counts), or, where pagemap cannot be read, from mincore, which says
// what is in the page cache and so can exceed RSS for a file mapping.
type residencyMeter struct {
	pm     *pagemap // opened at the first range
	pmErr  error    // why pagemap is not used; once set, mincore serves
	mcErr  error    // why mincore failed too, when it did
	page   uintptr
	used   bool // a range was measured
	mapped bool // pagemap served at least one range
}

func newResidencyMeter() *residencyMeter {
	return &residencyMeter{page: uintptr(os.Getpagesize())}
}

func (m *residencyMeter) close() { m.pm.close() }

// measure returns [lo, lo+n)'s residency vector (lo page-aligned; bit 0
// per page), whether it came from pagemap (exact: in this process's RSS),
// and, when it did and wantCacheOnly is set, the bytes mincore sees in the
// page cache that are not in RSS. vec is nil when neither source could be
// read.
func (m *residencyMeter) measure(lo, n uintptr, wantCacheOnly bool) (vec []byte, exact bool, cacheOnly int64) {
	if !m.used {
		m.used = true
		m.pm, m.pmErr = openPagemap()
	}
	if m.pmErr == nil {
		v, err := m.pm.present(lo, n)
		if err == nil {
			m.mapped = true
			if wantCacheOnly {
				if cached, err := residency(lo, n); err == nil {
					for i, c := range cached {
						if c&1 != 0 && v[i]&1 == 0 {
							cacheOnly += int64(m.page)
						}
					}
				}
			}
			return v, true, cacheOnly
		}
		m.pmErr = err
	}
	v, err := residency(lo, n)
	if err != nil {
		m.mcErr = err
		return nil, false, 0
	}
	return v, false, 0
}

// note describes a fallback from pagemap, "" when there was none.
func (m *residencyMeter) note() string {
	switch {
	case !m.used || m.pmErr == nil:
		return ""
	case m.mcErr != nil:
		return "mapped lines counted resident in full: no /proc/self/pagemap (" + m.pmErr.Error() + ") nor mincore (" + m.mcErr.Error() + ")"
	case m.mapped:
		return "some mapped lines measured with mincore (page-cache residency, can exceed RSS): " + m.pmErr.Error()
	}
	return "mapped lines measured with mincore (page-cache residency, can exceed RSS): " + m.pmErr.Error()
}

// measureMapped measures the mapped lines by the pages in this process's
// RSS, from /proc/self/pagemap (mincore where pagemap cannot be read).
// Each region is scanned once and a resident page is given to the first
// line that covers it, so tensors that share a boundary page do not count
// it twice. What no line claims in a file region (a GGUF header,
// alignment padding) gets a line of its own. Pages of a file region that
// are in the page cache but not mapped into this process (a file another
// process read, weights this one never touched) are not resident here;
// they are summed apart as pcOnly.
func measureMapped(items []item, p *procInfo) mappedResult {
	meter := newResidencyMeter()
	defer meter.close()
	page := meter.page
	type scan struct {
		vec       []byte // residency per page; claimed pages are cleared
		exact     bool   // vec is from pagemap
		total     int64  // resident bytes before any claim
		claimed   int64  // resident bytes given to lines
		cacheOnly int64  // in the page cache, not in RSS (exact scans of files)
		bytes     int64  // bytes of the lines in the region
		category  string // of the first line, for the region's rest
	}
	var res mappedResult
	scans := map[int]*scan{}
	for _, it := range items {
		if it.kind != mapped {
			continue
		}
		e := Entry{Name: it.name, Category: it.category, Bytes: it.bytes}
		for _, d := range it.data {
			a, n := addrOf(d), uintptr(len(d))
			ri := p.find(a)
			if ri < 0 || a+n > p.regions[ri].end {
				// Not inside one region smaps showed (or no smaps): measure
				// the range alone; with neither pagemap nor mincore, call
				// it resident.
				lo := a &^ (page - 1)
				if vec, _, _ := meter.measure(lo, a+n-lo, false); vec == nil {
					e.Resident += int64(n)
				} else {
					e.Resident += int64(countResident(vec)) * int64(page)
				}
				continue
			}
			g := &p.regions[ri]
			sc := scans[ri]
			if sc == nil {
				sc = &scan{category: it.category}
				if vec, exact, cacheOnly := meter.measure(g.start, g.end-g.start, g.file()); vec != nil {
					sc.vec, sc.exact, sc.cacheOnly = vec, exact, cacheOnly
					sc.total = int64(countResident(vec)) * int64(page)
				}
				scans[ri] = sc
			}
			sc.bytes += int64(n)
			if sc.vec == nil {
				e.Resident += int64(n)
				continue
			}
			var got int64
			for i := (a - g.start) / page; i < (a+n-g.start+page-1)/page; i++ {
				if sc.vec[i]&1 != 0 {
					got += int64(page)
					sc.vec[i] = 0
				}
			}
			e.Resident += got
			sc.claimed += got
		}
		res.entries = append(res.entries, e)
	}
	for ri := range p.regions {
		g := &p.regions[ri]
		sc := scans[ri]
		switch {
		case sc == nil:
			if g.file() && !g.program && g.rss > 0 {
				res.unseen = append(res.unseen, Mapping{Path: g.path, Bytes: int64(g.end - g.start), Resident: g.rss})
			}
		case !g.file():
			// Lines in anonymous memory take their residency out of what
			// the runtime lines share; the rest stays with the runtime.
			res.inAnon += sc.claimed
		case sc.vec != nil:
			if sc.exact {
				res.pcOnly += sc.cacheOnly
			} else {
				// mincore's count includes these pages; smaps' Rss for
				// the region says how many.
				res.pcOnly += max(0, sc.total-g.rss)
			}
			res.entries = append(res.entries, Entry{
				Name:     filepath.Base(g.path) + ": header and padding (mapped)",
				Category: sc.category,
				Bytes:    max(0, int64(g.end-g.start)-sc.bytes),
				Resident: sc.total - sc.claimed,
			})
		}
	}
	res.note = meter.note()
	return res
}

func countResident(vec []byte) int {
	n := 0
	for _, b := range vec {
		n += int(b & 1)
	}
	return n
}

// Resident returns how many bytes of s are in this process's RSS, from
// /proc/self/pagemap (mincore where pagemap cannot be read): a page counts
// with the part of s it holds, so neighbours that share a page do not both
// claim all of it. It is meant for large heap buffers that may be partly
// untouched (a KV ring allocated for its whole window but filled a row at
// a time); where neither is available it returns the full size.
func Resident[T any](s []T) int64 {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n == 0 {
		return 0
	}
	a := uintptr(unsafe.Pointer(unsafe.SliceData(s[:cap(s)])))
	page := uintptr(os.Getpagesize())
	lo := a &^ (page - 1)
	meter := newResidencyMeter()
	vec, _, _ := meter.measure(lo, a+n-lo, false)
	meter.close()
	if vec == nil {
		return int64(n)
	}
	var r int64
	for i, v := range vec {
		if v&1 == 0 {
			continue
		}
		p0 := lo + uintptr(i)*page
		r += int64(min(p0+page, a+n) - max(p0, a))
	}
	return r
}
