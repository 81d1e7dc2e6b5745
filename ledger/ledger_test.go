package ledger

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

func TestAddReplaceRemove(t *testing.T) {
	l := New()
	l.Add("a", Scratch, 100)
	l.Add("b", Scratch, 200)
	l.Add("a", Scratch, 300) // replaces, does not add a second line
	if l.Len() != 2 {
		t.Fatalf("%d lines, want 2", l.Len())
	}
	r := l.Report()
	if e, ok := r.Find("a"); !ok || e.Bytes != 300 || e.Resident != 300 {
		t.Errorf("a = %+v, %v", e, ok)
	}
	l.Remove("a")
	l.Remove("missing")
	r = l.Report()
	if _, ok := r.Find("a"); ok {
		t.Error("a still listed after Remove")
	}
	if e, ok := r.Find("b"); !ok || e.Bytes != 200 {
		t.Errorf("b = %+v, %v", e, ok)
	}
}

func TestAddFuncReadAtEachReport(t *testing.T) {
	l := New()
	n := int64(10)
	l.AddFunc("grows", KV, func() (int64, int64) { return n, n / 2 })
	if e, _ := l.Report().Find("grows"); e.Bytes != 10 || e.Resident != 5 {
		t.Errorf("first report %+v", e)
	}
	n = 1000
	if e, _ := l.Report().Find("grows"); e.Bytes != 1000 || e.Resident != 500 {
		t.Errorf("second report %+v", e)
	}
}

// The registered heap lines are taken out of the runtime's heap objects,
// so a buffer is counted once however it is registered.
func TestHeapLinesLeaveRuntimeObjects(t *testing.T) {
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = 1
	}
	// A GC between the two readings would free other tests' garbage too
	// and move the difference by megabytes: none runs while they are read.
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	p := &procInfo{}
	a := runtimeEntries(0, 0, p)[0]
	b := runtimeEntries(int64(len(buf)), 0, p)[0]
	if a.Name != runtimeLines[0].name {
		t.Fatalf("first runtime line is %q", a.Name)
	}
	if d := a.Bytes - b.Bytes; d < 7<<20 || d > 9<<20 {
		t.Errorf("unregistered heap objects fell by %d bytes, want about %d", d, len(buf))
	}
	runtime.KeepAlive(buf)
}

func TestReportJSONShape(t *testing.T) {
	l := New()
	l.Add("small", Scratch, 1)
	l.Add("large", Scratch, 1<<20)
	raw, err := json.Marshal(l.Report())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rss_bytes", "pss_bytes", "entries", "unattributed_bytes", "unattributed_share", "attributed_bytes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing in %s", k, raw)
		}
	}
	entries, _ := m["entries"].([]any)
	if len(entries) < 2 {
		t.Fatalf("entries %v", m["entries"])
	}
	var res []float64
	for _, e := range entries {
		e := e.(map[string]any)
		for _, k := range []string{"name", "category", "bytes", "resident_bytes"} {
			if _, ok := e[k]; !ok {
				t.Errorf("entry key %q missing in %v", k, e)
			}
		}
		res = append(res, e["resident_bytes"].(float64))
	}
	if !slices.IsSortedFunc(res, func(a, b float64) int { return int(b - a) }) {
		t.Errorf("entries not sorted by resident bytes: %v", res)
	}
}

// With nothing registered, the runtime and program lines alone must
// account for the test process's RSS.
func TestRuntimeAndProgramCoverRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RSS comes from /proc")
	}
	r := New().Report()
	if r.RSSBytes <= 0 || r.PssBytes <= 0 {
		t.Fatalf("rss %d pss %d (%s)", r.RSSBytes, r.PssBytes, r.Source)
	}
	for _, name := range []string{runtimeLines[0].name, "main thread stack and vDSO"} {
		if _, ok := r.Find(name); !ok {
			t.Errorf("no %q line", name)
		}
	}
	if _, prog := r.Sum(Program); prog <= 0 {
		t.Errorf("program lines hold %d resident bytes", prog)
	}
	t.Logf("RSS %d, unattributed %d (%.3f%%)", r.RSSBytes, r.UnattributedBytes, 100*r.UnattributedShare)
	// The files are read at slightly different moments; a busy machine
	// can move a few pages in between.
	if s := r.UnattributedShare; !raceEnabled && (s > 0.03 || s < -0.03) {
		var b strings.Builder
		r.WriteTable(&b)
		t.Errorf("unattributed share %.3f\n%s", s, b.String())
	}
}

func TestHandler(t *testing.T) {
	l := New()
	l.Add("x", HTTP, 4096)
	srv := httptest.NewServer(l.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/debug/memory")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var r Report
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if e, ok := r.Find("x"); !ok || e.Bytes != 4096 || e.Category != HTTP {
		t.Errorf("x = %+v, %v", e, ok)
	}
	post, err := http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d", post.StatusCode)
	}
}

func TestWriteTable(t *testing.T) {
	l := New()
	l.Add("blk.10 thing", Scratch, 3<<20)
	l.Add("blk.2 thing", Scratch, 3<<20)
	var b strings.Builder
	if err := l.Report().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"NAME", "RESIDENT", "3.00 MiB", "unattributed"} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in\n%s", s, out)
		}
	}
	if strings.Index(out, "blk.2 ") > strings.Index(out, "blk.10 ") {
		t.Errorf("equal lines not in natural order:\n%s", out)
	}
}

func TestNatural(t *testing.T) {
	names := []string{"blk.10 w", "blk.2 w", "blk.1 w", "KV layer 3", "KV layer 12", "a", "blk.02 w"}
	slices.SortFunc(names, natural)
	want := []string{"KV layer 3", "KV layer 12", "a", "blk.1 w", "blk.2 w", "blk.02 w", "blk.10 w"}
	if !slices.Equal(names, want) {
		t.Errorf("got %q, want %q", names, want)
	}
}

func TestMapBytes(t *testing.T) {
	for _, c := range []struct {
		n, kv int
		want  int64
	}{{0, 8, 0}, {1, 8, 8 * 9}, {7, 8, 8 * 9}, {8, 8, 16 * 9}, {1000, 24, 2048 * 25}} {
		if got := MapBytes(c.n, c.kv); got != c.want {
			t.Errorf("MapBytes(%d, %d) = %d, want %d", c.n, c.kv, got, c.want)
		}
	}
}

func TestHuman(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 20: "3.00 MiB", 5 << 30: "5.00 GiB", -2048: "-2.0 KiB"} {
		if got := Human(n); got != want {
			t.Errorf("Human(%d) = %q, want %q", n, got, want)
		}
	}
}

func writeFile(t *testing.T, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
