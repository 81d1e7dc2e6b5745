package ledger

import "runtime/metrics"

// runtimeLine is one Go runtime line and the runtime/metrics classes it
// adds up. The order is the order in which resident memory is handed out
// (see runtimeEntries): classes the program has certainly written first,
// reserved-but-maybe-untouched ones last.
type runtimeLine struct {
	name    string
	classes []string
}

var runtimeLines = []runtimeLine{
	{"Go heap: objects not registered", []string{"/memory/classes/heap/objects:bytes"}},
	{"Go runtime: goroutine stacks", []string{"/memory/classes/heap/stacks:bytes", "/memory/classes/os-stacks:bytes"}},
	{"Go heap: unused space in spans", []string{"/memory/classes/heap/unused:bytes"}},
	{"Go runtime: span and cache metadata", []string{
		"/memory/classes/metadata/mspan/inuse:bytes", "/memory/classes/metadata/mspan/free:bytes",
		"/memory/classes/metadata/mcache/inuse:bytes", "/memory/classes/metadata/mcache/free:bytes"}},
	{"Go runtime: GC and other metadata", []string{"/memory/classes/metadata/other:bytes"}},
	{"Go heap: free spans not returned to the OS", []string{"/memory/classes/heap/free:bytes"}},
	{"Go runtime: other (trace buffers, specials)", []string{"/memory/classes/other:bytes"}},
	{"Go runtime: profiling buckets", []string{"/memory/classes/profiling/buckets:bytes"}},
}

// runtimeEntries returns the Go runtime's lines. Sizes come from
// runtime/metrics; registered heap lines (heapBytes) are taken out of the
// heap objects so they are not counted twice. The runtime does not know
// which of its pages are resident, but smaps does know the resident
// anonymous memory in total, which in a program without cgo is all the
// runtime's: what the registered lines do not account for (anonUsed) is
// handed to the runtime lines in order, each up to its size. The split is
// therefore an estimate, the total is measured; anonymous memory beyond
// every class stays unattributed (memory the runtime does not know about).
// Without smaps every line counts as resident in full.
func runtimeEntries(heapBytes, anonUsed int64, p *procInfo) []Entry {
	var samples []metrics.Sample
	for _, l := range runtimeLines {
		for _, c := range l.classes {
			samples = append(samples, metrics.Sample{Name: c})
		}
	}
	metrics.Read(samples)
	val := map[string]int64{}
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			val[s.Name] = int64(s.Value.Uint64())
		}
	}
	budget := p.anonRSS - anonUsed
	var out []Entry
	for i, l := range runtimeLines {
		var b int64
		for _, c := range l.classes {
			b += val[c]
		}
		if i == 0 {
			b = max(0, b-heapBytes)
		}
		e := Entry{Name: l.name, Category: Runtime, Bytes: b, Resident: b}
		if p.ok {
			e.Resident = min(b, max(0, budget))
			budget -= e.Resident
		}
		out = append(out, e)
	}
	return out
}
