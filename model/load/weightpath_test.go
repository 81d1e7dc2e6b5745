package load

import (
	"bytes"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
	"github.com/siskin-ml/siskin/weightpath"
)

var evalTokens = []int{1, 45, 300, 12, 7, 99, 250, 3, 18, 401, 77, 5}

// logitsOf runs evalTokens through m and returns every position's logits.
func logitsOf(t *testing.T, l *Loaded) []float32 {
	t.Helper()
	out, err := model.Forward(l.Model, l.Model.NewCache(), evalTokens, true)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// relRMS is the RMS of got-want relative to the RMS of want.
func relRMS(got, want []float32) float64 {
	var e, s float64
	for i := range want {
		d := float64(got[i] - want[i])
		e += d * d
		s += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(e / s)
}

func openLogged(t *testing.T, src string, opt Options) (*Loaded, string) {
	t.Helper()
	log := new(syncBuffer)
	opt.Log = slog.New(slog.NewTextHandler(log, nil))
	l, err := OpenWith(src, opt)
	if err != nil {
		t.Fatal(err)
	}
	return l, log.String()
}

// syncBuffer is a log sink the background cache check may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Every weight path loads the tiny Spark F32 model, stays close to the
// F32 logits, caches its weights, maps them bit-identically at the next
// start, and rebuilds a cache that is stale or damaged (with a log line
// saying why) instead of using it.
func TestWeightPaths(t *testing.T) {
	f32 := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf")
	// The GGUF path keeps the file's types: its test runs a Q4_K_M file,
	// whose packed weights the cache holds, against Open of that file.
	q4km := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_k_m.gguf")
	// Bounds come from llama.cpp's own files of the same model: the
	// relative RMS error of their logits against F32 (every position of
	// evalTokens). W8A8 (group 128) must stay within 1.5x of Q8_0 (group
	// 32); the 4-bit paths (group 128, with llama.cpp's _M rule for 8-bit
	// tensors) within 1.2x of Q4_0 (group 32, no mix). The random Gaussian
	// weights of the tiny model amplify weight error into the logits.
	ref := map[string]float64{}
	for _, q := range []string{"q8_0", "q4_0", "q4_k_m"} {
		l, err := Open(testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-"+q+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := Open(f32)
		if err != nil {
			t.Fatal(err)
		}
		ref[q] = relRMS(logitsOf(t, l), logitsOf(t, f))
		l.Close()
		f.Close()
		t.Logf("llama.cpp %s: relative RMS error of logits vs F32: %.5f", q, ref[q])
	}
	// The Q4_K_M path makes from the F32 file what llama.cpp's quantizer
	// made of it: the same bytes, so the same logits as its file.
	// W16A16 (BF16 weights and activations, 8 significant bits each)
	// must stay within llama.cpp's Q8_0 file's error.
	bound := map[weightpath.Path]float64{weightpath.GGUF: 0, weightpath.Q4KM: 0, weightpath.W8A8: 1.5 * ref["q8_0"], weightpath.W4A8: 1.2 * ref["q4_0"], weightpath.W4A16: 1.2 * ref["q4_0"],
		weightpath.W16A16: ref["q8_0"]}
	for _, path := range weightpath.Paths {
		t.Run(string(path), func(t *testing.T) {
			if path == weightpath.W16A16 && !kernels.HasW16A16() {
				t.Skipf("the %s kernel tier has no AVX-512 BF16: w16a16 is refused here (TestW16A16Refused)", kernels.Tier())
			}
			src, refSrc := f32, f32
			switch path {
			case weightpath.GGUF:
				src, refSrc = q4km, q4km
			case weightpath.Q4KM:
				refSrc = q4km
			}
			ref, err := Open(refSrc)
			if err != nil {
				t.Fatal(err)
			}
			want := logitsOf(t, ref)
			ref.Close()
			dir := t.TempDir()
			opt := Options{WeightPath: path, CacheDir: dir}
			l, log := openLogged(t, src, opt)
			first := logitsOf(t, l)
			l.Close()
			if !strings.Contains(log, "weight cache miss") {
				t.Errorf("first start did not log a miss:\n%s", log)
			}
			e := relRMS(first, want)
			t.Logf("%s: relative RMS error of logits vs the reference: %.5f", path, e)
			if e > bound[path] {
				t.Errorf("%s: relative RMS error %.5f > %g", path, e, bound[path])
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
			packs := kernels.PackedLayout(tensorOf(path)) != ""
			if path == weightpath.GGUF && !packs {
				// Nothing converted or packed: nothing to cache.
				if len(files) != 0 {
					t.Errorf("cache files %v written for the unpacked GGUF path", files)
				}
				return
			}
			if len(files) != 1 {
				t.Fatalf("cache files: %v, want one", files)
			}
			l, log = openLogged(t, src, opt)
			if !l.Weights.Hit() || !strings.Contains(log, "weight cache hit") {
				t.Errorf("second start missed the cache: %s\n%s", l.Weights.MissReason(), log)
			}
			second := logitsOf(t, l)
			l.Close()
			for i := range first {
				if first[i] != second[i] {
					t.Fatalf("logit %d: %g converted, %g from the cache", i, first[i], second[i])
				}
			}

			// Damage one byte of tensor data: a logged miss, then rebuilt.
			damage(t, files[0])
			l, log = openLogged(t, src, opt)
			if l.Weights.Hit() || !strings.Contains(log, "corrupt: checksum mismatch") {
				t.Errorf("a damaged cache was not refused as corrupt:\n%s", log)
			}
			third := logitsOf(t, l)
			l.Close()
			if relRMS(third, first) != 0 {
				t.Error("rebuilt weights differ from the first conversion")
			}
			if l, log = openLogged(t, src, opt); !l.Weights.Hit() {
				t.Errorf("the rebuilt cache was not used: %s", log)
			}
			l.Close()

			// A truncated file is refused too.
			truncate(t, files[0])
			if l, log = openLogged(t, src, opt); l.Weights.Hit() || !strings.Contains(log, "unreadable") {
				t.Errorf("a truncated cache was not refused:\n%s", log)
			}
			l.Close()
		})
	}
}

// A source that changes (here: a copy whose time stamp moves) makes its
// cache stale; the miss says so.
func TestWeightCacheStale(t *testing.T) {
	orig := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_0.gguf")
	src := filepath.Join(t.TempDir(), "model.gguf")
	copyFile(t, orig, src)
	opt := Options{WeightPath: weightpath.W8A8, CacheDir: t.TempDir()}
	l, _ := openLogged(t, src, opt)
	l.Close()
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(src, later, later); err != nil {
		t.Fatal(err)
	}
	l, log := openLogged(t, src, opt)
	l.Close()
	if l.Weights.Hit() || !strings.Contains(log, "stale: siskin.weight_cache.fingerprint") {
		t.Errorf("a changed source did not make the cache stale:\n%s", log)
	}
}

// tensorOf is the type most of path's matrices have in its test.
func tensorOf(path weightpath.Path) tensor.Type {
	switch path {
	case weightpath.W4A8:
		return tensor.W4A8
	case weightpath.W4A16:
		return tensor.W4A16
	case weightpath.W8A8:
		return tensor.W8A8
	case weightpath.W16A16:
		return tensor.W16A16
	}
	return tensor.Q4_K
}

func damage(t *testing.T, file string) {
	t.Helper()
	f, err := gguf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	last := f.Tensors[len(f.Tensors)-1]
	off := int64(f.DataOffset) + int64(last.Offset) + int64(len(last.Data))/2
	f.Close()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x10
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, file string) {
	t.Helper()
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(file, st.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// One flipped byte anywhere in a cache file (the header, any tensor's
// bytes away from the samples an earlier format checked, the padding,
// the checksum table) makes the next start refuse the file with a
// logged reason and rebuild it, byte for byte; a file of the previous
// format is refused as stale.
func TestWeightCacheByteFlips(t *testing.T) {
	// w8a8 converts, so there is a cache file in every kernel tier.
	src := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_k_m.gguf")
	opt := Options{WeightPath: weightpath.W8A8, CacheDir: t.TempDir()}
	l, _ := openLogged(t, src, opt)
	l.Close()
	file := l.Weights.File()
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(orig, file)
	if err != nil {
		t.Fatal(err)
	}
	type flip struct {
		off  int64
		want string // the reason logged, or "" for any
	}
	flips := []flip{{4, "unreadable"}, {int64(f.DataOffset) / 2, ""}, {int64(f.DataOffset) - 1, "corrupt: checksum mismatch in the header"}}
	data := f.Tensors[:len(f.Tensors)-1]
	big, padded := 0, -1
	for i, ti := range data {
		if len(ti.Data) > len(data[big].Data) {
			big = i
		}
		if padded < 0 && len(ti.Data)%f.Alignment != 0 {
			padded = i
		}
	}
	at := func(ti gguf.TensorInfo, off int) int64 { return int64(f.DataOffset) + int64(ti.Offset) + int64(off) }
	mismatch := func(ti gguf.TensorInfo) string { return "corrupt: checksum mismatch in " + ti.Name }
	// The largest tensor's first and last bytes and one a quarter of the
	// way in (between the start and middle samples an earlier format
	// checked), the first and last tensors' edges, a padding byte.
	for _, ti := range []gguf.TensorInfo{data[big], data[0], data[len(data)-1]} {
		flips = append(flips, flip{at(ti, 0), mismatch(ti)}, flip{at(ti, len(ti.Data)-1), mismatch(ti)})
	}
	flips = append(flips, flip{at(data[big], len(data[big].Data)/4), mismatch(data[big])})
	if padded >= 0 {
		flips = append(flips, flip{at(data[padded], len(data[padded].Data)), mismatch(data[padded])})
	}
	// The checksum table (a damaged entry fails its comparison) and its
	// padding, which ends the file.
	table := f.Tensors[len(f.Tensors)-1]
	flips = append(flips, flip{at(table, 0), "corrupt: checksum mismatch in the header"}, flip{at(table, len(table.Data)-1), "corrupt: checksum mismatch"})
	if end := at(table, len(table.Data)); end < int64(len(orig)) {
		flips = append(flips, flip{int64(len(orig)) - 1, "corrupt: nonzero padding after the checksum table"})
	}
	// And anywhere.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 6 {
		flips = append(flips, flip{rng.Int64N(int64(len(orig))), ""})
	}
	for _, fl := range flips {
		b := bytes.Clone(orig)
		b[fl.off] ^= 0x04
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		l, log := openLogged(t, src, opt)
		l.Close()
		reason := l.Weights.MissReason()
		if l.Weights.Hit() || !strings.Contains(log, "weight cache miss") || !strings.Contains(log, "reason=") {
			t.Fatalf("byte %d flipped: the cache was used:\n%s", fl.off, log)
		}
		if !strings.HasPrefix(reason, fl.want) || !strings.Contains(log, fl.want) {
			t.Errorf("byte %d flipped: reason %q, want %q", fl.off, reason, fl.want)
		}
		if damaged := !strings.HasPrefix(reason, "stale"); damaged && !strings.Contains(log, `level=WARN msg="weight cache miss"`) {
			t.Errorf("byte %d flipped: a damaged cache was not a warning:\n%s", fl.off, log)
		}
		if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, orig) {
			t.Fatalf("byte %d flipped: the cache was not rebuilt as it was (%v)", fl.off, err)
		}
	}
	t.Logf("%d single-byte flips in a %d-byte cache file refused and rebuilt", len(flips), len(orig))

	// The previous format (version 1.x) is stale, whatever it holds.
	i := bytes.Index(orig, []byte("siskin.weight_cache.version"))
	if i < 0 {
		t.Fatal("no version key in the cache file")
	}
	b := bytes.Clone(orig)
	// Key, then its type (4 bytes) and the string's length (8 bytes).
	b[i+len("siskin.weight_cache.version")+12] = '1'
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l, log := openLogged(t, src, opt)
	l.Close()
	if l.Weights.Hit() || !strings.Contains(l.Weights.MissReason(), `stale: siskin.weight_cache.version is "1.`) {
		t.Errorf("a version 1 cache was not refused as stale:\n%s", log)
	}
}

// A Hugging Face folder (BF16 safetensors) converts to w4a8 as a GGUF
// file does: the fingerprint covers the folder's files, the second start
// maps the cache, and the logits stay those of the first start.
func TestWeightPathHFFolder(t *testing.T) {
	src := testdata.Path(t, "llm", "tiny", "hf", "qwen3-tiny", "bf16")
	opt := Options{WeightPath: weightpath.W4A8, CacheDir: t.TempDir()}
	l, _ := openLogged(t, src, opt)
	first := logitsOf(t, l)
	l.Close()
	ref, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	want := logitsOf(t, ref)
	ref.Close()
	// qwen3-tiny W4A8 against its BF16 weights; measured 0.37 (AVX2).
	if e := relRMS(first, want); e > 0.6 {
		t.Errorf("relative RMS error of w4a8 logits vs BF16: %.4f > 0.6", e)
	} else {
		t.Logf("relative RMS error of w4a8 logits vs BF16: %.4f", e)
	}
	l, log := openLogged(t, src, opt)
	defer l.Close()
	if !l.Weights.Hit() {
		t.Fatalf("second start missed the cache: %s", log)
	}
	second := logitsOf(t, l)
	for i := range first {
		if first[i] != second[i] {
			t.Fatalf("logit %d: %g converted, %g from the cache", i, first[i], second[i])
		}
	}
}

// The Q4_K_M path gives every weight the type llama.cpp's Q4_K_M mix
// gives it, whatever the source: from the F32 GGUF file, the same bytes
// (so the same logits) as llama.cpp's file; from the Hugging Face twin
// (BF16, so other bytes), the same type for every tensor.
func TestQ4KMPathMatchesLlamaCpp(t *testing.T) {
	models := filepath.Join("llm", "tiny", "models")
	for _, c := range []struct{ src, ref string }{
		{testdata.Path(t, models, "qwen3-tiny-f32.gguf"), testdata.Path(t, models, "qwen3-tiny-q4_k_m.gguf")},
		{testdata.Path(t, "llm", "tiny", "hf", "qwen3-tiny", "bf16"), testdata.Path(t, models, "qwen3-tiny-q4_k_m.gguf")},
		{testdata.Path(t, "llm", "tiny", "hf", "spark2_5-tiny", "bf16"), testdata.Path(t, models, "spark2_5-tiny-q4_k_m.gguf")},
	} {
		t.Run(filepath.Base(filepath.Dir(c.src))+"/"+filepath.Base(c.src), func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openLogged(t, c.src, Options{WeightPath: weightpath.Q4KM, CacheDir: dir})
			got := logitsOf(t, l)
			l.Close()
			files, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
			if len(files) != 1 {
				t.Fatalf("cache files: %v, want one", files)
			}
			cache, err := gguf.Open(files[0])
			if err != nil {
				t.Fatal(err)
			}
			defer cache.Close()
			ref, err := gguf.Open(c.ref)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			if filepath.Ext(c.src) != ".gguf" {
				// The cache names tensors as the folder does: compare the
				// multisets of (type, shape).
				count := map[string]int{}
				for _, w := range ref.Tensors {
					if w.Type != tensor.F32 { // norms: not matrices, never converted
						count[w.Type.String()+" "+w.Shape()]++
					}
				}
				for _, g := range cache.Tensors {
					if g.Name != "siskin.weight_cache.crc32c" {
						count[cachedAs(cache, g.Name)]--
					}
				}
				for k, n := range count {
					if n != 0 {
						t.Errorf("%s: %d more in llama.cpp's file than converted here", k, n)
					}
				}
				return
			}
			converted := 0
			for _, w := range ref.Tensors {
				if w.Type == tensor.F32 {
					continue // norms: not matrices, never converted
				}
				name := w.Name
				if _, ok := cache.Tensor(name); !ok {
					name += ".packed"
				}
				if _, ok := cache.Tensor(name); !ok {
					t.Errorf("%s (%s in llama.cpp's file) was not converted", w.Name, w.Type)
					continue
				}
				converted++
				if got, want := cachedAs(cache, name), w.Type.String()+" "+w.Shape(); got != want {
					t.Errorf("%s: %s, llama.cpp's file has %s", w.Name, got, want)
				}
			}
			t.Logf("%d tensors converted with llama.cpp's types", converted)
			lr, err := Open(c.ref)
			if err != nil {
				t.Fatal(err)
			}
			want := logitsOf(t, lr)
			lr.Close()
			if e := relRMS(got, want); e != 0 {
				t.Errorf("logits differ from llama.cpp's file's: relative RMS %g", e)
			}
		})
	}
}

// cachedAs is the type and shape of the matrix a cache tensor holds, row-
// major or packed ("Q4_K [256 64]").
func cachedAs(cache *gguf.File, name string) string {
	if strings.HasSuffix(name, ".packed") {
		s, _ := cache.String("siskin.weight_cache.packed_type." + name)
		return s
	}
	g, _ := cache.Tensor(name)
	return g.Type.String() + " " + g.Shape()
}

// A cache file written or fully checked carries a seal: the next start
// checks only its header and layout; without the seal every byte is
// checked again and the seal comes back. (TestWeightCacheByteFlips shows
// that a change to a sealed file voids the seal.)
func TestWeightCacheSeal(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no inode or ctime here: caches are never sealed")
	}
	src := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_k_m.gguf")
	opt := Options{WeightPath: weightpath.W8A8, CacheDir: t.TempDir()}
	l, _ := openLogged(t, src, opt)
	l.Close()
	seal := l.Weights.File() + ".seal"
	if _, err := os.Stat(seal); err != nil {
		t.Fatalf("no seal after the cache was written: %v", err)
	}
	l, log := openLogged(t, src, opt)
	hit := l.Weights.Hit()
	l.Close()
	if !hit || !strings.Contains(log, `checked="header and layout (sealed`) {
		t.Errorf("a sealed cache was not used with the short check:\n%s", log)
	}
	if err := os.Remove(seal); err != nil {
		t.Fatal(err)
	}
	l, log = openLogged(t, src, opt)
	hit = l.Weights.Hit()
	l.Close()
	if !hit || !strings.Contains(log, `checked="every byte"`) {
		t.Errorf("an unsealed cache was not checked in full:\n%s", log)
	}
	if _, err := os.Stat(seal); err != nil {
		t.Errorf("no seal after a full check: %v", err)
	}
}
