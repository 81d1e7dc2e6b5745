package load

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
	"github.com/siskin-ml/siskin/weightpath"
)

// The cache holds each matrix once: packed where the kernels read it
// packed (a converted matrix is then held only packed), row-major
// otherwise (an untied token embedding, read only by rows, never
// packed); so the file is no larger than one row-major copy of every
// matrix it holds, plus the packed layouts' growth (W4A8/W8A8 scale
// copies, zero rows up to a multiple of 8) and the header.
func TestWeightCacheOneCopy(t *testing.T) {
	models := filepath.Join("llm", "tiny", "models")
	for _, c := range []struct {
		src  string
		path weightpath.Path
	}{
		{testdata.Path(t, models, "spark2_5-tiny-f32.gguf"), weightpath.W4A8},
		{testdata.Path(t, models, "spark2_5-tiny-f32.gguf"), weightpath.Q4KM},
		{testdata.Path(t, models, "qwen3-tiny-f32.gguf"), weightpath.W4A16},
		// Untied: its embedding stays row-major, the output head packed.
		{testdata.Path(t, models, "llama-tiny-q4_k_m.gguf"), weightpath.W8A8},
	} {
		t.Run(filepath.Base(c.src)+"/"+string(c.path), func(t *testing.T) {
			l, _ := openLogged(t, c.src, Options{WeightPath: c.path, CacheDir: t.TempDir()})
			first := logitsOf(t, l)
			l.Close()
			f, err := gguf.Open(l.Weights.File())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			seen := map[string]bool{}
			var rowMajor, held, data int64
			packed := 0
			for _, ti := range f.Tensors {
				if ti.Name == "siskin.weight_cache.crc32c" {
					continue
				}
				name := strings.TrimSuffix(ti.Name, ".packed")
				if seen[name] {
					t.Errorf("%s is in the cache twice", name)
				}
				seen[name] = true
				var typ tensor.Type
				var cols, rows int64
				desc := cachedAs(f, ti.Name)
				if name == ti.Name {
					typ, cols, rows = ti.Type, int64(ti.Dims[0]), int64(ti.Dims[1])
					if kernels.PackedLayout(typ) != "" && name != "token_embd.weight" {
						t.Errorf("%s (%s) is row-major, but the kernels read it packed", name, desc)
					}
				} else {
					packed++
					var ok bool
					fields := strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(desc))
					if typ, ok = tensor.ParseType(fields[0]); !ok || len(fields) != 3 {
						t.Fatalf("%s: packed type %q", ti.Name, desc)
					}
					cols, rows = atoi(t, fields[1]), atoi(t, fields[2])
					if name == "token_embd.weight" && !strings.Contains(c.src, "llama") {
						// Tied: it is the output head too.
					} else if name == "token_embd.weight" {
						t.Errorf("the untied embedding is packed")
					}
				}
				stride, err := tensor.RowBytes(typ, int(cols))
				if err != nil {
					t.Fatal(err)
				}
				rowMajor += int64(stride) * rows
				held += int64(len(ti.Data))
				data++
				// Packed: at most 72/66 of the row-major bytes (W4A8) and 7
				// zero rows.
				if max := int64(stride)*rows*72/66 + 7*int64(stride)*72/66; int64(len(ti.Data)) > max {
					t.Errorf("%s: %d bytes for %s, more than one copy (%d)", ti.Name, len(ti.Data), desc, max)
				}
			}
			// AVX2 and AVX-512 pack every type these paths make (arm64 packs only
			// W4A8 and W8A8).
			if (kernels.Tier() == "avx2" || kernels.Tier() == "avxvnni" || kernels.Tier() == "avx512") && packed == 0 && c.path != weightpath.W4A16 {
				t.Errorf("nothing packed in the %s tier", kernels.Tier())
			}
			st, err := os.Stat(l.Weights.File())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d matrices (%d packed): %d bytes held for %d row-major; file %d bytes", data, packed, held, rowMajor, st.Size())
			if bound := rowMajor*72/66 + int64(f.DataOffset) + 64*data + 4096; st.Size() > bound {
				t.Errorf("cache file of %d bytes > %d: more than one copy of the matrices", st.Size(), bound)
			}
			// The matrices held only packed run as they did when converted.
			l, _ = openLogged(t, c.src, Options{WeightPath: c.path, CacheDir: filepath.Dir(l.Weights.File())})
			defer l.Close()
			if !l.Weights.Hit() {
				t.Fatalf("second start missed: %s", l.Weights.MissReason())
			}
			if relRMS(logitsOf(t, l), first) != 0 {
				t.Error("logits from the cache differ from the conversion's")
			}
		})
	}
}

func atoi(t *testing.T, s string) int64 {
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = 10*n + int64(c-'0')
	}
	return n
}

// A cache file holds the layout of the kernel tier that wrote it. A
// process in another tier (here the generic one, pinned with
// SISKIN_KERNELS in a child process) looks for its own file, and refuses
// the first tier's file put in its place as stale with the layout as the
// reason, rebuilds it, and never reads packed bytes as rows: its logits
// match the first tier's within float rounding.
func TestWeightCacheLayout(t *testing.T) {
	src := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf")
	if dir := os.Getenv("SISKIN_TEST_LAYOUT_DIR"); dir != "" {
		layoutChild(t, src, dir)
		return
	}
	if kernels.Tier() == "generic" {
		t.Skip("only the generic tier here: no other layout to cross")
	}
	dir := t.TempDir()
	opt := Options{WeightPath: weightpath.W4A8, CacheDir: dir}
	l, _ := openLogged(t, src, opt)
	want := logitsOf(t, l)
	l.Close()
	file := l.Weights.File()
	b := make([]byte, 4*len(want))
	for i, v := range want {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile(filepath.Join(dir, "logits"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWeightCacheLayout$", "-test.v")
	cmd.Env = append(os.Environ(), kernels.EnvKernels+"=generic", "SISKIN_TEST_LAYOUT_DIR="+dir, "SISKIN_TEST_LAYOUT_FILE="+file)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestWeightCacheLayout") {
		t.Fatalf("generic-tier child: %v\n%s", err, out)
	}
	t.Logf("generic-tier child:\n%s", out)
	// The first tier's own file is still there and used.
	l, log := openLogged(t, src, opt)
	defer l.Close()
	if !l.Weights.Hit() {
		t.Errorf("the %s tier's cache was not used after the generic tier's run:\n%s", kernels.Tier(), log)
	}
}

// layoutChild is TestWeightCacheLayout in the generic tier.
func layoutChild(t *testing.T, src, dir string) {
	if kernels.Tier() != "generic" {
		t.Fatalf("child in the %s tier", kernels.Tier())
	}
	b, err := os.ReadFile(filepath.Join(dir, "logits"))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, len(b)/4)
	for i := range want {
		want[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	opt := Options{WeightPath: weightpath.W4A8, CacheDir: dir}
	check := func(what string, l *Loaded) {
		t.Helper()
		got := logitsOf(t, l)
		l.Close()
		// Another tier: float rounding only (the order of additions),
		// which the random tiny model amplifies (measured 0.0064); bytes
		// misread would be of order 1.
		if e := relRMS(got, want); e > 0.03 {
			t.Errorf("%s: logits %.3g (relative RMS) from the other tier's", what, e)
		} else {
			t.Logf("%s: relative RMS %.3g from the other tier's logits", what, e)
		}
	}
	l, log := openLogged(t, src, opt)
	if l.Weights.Hit() || !strings.Contains(l.Weights.MissReason(), "no cache file yet") {
		t.Errorf("the generic tier did not miss for want of its own file:\n%s", log)
	}
	check("converted", l)
	other := os.Getenv("SISKIN_TEST_LAYOUT_FILE")
	if other == l.Weights.File() {
		t.Fatalf("both tiers use the cache file %s", other)
	}
	// The other tier's file under this tier's name.
	raw, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.Weights.File(), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	l, log = openLogged(t, src, opt)
	if l.Weights.Hit() || !strings.Contains(l.Weights.MissReason(), "stale: siskin.weight_cache.layout") ||
		!strings.Contains(log, "weight cache miss") {
		t.Errorf("the other tier's cache was not refused for its layout:\n%s", log)
	}
	t.Logf("refused: %s", l.Weights.MissReason())
	check("rebuilt", l)
	l, log = openLogged(t, src, opt)
	if !l.Weights.Hit() {
		t.Errorf("the rebuilt cache was not used:\n%s", log)
	}
	check("from the rebuilt cache", l)
}
