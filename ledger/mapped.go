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

// measureMapped measures the mapped lines. Each region is scanned with
// one mincore call and a resident page is given to the first line that
// covers it, so tensors that share a boundary page do not count it twice.
// What no line claims in a file region (a GGUF header, alignment padding)
// gets a line of its own. It returns the lines, the resident bytes of
// lines that lie in anonymous memory (already part of anonRSS), the
// residency mincore sees beyond the file regions' RSS, and the file
// mappings no line covers.
func measureMapped(items []item, p *procInfo) (out []Entry, inAnon, pcOnly int64, unseen []Mapping) {
	page := uintptr(os.Getpagesize())
	type scan struct {
		vec      []byte // residency per page; claimed pages are cleared
		total    int64  // resident bytes before any claim
		claimed  int64  // resident bytes given to lines
		bytes    int64  // bytes of the lines in the region
		category string // of the first line, for the region's rest
	}
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
				// the range alone; without mincore, call it resident.
				lo := a &^ (page - 1)
				vec, err := residency(lo, a+n-lo)
				if err != nil {
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
				if vec, err := residency(g.start, g.end-g.start); err == nil {
					sc.vec, sc.total = vec, int64(countResident(vec))*int64(page)
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
		out = append(out, e)
	}
	for ri := range p.regions {
		g := &p.regions[ri]
		sc := scans[ri]
		switch {
		case sc == nil:
			if g.file() && !g.program && g.rss > 0 {
				unseen = append(unseen, Mapping{Path: g.path, Bytes: int64(g.end - g.start), Resident: g.rss})
			}
		case !g.file():
			// Lines in anonymous memory take their residency out of what
			// the runtime lines share; the rest stays with the runtime.
			inAnon += sc.claimed
		case sc.vec != nil:
			pcOnly += max(0, sc.total-g.rss)
			out = append(out, Entry{
				Name:     filepath.Base(g.path) + ": header and padding (mapped)",
				Category: sc.category,
				Bytes:    max(0, int64(g.end-g.start)-sc.bytes),
				Resident: sc.total - sc.claimed,
			})
		}
	}
	return out, inAnon, pcOnly, unseen
}

func countResident(vec []byte) int {
	n := 0
	for _, b := range vec {
		n += int(b & 1)
	}
	return n
}

// Resident returns how many bytes of s are in physical memory, from
// mincore: a page counts with the part of s it holds, so neighbours that
// share a page do not both claim all of it. It is meant for large heap
// buffers that may be partly untouched (a KV ring allocated for its whole
// window but filled a row at a time); where mincore is unavailable it
// returns the full size.
func Resident[T any](s []T) int64 {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n == 0 {
		return 0
	}
	a := uintptr(unsafe.Pointer(unsafe.SliceData(s[:cap(s)])))
	page := uintptr(os.Getpagesize())
	lo := a &^ (page - 1)
	vec, err := residency(lo, a+n-lo)
	if err != nil {
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
