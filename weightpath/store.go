package weightpath

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/mmap"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/quantize"
	"github.com/siskin-ml/siskin/tensor"
)

// The cache file is a GGUF file (siskin's own: other readers do not know
// the weight-path types) holding each matrix once, in the one form the
// kernels in use read it: when the tier packs the matrix's type, the
// packed bytes under name+".packed" as a 1-D I8 array (a converted
// matrix is then held only packed: kernels.Row unpacks the rows an
// embedding lookup needs); otherwise, when the path converts it, its
// row-major bytes under the tensor's name (an untied token embedding is
// never packed: only its rows are read). Tensors are 64-byte aligned and
// followed by a table of checksums of all the bytes before it
// (checksum.go), which Open checks before anything in the file is used:
// every byte, unless a seal beside the file says it is unchanged since
// it was written or last checked in full (seal.go). Metadata records
// what it was made from and for, including the kernels' layout key
// (tier, packed layout, the types packed), which decides each matrix's
// form. A file that fails a check is a logged miss, and is rebuilt.

// formatVersion changes whenever the cache file's layout changes (2: the
// checksum table covers every byte, replacing per-tensor checksums; 3:
// each matrix once, packed or row-major).
const formatVersion = 3

const (
	keyVersion     = "siskin.weight_cache.version"
	keySource      = "siskin.weight_cache.source"
	keyFingerprint = "siskin.weight_cache.fingerprint"
	keyPath        = "siskin.weight_cache.weight_path"
	keyLayout      = "siskin.weight_cache.layout"
	packedSuffix   = ".packed"
	// keyPackedType+name is the weight type and shape a packed tensor
	// holds, as "Q4_K [cols rows]" (the size alone does not tell: W4A8
	// and Q4_K pack to the same bytes).
	keyPackedType = "siskin.weight_cache.packed_type."
)

// Options configure a Store.
type Options struct {
	// Path is the weight path (GGUF, W4A8, W4A16, W8A8, Q4KM; "" is GGUF).
	Path Path
	// CacheDir holds the cache files; "" means DefaultCacheDir(), and
	// "off" disables the cache (convert and pack at every start).
	CacheDir string
	// Log receives the hit, miss (with its reason) and write lines; nil
	// logs nothing.
	Log *slog.Logger
}

// DefaultCacheDir is $SISKIN_CACHE_DIR, or siskin/weights under the
// user's cache directory.
func DefaultCacheDir() string {
	if d := os.Getenv("SISKIN_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "siskin-cache")
	}
	return filepath.Join(d, "siskin", "weights")
}

// A Store hands a model's loader the matrices its kernels run: from a
// valid cache file (mapped, nothing converted or packed), or converted
// and packed now and written to the cache at Finish.
type Store struct {
	opt         Options
	src         string
	fingerprint string
	file        string // the cache file ("" when the cache is off)
	cache       *gguf.File
	missReason  string
	fullCheck   bool // the hit checked every byte (no trusted seal)

	mu        sync.Mutex
	pending   []pendingTensor
	converted int64 // heap bytes of converted row-major weights
	packed    int64 // heap bytes of packed copies made at this start
	bad       bool  // the mapped cache could not supply every matrix
	matrices  int
	start     time.Time
}

type pendingTensor struct {
	name string
	typ  tensor.Type
	dims []uint64
	data []byte
	of   string // what packed bytes hold (packedOf)
}

// packedOf describes the matrix a packed tensor holds.
func packedOf(w *tensor.Matrix) string { return fmt.Sprintf("%s [%d %d]", w.Type, w.Cols, w.Rows) }

// Open prepares a Store for the model at src (a GGUF file or Hugging
// Face folder). A cache file that cannot be used is a miss, not an error;
// errors are for a source that cannot be read or a bad option.
func Open(src string, opt Options) (*Store, error) {
	if opt.Path == "" {
		opt.Path = GGUF
	}
	if err := CheckPath(opt.Path); err != nil {
		return nil, err
	}
	if opt.Path == W16A16 && !kernels.HasW16A16() {
		return nil, fmt.Errorf("weight path w16a16 needs AVX-512 BF16 (VDPBF16PS), which the kernel tier in use (%s) lacks: use gguf to keep BF16 weights with float32 activations", kernels.Tier())
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	s := &Store{opt: opt, src: src, start: time.Now()}
	if opt.CacheDir == "off" {
		s.missReason = "the weight cache is off"
		return s, nil
	}
	fp, err := fingerprint(src)
	if err != nil {
		return nil, fmt.Errorf("weight cache: %w", err)
	}
	s.fingerprint = fp
	dir := opt.CacheDir
	if dir == "" {
		dir = DefaultCacheDir()
	}
	// One file per source location, path and layout: a changed source
	// finds its old file and replaces it (the fingerprint inside says it
	// is stale) instead of leaving it behind.
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil, fmt.Errorf("weight cache: %w", err)
	}
	loc := sha256.Sum256([]byte(abs))
	s.file = filepath.Join(dir, fmt.Sprintf("%s-%x-%s-%s.gguf", filepath.Base(abs), loc[:6], opt.Path, layoutTag()))
	t0 := time.Now()
	s.cache, s.missReason = s.openCache()
	if s.cache != nil {
		checked := "every byte"
		if !s.fullCheck {
			checked = "header and layout (sealed: unchanged since every byte was checked)"
		}
		opt.Log.Info("weight cache hit", "file", s.file, "weight_path", opt.Path, "checked", checked,
			"file_bytes", s.cache.FileBytes(), "check_seconds", time.Since(t0).Seconds())
	} else {
		// A damaged file is a problem worth a warning (commands that show
		// only warnings show it); a missing or stale one is routine.
		level := slog.LevelInfo
		if strings.HasPrefix(s.missReason, "corrupt") || strings.HasPrefix(s.missReason, "unreadable") {
			level = slog.LevelWarn
		}
		opt.Log.Log(context.Background(), level, "weight cache miss", "file", s.file, "weight_path", opt.Path, "reason", s.missReason)
	}
	return s, nil
}

// identity lists the metadata a cache file must hold to be used: what
// it was made from, for which path and kernel layout, by which version
// of the format and the conversion policy.
func (s *Store) identity() [][2]string {
	return [][2]string{
		{keyVersion, fmt.Sprintf("%d.%d", formatVersion, policyVersion)},
		{keyFingerprint, s.fingerprint},
		{keyPath, string(s.opt.Path)},
		{keyLayout, kernels.LayoutKey()},
	}
}

// layoutTag is the short name of the kernels' layout in the file name
// (tier and packed layout version): each tier keeps its own file, so
// alternating tiers do not rebuild one file; the metadata holds the full
// key.
func layoutTag() string { return strings.Fields(kernels.LayoutKey())[0] }

// openCache maps the cache file and checks it (its format version, its
// bytes against their checksums, then what it was made from and for), or
// says why it cannot be used.
func (s *Store) openCache() (*gguf.File, string) {
	if _, err := os.Stat(s.file); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, "no cache file yet for this source, weight path and kernel layout"
		}
		return nil, err.Error()
	}
	f, err := gguf.Open(s.file)
	if err != nil {
		return nil, "unreadable: " + err.Error()
	}
	// The version first: a file of another format has no table to check.
	id := s.identity()
	check := func(kv [2]string) string {
		if got, _ := f.String(kv[0]); got != kv[1] {
			return fmt.Sprintf("stale: %s is %q, want %q", kv[0], got, kv[1])
		}
		return ""
	}
	reason := check(id[0])
	var v verdict
	if reason == "" {
		v = verify(f, func(crc uint32) bool { return sealed(s.file, crc) })
		reason = v.reason
	}
	for _, kv := range id[1:] {
		if reason == "" {
			reason = check(kv)
		}
	}
	if reason != "" {
		f.Close()
		unseal(s.file)
		return nil, reason
	}
	s.fullCheck = v.full
	if v.full {
		if err := seal(s.file, v.tableCRC); err != nil {
			s.opt.Log.Warn("weight cache not sealed: the next start checks every byte again", "file", s.file, "error", err)
		}
	}
	return f, ""
}

// Path is the weight path.
func (s *Store) Path() Path { return s.opt.Path }

// Hit reports whether the weights come from a valid cache file.
func (s *Store) Hit() bool { return s.cache != nil }

// File is the cache file's path ("" when the cache is off).
func (s *Store) File() string { return s.file }

// MissReason says why the cache was not used ("" on a hit).
func (s *Store) MissReason() string { return s.missReason }

// MappedData lists the mapped cache's tensors (nil on a miss), for a
// memory ledger.
func (s *Store) MappedData() [][]byte {
	if s.cache == nil {
		return nil
	}
	out := make([][]byte, len(s.cache.Tensors))
	for i := range s.cache.Tensors {
		out[i] = s.cache.Tensors[i].Data
	}
	return out
}

// ConvertedBytes is the heap held by weights converted at this start.
func (s *Store) ConvertedBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.converted
}

// Matrix returns the matrix the kernels should use for m (a weight as
// the source holds it): converted to the weight path and prepared
// (packed) for the kernels, from the cache when it holds it. A converted
// matrix the kernels read packed is held only packed (nil Data).
func (s *Store) Matrix(m *tensor.Matrix, r model.Role) (*tensor.Matrix, error) {
	target := Target(s.opt.Path, r, m.Type, m.Cols)
	pack := packs(m, r, target)
	if s.cache != nil {
		w, reason := s.fromCache(m, target, pack)
		if reason == "" {
			return w, nil
		}
		// The file does not hold this matrix as the kernels need it:
		// convert it now, and drop the file at Finish so that the next
		// start rebuilds it whole.
		s.opt.Log.Warn("weight cache cannot supply a tensor; converting it at this start", "file", s.file, "tensor", m.Name, "reason", reason)
		s.mu.Lock()
		s.bad = true
		s.mu.Unlock()
	}
	w := m
	var packed []byte
	switch {
	case target == m.Type && pack:
		kernels.Prepare(w)
		packed = kernels.Packed(w)
	case target != m.Type:
		var k *kernels.Packer
		if pack {
			k = kernels.NewPacker(target, m.Rows, m.Cols)
		}
		var err error
		if w, err = convert(m, target, k); err != nil {
			return nil, err
		}
		if k != nil {
			packed = k.Data()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.matrices++
	if w != m && packed == nil {
		s.converted += int64(len(w.Data))
		s.pending = append(s.pending, pendingTensor{w.Name, w.Type, []uint64{uint64(w.Cols), uint64(w.Rows)}, w.Data, ""})
	}
	if packed != nil {
		s.packed += int64(len(packed))
		s.pending = append(s.pending, pendingTensor{w.Name + packedSuffix, tensor.I8, []uint64{uint64(len(packed))}, packed, packedOf(w)})
	}
	return w, nil
}

// packs reports whether the kernels read m, converted to target, packed:
// the tier packs that type and the matrix is multiplied (not only looked
// up by rows).
func packs(m *tensor.Matrix, r model.Role, target tensor.Type) bool {
	return !r.LookupOnly() && m.Rows > 0 && m.Cols > 0 && kernels.PackedLayout(target) != ""
}

// fromCache returns m as the cache holds it for the kernels, or why it
// cannot.
func (s *Store) fromCache(m *tensor.Matrix, target tensor.Type, pack bool) (*tensor.Matrix, string) {
	if !pack {
		if target == m.Type {
			return m, ""
		}
		t, ok := s.cache.Tensor(m.Name)
		if !ok {
			return nil, "no row-major " + m.Name
		}
		if t.Type != target || len(t.Dims) != 2 || t.Dims[0] != uint64(m.Cols) || t.Dims[1] != uint64(m.Rows) {
			return nil, fmt.Sprintf("tensor %s is %s %v, want %s [%d %d]", m.Name, t.Type, t.Dims, target, m.Cols, m.Rows)
		}
		return &tensor.Matrix{Name: m.Name, Type: t.Type, Rows: m.Rows, Cols: m.Cols, Data: t.Data}, ""
	}
	p, ok := s.cache.Tensor(m.Name + packedSuffix)
	if !ok {
		return nil, "no packed " + m.Name
	}
	w := m
	if target != m.Type {
		// Held only packed, as it was written.
		w = &tensor.Matrix{Name: m.Name, Type: target, Rows: m.Rows, Cols: m.Cols}
	}
	if of, _ := s.cache.String(keyPackedType + p.Name); p.Type != tensor.I8 || len(p.Dims) != 1 || of != packedOf(w) {
		return nil, fmt.Sprintf("tensor %s is %s %v packing %q, want a 1-D I8 array packing %s", p.Name, p.Type, p.Dims, of, packedOf(w))
	}
	// Adopt checks the size against this tier's layout of target.
	if err := kernels.Adopt(w, p.Data); err != nil {
		return nil, err.Error()
	}
	return w, ""
}

// convert dequantizes m row by row and quantizes it to typ, on all cores:
// into a row-major matrix, or, with a Packer k for typ and m's shape,
// eight rows at a time into k's packed copy, which becomes the only copy
// of the matrix returned (its row-major form is never held in full).
func convert(m *tensor.Matrix, typ tensor.Type, k *kernels.Packer) (*tensor.Matrix, error) {
	stride, err := tensor.RowBytes(typ, m.Cols)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, err)
	}
	w := &tensor.Matrix{Name: m.Name, Type: typ, Rows: m.Rows, Cols: m.Cols}
	span, chunks := 1, m.Rows
	if k != nil {
		span, chunks = 8, k.Groups()
	} else {
		w.Data = make([]byte, stride*m.Rows)
	}
	src := m.RowStride()
	n := runtime.GOMAXPROCS(0)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			x := make([]float32, m.Cols)
			var buf []byte
			if k != nil {
				buf = make([]byte, span*stride)
			}
			for c := g; c < chunks && errs[g] == nil; c += n {
				r0, r1 := c*span, min((c+1)*span, m.Rows)
				out := w.Data
				if k != nil {
					out = buf[:(r1-r0)*stride]
				} else {
					out = out[r0*stride : r1*stride]
				}
				for r := r0; r < r1 && errs[g] == nil; r++ {
					if err := tensor.Dequantize(x, m.Type, m.Data[r*src:(r+1)*src]); err != nil {
						errs[g] = err
					} else {
						errs[g] = quantizeRow(out[(r-r0)*stride:(r-r0+1)*stride], typ, x)
					}
				}
				if k != nil && errs[g] == nil {
					k.Group(c, out)
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: converting to %s: %w", m.Name, typ, err)
	}
	if k != nil {
		k.Register(w)
	}
	return w, nil
}

// quantizeRow encodes a row in a weight-path type, or in a GGUF type with
// llama.cpp's reference quantizer.
func quantizeRow(dst []byte, typ tensor.Type, x []float32) error {
	if typ.IsWeightPath() {
		return QuantizeRow(dst, typ, x)
	}
	return quantize.QuantizeRow(dst, typ, x)
}

// Finish writes the cache file after a miss (atomically: a temporary
// file renamed into place), and logs what the start did. A failure to
// write is logged and returned; the loaded weights stay usable.
func (s *Store) Finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache != nil {
		s.pending = nil
		if s.bad {
			// The mapping stays valid once the name is gone.
			unseal(s.file)
			err := os.Remove(s.file)
			s.opt.Log.Warn("weight cache removed: it could not supply every tensor, and is rebuilt at the next start", "file", s.file, "error", err)
			return err
		}
		s.opt.Log.Info("weights mapped from the cache", "file", s.file, "bytes", s.cache.FileBytes(), "seconds", time.Since(s.start).Seconds())
		return nil
	}
	took := time.Since(s.start)
	if s.file == "" || len(s.pending) == 0 {
		s.opt.Log.Info("weights prepared", "weight_path", s.opt.Path, "matrices", s.matrices, "seconds", took.Seconds(), "cached", false)
		s.pending = nil
		return nil
	}
	err := s.write()
	s.pending = nil
	if err != nil {
		s.opt.Log.Warn("weight cache not written", "file", s.file, "error", err)
		return err
	}
	s.opt.Log.Info("weights converted and cached", "weight_path", s.opt.Path, "matrices", s.matrices,
		"converted_bytes", s.converted, "packed_bytes", s.packed, "seconds", took.Seconds(), "file", s.file)
	return nil
}

func (s *Store) write() error {
	b := gguf.NewBuilder()
	b.Add("general.alignment", uint32(alignment))
	b.Add(keySource, s.src)
	for _, kv := range s.identity() {
		b.Add(kv[0], kv[1])
	}
	data := make([][]byte, len(s.pending))
	chunks := 1 // the header's
	for _, t := range s.pending {
		if t.typ == tensor.I8 {
			b.Add(keyPackedType+t.name, t.of)
		}
	}
	for i, t := range s.pending {
		b.AddTensor(t.name, t.typ, t.dims, t.data)
		data[i] = t.data
		chunks += chunkCount(len(t.data))
	}
	table := make([]byte, 4*chunks)
	b.AddTensor(checksumTensor, tensor.I32, []uint64{uint64(chunks)}, table)
	checksums(b, data, table)
	if err := os.MkdirAll(filepath.Dir(s.file), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(s.file), ".weights-*.tmp")
	if err != nil {
		return err
	}
	w := mmap.NewWriter(f, 0)
	_, err = b.WriteTo(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	unseal(s.file)
	if err == nil {
		err = os.Rename(f.Name(), s.file)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	// Every byte just came from memory whose checksums are in the table.
	if err := seal(s.file, tableCRC(table)); err != nil {
		s.opt.Log.Warn("weight cache not sealed: the next start checks every byte again", "file", s.file, "error", err)
	}
	return nil
}

// Close unmaps the cache file; the matrices it gave must be released
// from the kernels first.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil {
		return nil
	}
	err := s.cache.Close()
	s.cache = nil
	return err
}
