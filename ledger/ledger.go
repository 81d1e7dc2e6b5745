// Package ledger names the memory a process holds: every buffer siskin
// allocates or maps is registered under a name and a category, and a
// report sets the sum of what is resident beside the process's RSS and
// Pss, so that whatever nobody registered shows up as an unattributed
// rest instead of hiding in a total.
//
// Mapped files are measured page by page from /proc/self/pagemap, which
// says which pages are mapped into this process (what RSS counts), so a
// weight the forward pass never reads does not count as resident even
// when the file is in the page cache; where pagemap cannot be read,
// mincore (page-cache residency) stands in and the report's Source says
// so. Heap buffers count as resident in full. The Go runtime's own memory (objects nobody
// registered, free spans, stacks, GC metadata) and the program's text and
// data get lines of their own from runtime/metrics and /proc/self/smaps.
package ledger

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Categories in use. Any string works; these keep reports comparable.
const (
	WeightsMapped    = "weights-mapped"    // weights read in place from a mapped file
	WeightsConverted = "weights-converted" // weights copied or converted at load (norm vectors, repacked layouts)
	KV               = "kv"                // attention key/value caches, prefix cache
	RoPE             = "rope"              // rotary cos/sin tables
	Scratch          = "scratch"           // per-step activation buffers
	Tokenizer        = "tokenizer"         // vocabulary, merges, caches
	HTTP             = "http"              // server buffers
	Runtime          = "runtime"           // Go runtime: unregistered heap, stacks, metadata
	Program          = "program"           // the executable's text and data, the main thread's stack
	Metadata         = "metadata"          // parsed file headers held on the heap
)

// Entry is one named line of a report.
type Entry struct {
	Name     string `json:"name"`
	Category string `json:"category"`
	// Bytes is the size allocated or mapped.
	Bytes int64 `json:"bytes"`
	// Resident is how much of it is in physical memory now.
	Resident int64 `json:"resident_bytes"`
}

// kind says where an item's memory lives, which decides how its
// residency is measured and what it is subtracted from.
type kind uint8

const (
	onHeap  kind = iota // Go heap: resident in full, part of the runtime's heap objects
	mapped              // file or anonymous mapping: resident from pagemap
	offHeap             // outside the Go heap and any mapping the ledger measures
)

type item struct {
	name, category string
	kind           kind
	bytes          int64
	data           [][]byte // mapped only
	fn             func() (bytes, resident int64)
}

// Ledger is a registry of named memory. Registering is cheap (no system
// calls); all measuring happens in Report. The zero value is not usable;
// call New.
type Ledger struct {
	mu    sync.Mutex
	items []item
	index map[string]int
}

// New returns an empty ledger.
func New() *Ledger { return &Ledger{index: map[string]int{}} }

func (l *Ledger) put(it item) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Re-registering a name replaces the line, so a component can refresh
	// what it registered without the ledger counting it twice.
	if i, ok := l.index[it.name]; ok {
		l.items[i] = it
		return
	}
	l.index[it.name] = len(l.items)
	l.items = append(l.items, it)
}

// Add registers a Go heap buffer of a fixed size.
func (l *Ledger) Add(name, category string, bytes int64) {
	l.put(item{name: name, category: category, kind: onHeap, bytes: bytes})
}

// AddFunc registers Go heap memory whose size changes (a KV cache, a
// prefix cache); f is called at every report, from the reporting
// goroutine, and returns the bytes held and how many of them are
// resident (touched). f must be safe to call from that goroutine.
func (l *Ledger) AddFunc(name, category string, f func() (bytes, resident int64)) {
	l.put(item{name: name, category: category, kind: onHeap, fn: f})
}

// AddOffHeap registers memory outside the Go heap that the ledger cannot
// measure (memory mapped by hand without a file); f reports it.
func (l *Ledger) AddOffHeap(name, category string, f func() (bytes, resident int64)) {
	l.put(item{name: name, category: category, kind: offHeap, fn: f})
}

// AddMapped registers mapped memory: the slices must lie in a file (or
// anonymous) mapping that stays mapped while registered. Residency comes
// from /proc/self/pagemap over their pages (mincore where pagemap cannot
// be read); a page shared by two lines counts once.
func (l *Ledger) AddMapped(name, category string, data ...[]byte) {
	it := item{name: name, category: category, kind: mapped}
	for _, d := range data {
		if len(d) > 0 {
			it.bytes += int64(len(d))
			it.data = append(it.data, d)
		}
	}
	l.put(it)
}

// Remove drops a line (a cache that was freed, a model that was closed).
func (l *Ledger) Remove(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := l.index[name]
	if !ok {
		return
	}
	l.items = slices.Delete(l.items, i, i+1)
	delete(l.index, name)
	for j := i; j < len(l.items); j++ {
		l.index[l.items[j].name] = j
	}
}

// Len is the number of registered lines.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.items)
}

func (l *Ledger) snapshot() []item {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.items)
}

// Report is a snapshot of the process's memory, line by line.
type Report struct {
	// RSSBytes and PssBytes are the sums over /proc/self/smaps; both are 0
	// where it is not available (then only the lines mean anything).
	RSSBytes int64   `json:"rss_bytes"`
	PssBytes int64   `json:"pss_bytes"`
	Entries  []Entry `json:"entries"` // by resident bytes, largest first
	// AttributedBytes is the sum of the lines' resident bytes.
	AttributedBytes int64 `json:"attributed_bytes"`
	// UnattributedBytes is RSS minus the attributed bytes. It can turn
	// negative only where mapped lines fall back to mincore (see Source),
	// which counts a mapped page in the page cache even if this process
	// never touched it.
	UnattributedBytes int64   `json:"unattributed_bytes"`
	UnattributedShare float64 `json:"unattributed_share"`
	// UnattributedMappings lists the file mappings no line covers, the
	// usual culprit when the rest is large.
	UnattributedMappings []Mapping `json:"unattributed_mappings,omitempty"`
	// PageCacheOnlyBytes is how much of the mapped files is in the page
	// cache but not mapped into this process: in no RSS and in no line's
	// resident bytes, reported for information (a file another process
	// read, weights this one maps but never touches).
	PageCacheOnlyBytes int64 `json:"page_cache_only_bytes"`
	// Source says where RSS came from, or why it is missing, and how the
	// mapped lines were measured when /proc/self/pagemap could not be
	// read.
	Source string `json:"source"`
}

// Mapping is a file mapping of the process with its resident size.
type Mapping struct {
	Path     string `json:"path"`
	Bytes    int64  `json:"bytes"`
	Resident int64  `json:"resident_bytes"`
}

// Report measures every line and the process now.
func (l *Ledger) Report() *Report {
	items := l.snapshot()
	proc := readProc()
	r := &Report{RSSBytes: proc.rss, PssBytes: proc.pss, Source: proc.source}
	var heapBytes, heapResident int64
	for _, it := range items {
		e := Entry{Name: it.name, Category: it.category, Bytes: it.bytes, Resident: it.bytes}
		if it.fn != nil {
			e.Bytes, e.Resident = it.fn()
		}
		if it.kind == mapped {
			continue // measured below, together, so shared pages count once
		}
		if it.kind == onHeap {
			heapBytes += e.Bytes
			heapResident += e.Resident
		}
		r.Entries = append(r.Entries, e)
	}
	m := measureMapped(items, proc)
	r.Entries = append(r.Entries, m.entries...)
	r.PageCacheOnlyBytes = m.pcOnly
	r.UnattributedMappings = m.unseen
	if m.note != "" {
		r.Source += "; " + m.note
	}
	r.Entries = append(r.Entries, proc.program...)
	r.Entries = append(r.Entries, runtimeEntries(heapBytes, heapResident+m.inAnon, proc)...)

	slices.SortStableFunc(r.Entries, func(a, b Entry) int {
		if c := cmp.Compare(b.Resident, a.Resident); c != 0 {
			return c
		}
		return natural(a.Name, b.Name)
	})
	for _, e := range r.Entries {
		r.AttributedBytes += e.Resident
	}
	if r.RSSBytes > 0 {
		r.UnattributedBytes = r.RSSBytes - r.AttributedBytes
		r.UnattributedShare = float64(r.UnattributedBytes) / float64(r.RSSBytes)
	}
	return r
}

// Sum adds the lines of one category (all lines for "").
func (r *Report) Sum(category string) (bytes, resident int64) {
	for _, e := range r.Entries {
		if category == "" || e.Category == category {
			bytes += e.Bytes
			resident += e.Resident
		}
	}
	return bytes, resident
}

// Find returns the line with the given name.
func (r *Report) Find(name string) (Entry, bool) {
	for _, e := range r.Entries {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// natural compares names with runs of digits by value, so that "blk.2"
// sorts before "blk.10" among lines of equal size.
func natural(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			x, y := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(x), len(y)), strings.Compare(x, y)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
