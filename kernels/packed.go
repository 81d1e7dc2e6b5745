package kernels

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/siskin-ml/siskin/tensor"
)

// Prepared (packed) weights.
//
// Prepare repacks a weight matrix once into the layout the current tier's
// fastest kernels stream (packlayout.go): 8 rows interleaved, so a
// register holds the partial sums of 8 output rows and the integer sums
// of a sub-block stay in 16 bits until one multiply by the scales. MatMul
// and MatVec recognize a prepared matrix and use the packed kernels for
// every batch size, so a batched row stays bit-identical to MatVec of
// that row; they differ from the row-major kernels of the same tier (used
// for matrices that were not prepared) only by float rounding, within the
// same bounds against the generic reference. Packed kernels exist for
// Q4_0, Q8_0, Q4_K, Q5_K and Q6_K weights in the AVX2 tier (and the
// AVX-512 tier, same layout, same bits), which also run W4A8 and W8A8
// packed as Q4_0 and Q8_0 (packlayout.go) (for F16 and BF16
// the row-major kernels, 3 weight rows by 4 activation rows, were faster
// than a packed form). Batches run eight activation rows per weight load
// where the tier has an eight-row kernel (AVX-512: every packed type,
// vnni8_amd64.go; AVX2: Q6_K), four otherwise, and the last rows one at a
// time, or padded to eight with zero rows where that measured faster
// (packedKernel.pad8). On AMX CPUs Q4_K and Q6_K first take 32 rows at
// a time on the tiles, Q4_0 and Q8_0 16 (amx_amd64.go). The arm64 tiers
// pack only W4A8 and W8A8, into row-major Q4_0 and Q8_0 rows their
// row-major kernels read (packRowMajor).
//
// The packed copy is a separate allocation the size of the weights (plus
// up to 7 zero rows; W4A8/W8A8 grow by their scale copies); PreparedBytes reports the total so that a memory
// ledger can name it. Once a matrix is prepared the kernels no longer
// read its original bytes (an mmapped file's pages can be dropped by the
// OS), but the Matrix still refers to them, so Dequantize, Row and the
// float path keep working.
//
// A matrix may also have only its packed copy (Data nil; packonly.go):
// weights converted at load are never held row-major twice. Row then
// unpacks the rows that row-wise readers (an embedding lookup) need.

// packedKernel is one tier's kernel for prepared weights of one type.
type packedKernel struct {
	// vec1 sets out[8g+l], for groups g < groups, to row 8g+l of the
	// packed weights w (groups consecutive groups of blocks group blocks
	// each) times the activation row x (in the tier's layout).
	vec1 func(out []float32, w []byte, groups, blocks int, x []byte)
	// vec4 does the same for the four activation rows x[i*xstride:],
	// writing out[i*ostride+8g+l]; every result is bit-identical to
	// vec1's.
	vec4 func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int)
	// vec8, if not nil, is vec4 for eight activation rows.
	vec8 func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int)
	// wide, if not nil, is vec4 for rows activation rows, a multiple of
	// wideRows (the AMX kernels: 32 for Q4_K and Q6_K, 16 for Q4_0 and
	// Q8_0).
	wide     func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride, rows int)
	wideRows int
	// wideTile is the fewest activation rows of a tile for wide: it
	// unpacks its weights once for all the rows of a call, and wide
	// matrices' share of packActTileBytes left few rows to share them
	// (0 without wide).
	wideTile int
	// pad8, if not 0, is the fewest rows of a batch's last incomplete
	// eight that run through vec8 with zero rows added (padTail), rather
	// than four and one at a time.
	pad8 int
	// quad: vec8 runs groups four at a time best (tiles of groups are
	// then a multiple of four).
	quad bool
	// pack, if not nil, replaces packGroup (a tier whose kernels read
	// another layout of the same size: packRowMajor).
	pack func(typ tensor.Type, dst, src []byte, stride, nrows, blocks int)
}

// packer is the function that packs a group of p's rows in its tier.
func (p *prepared) packer() func(typ tensor.Type, dst, src []byte, stride, nrows, blocks int) {
	if p.pk.pack != nil {
		return p.pk.pack
	}
	return packGroup
}

type prepared struct {
	tier               tier
	typ                tensor.Type
	rows, cols         int
	src                *byte // w.Data when prepared
	srcLen             int
	pk                 *packedKernel
	data               []byte // the packed groups
	adopted            bool   // data came from Adopt (not counted in preparedBytes)
	only               bool   // data is the matrix's only copy (w.Data is nil)
	blocks, gstride    int    // blocks per row, bytes per group of 8 rows
	groups, fullGroups int    // groups, and groups whose 8 rows all exist
}

var (
	registry      sync.Map // *tensor.Matrix -> *prepared
	registryMu    sync.Mutex
	preparedBytes atomic.Int64
)

// packAlloc returns n zero bytes for a packed copy (tests replace it to
// put the copy before a guard page).
var packAlloc = func(n int) []byte {
	b := make([]byte, n+64)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b)))) & 63
	return b[off : off+n : off+n]
}

// Prepare packs w for the kernel tier in use and registers the packed
// copy, so that MatMul, MatMulQ and MatVec on w (this pointer) use it; it
// returns w. It does nothing for weight types without packed kernels
// (F32, F16, BF16, Q4_1, Q5_K, W4A16) or in the generic tier, and nothing more
// for a matrix already prepared for this tier. w's shape and Data must not
// change while it is prepared; call Release before the memory behind
// w.Data goes away (an mmapped file is unmapped), or to free the copy.
// Packing runs on the worker pool.
func Prepare(w *tensor.Matrix) *tensor.Matrix {
	checkWeights(w)
	if lookupPrepared(w) != nil {
		return w
	}
	p := plan(w)
	if p == nil {
		return w
	}
	p.data = packAlloc(p.groups * p.gstride)
	stride := w.RowStride()
	pack := p.packer()
	parallelFor(funcTask(func(lo, hi int) {
		for g := lo; g < hi; g++ {
			nr := min(packRows, w.Rows-g*packRows)
			pack(w.Type, p.data[g*p.gstride:(g+1)*p.gstride], w.Data[g*packRows*stride:], stride, nr, w.Cols/w.Type.BlockSize())
		}
	}), p.groups, p.gstride, 1)
	register(w, p)
	return w
}

// Release drops w's packed copy (if any); MatMul on w then reads w.Data
// with the row-major kernels (a matrix that had only its packed copy
// can no longer be used).
func Release(w *tensor.Matrix) {
	registryMu.Lock()
	if old, ok := registry.LoadAndDelete(w); ok && !old.(*prepared).adopted {
		preparedBytes.Add(-int64(len(old.(*prepared).data)))
	}
	registryMu.Unlock()
}

// PreparedBytes is the memory held by the packed copies of prepared
// matrices.
func PreparedBytes() int64 { return preparedBytes.Load() }

// ReadBytes is how many bytes a product with w streams: its packed copy
// where it has one for the tier in use (W4A8 and W8A8 pack to 72/66 and
// 136/130 of their row-major size, the other types to the same size, a
// last partial group of rows padded), its row-major rows otherwise.
func ReadBytes(w *tensor.Matrix) int64 {
	if p := lookupPrepared(w); p != nil {
		return int64(len(p.data))
	}
	return int64(w.RowStride()) * int64(w.Rows)
}

// IsPrepared reports whether MatMul on w uses a packed copy (prepared for
// the tier in use).
func IsPrepared(w *tensor.Matrix) bool { return lookupPrepared(w) != nil }

// lookupPrepared returns w's packed copy if it was made for the current
// tier and w still has the shape and data it was made from.
func lookupPrepared(w *tensor.Matrix) *prepared {
	p := registered(w)
	if p == nil || p.tier != tier(current.Load()) {
		return nil
	}
	return p
}

// registered returns w's packed copy, made in any tier, if w still has
// the shape and data it was made from.
func registered(w *tensor.Matrix) *prepared {
	v, ok := registry.Load(w)
	if !ok {
		return nil
	}
	p := v.(*prepared)
	if p.typ != w.Type || p.rows != w.Rows || p.cols != w.Cols ||
		p.src != unsafe.SliceData(w.Data) || p.srcLen != len(w.Data) {
		return nil
	}
	return p
}

// checkWeights panics unless w's data matches its type and shape, or w
// has only a packed copy, made in the tier in use.
func checkWeights(w *tensor.Matrix) {
	stride := checkShape(w)
	if len(w.Data) == stride*w.Rows {
		return
	}
	if len(w.Data) == 0 {
		if p := registered(w); p != nil && p.only {
			if p.tier != tier(current.Load()) {
				// Its only copy is in another tier's layout.
				panic(fmt.Sprintf("kernels: %s: packed for the %s tier only, %s in use", w.Name, p.tier, Tier()))
			}
			return
		}
	}
	panic(fmt.Sprintf("kernels: %s: %d bytes of data for %dx%d %s", w.Name, len(w.Data), w.Rows, w.Cols, w.Type))
}

// checkShape panics unless w's type is supported and its rows are whole
// blocks; it returns the bytes per row.
func checkShape(w *tensor.Matrix) int {
	if !w.Type.Supported() {
		panic(fmt.Sprintf("kernels: %s: unsupported weight type %s", w.Name, w.Type))
	}
	stride, err := tensor.RowBytes(w.Type, w.Cols)
	if err != nil {
		panic(fmt.Sprintf("kernels: %s: %v", w.Name, err))
	}
	return stride
}

// Blocking of the packed products: for n > 1 groups are taken
// packTileBytes of weights at a time, an even number of them (the AVX-512
// kernels take two groups at a time), and stay in L2 while every activation row
// of the tile passes over them, four at a time from L1, and activation
// rows are taken actTileBytes at a time.
var packTileBytes, packActTileBytes = 96 << 10, actTileBytes

type packedTask struct {
	p       *prepared
	out     []float32
	n       int
	x       []byte
	xs      int
	actTile int
	gTile   int
	// tail is the first of the last n%8 activation rows when they run
	// through the eight-row kernel as xpad, a copy with zero rows up to
	// eight (padTail); n otherwise.
	tail int
	xpad *[]byte
	// tmp receives the incomplete last group (only the thread whose
	// range holds that group uses it).
	tmp [8 * packRows]float32
}

// padRows, if not 0, replaces every kernel's pad8 (tests, benchmarks).
var padRows = 0

// quadVec8 lets the eight-row kernels that take four groups at a time
// run where a tier has them (vnni8_amd64.go decides per CPU; tests set
// it both ways).
var quadVec8 = true

// ntaStream makes decode's AVX-512 kernels that stream what they read
// once (the one-row Q4_K, Q6_K and Q4_0 products, attention's heads
// kernels) run their variants that prefetch with PREFETCHNTA
// (avx512_amd64.go decides per CPU; tests set it both ways).
var ntaStream = false

// avx2OneRow makes the AVX-512 tier's one-activation-row products
// (decode's) of packed, F16 and BF16 weights run the AVX2 tier's
// kernels, which give the same bits (avx512_amd64.go decides per CPU;
// tests set it both ways).
var avx2OneRow = false

var (
	padActs   = sync.Pool{New: func() any { return new([]byte) }}
	padOutput = sync.Pool{New: func() any { return new([]float32) }}
)

// padTail sets up the padded tail of t (set has run): the last n%8 rows
// of t.x copied to a buffer of 8 rows, the rest zero (their products are
// zero and never stored).
func (t *packedTask) padTail() {
	t.tail = t.n
	from := t.p.pk.pad8
	if padRows != 0 {
		from = padRows
	}
	if t.p.pk.vec8 == nil || from == 0 || t.n%8 < from {
		return
	}
	t.tail = t.n - t.n%8
	b := padActs.Get().(*[]byte)
	if cap(*b) < 8*t.xs {
		*b = make([]byte, 8*t.xs)
	}
	*b = (*b)[:8*t.xs]
	k := copy(*b, t.x[t.tail*t.xs:t.n*t.xs])
	clear((*b)[k:])
	t.xpad = b
}

// release returns t's padded tail buffer.
func (t *packedTask) release() {
	if t.xpad != nil {
		padActs.Put(t.xpad)
	}
}

// paddedGroups runs the complete groups [g0, g1) for the padded tail
// rows through a scratch output.
func (t *packedTask) paddedGroups(w []byte, g0, g1 int) {
	p, m := t.p, (g1-g0)*packRows
	b := padOutput.Get().(*[]float32)
	if cap(*b) < 8*m {
		*b = make([]float32, 8*m)
	}
	tmp := (*b)[:8*m]
	p.pk.vec8(tmp, m, w, g1-g0, p.blocks, *t.xpad, t.xs)
	for j := 0; j < t.n-t.tail; j++ {
		o := (t.tail+j)*p.rows + g0*packRows
		copy(t.out[o:o+m], tmp[j*m:(j+1)*m])
	}
	padOutput.Put(b)
}

func (t *packedTask) run(lo, hi int) {
	p := t.p
	for a0 := 0; a0 < t.n; a0 += t.actTile {
		a1 := min(a0+t.actTile, t.n)
		for g0 := lo; g0 < hi; g0 += t.gTile {
			g1 := min(g0+t.gTile, hi)
			if f := min(g1, p.fullGroups); f > g0 {
				t.groups(g0, f, a0, a1)
			}
			if g1 > p.fullGroups {
				t.last(a0, a1)
			}
		}
	}
}

// groups runs the complete groups [g0, g1) for activation rows [a0, a1).
func (t *packedTask) groups(g0, g1, a0, a1 int) {
	p, rows, xs := t.p, t.p.rows, t.xs
	w := p.data[g0*p.gstride : g1*p.gstride]
	i := a0
	if a1 > t.tail {
		t.paddedGroups(w, g0, g1)
		a1 = t.tail
	}
	if p.pk.wide != nil {
		if n := (a1 - i) / p.pk.wideRows * p.pk.wideRows; n > 0 {
			p.pk.wide(t.out[i*rows+g0*packRows:], rows, w, g1-g0, p.blocks, t.x[i*xs:], xs, n)
			i += n
		}
	}
	if p.pk.vec8 != nil {
		for ; i+8 <= a1; i += 8 {
			p.pk.vec8(t.out[i*rows+g0*packRows:], rows, w, g1-g0, p.blocks, t.x[i*xs:], xs)
		}
	}
	for ; i+4 <= a1; i += 4 {
		p.pk.vec4(t.out[i*rows+g0*packRows:], rows, w, g1-g0, p.blocks, t.x[i*xs:], xs)
	}
	for ; i < a1; i++ {
		p.pk.vec1(t.out[i*rows+g0*packRows:i*rows+g1*packRows], w, g1-g0, p.blocks, t.x[i*xs:(i+1)*xs])
	}
}

// last runs the final, incomplete group through a scratch buffer.
func (t *packedTask) last(a0, a1 int) {
	p, rows, xs := t.p, t.p.rows, t.xs
	g := p.fullGroups
	w := p.data[g*p.gstride : (g+1)*p.gstride]
	nr := rows - g*packRows
	tmp := t.tmp[:]
	i := a0
	if a1 > t.tail {
		p.pk.vec8(tmp, packRows, w, 1, p.blocks, *t.xpad, xs)
		for j := 0; j < t.n-t.tail; j++ {
			copy(t.out[(t.tail+j)*rows+g*packRows:(t.tail+j)*rows+rows], tmp[j*packRows:j*packRows+nr])
		}
		a1 = t.tail
	}
	if p.pk.vec8 != nil {
		for ; i+8 <= a1; i += 8 {
			p.pk.vec8(tmp, packRows, w, 1, p.blocks, t.x[i*xs:], xs)
			for j := 0; j < 8; j++ {
				copy(t.out[(i+j)*rows+g*packRows:(i+j)*rows+rows], tmp[j*packRows:j*packRows+nr])
			}
		}
	}
	for ; i+4 <= a1; i += 4 {
		p.pk.vec4(tmp, packRows, w, 1, p.blocks, t.x[i*xs:], xs)
		for j := 0; j < 4; j++ {
			copy(t.out[(i+j)*rows+g*packRows:(i+j)*rows+rows], tmp[j*packRows:j*packRows+nr])
		}
	}
	for ; i < a1; i++ {
		p.pk.vec1(tmp[:packRows], w, 1, p.blocks, t.x[i*xs:(i+1)*xs])
		copy(t.out[i*rows+g*packRows:i*rows+rows], tmp[:nr])
	}
}

var packedTasks = sync.Pool{New: func() any { return new(packedTask) }}

// mulPacked runs the product of prepared weights p with n activation rows
// xq (xs bytes each, in the tier's layout).
func mulPacked(out []float32, p *prepared, xq []byte, xs, n int) {
	t := packedTasks.Get().(*packedTask)
	grain := t.set(out, p, xq, xs, n)
	parallelFor(t, p.groups, n*p.cols*packRows, grain)
	t.release()
	*t = packedTask{}
	packedTasks.Put(t)
}

// set makes t the product of p with n activation rows xq (xs bytes each)
// into out; it returns the grain of its group range.
func (t *packedTask) set(out []float32, p *prepared, xq []byte, xs, n int) int {
	step := 2
	if p.pk.quad {
		step = 4
	}
	*t = packedTask{p: p, out: out, n: n, x: xq, xs: xs, actTile: 1, gTile: max(step, packTileBytes/p.gstride/step*step)}
	t.padTail()
	if n == 1 {
		// One activation row reads each group once: no tile to keep in
		// L2, so a chunk of the job is one kernel call (its weights one
		// run of streams, the activations set up once).
		t.gTile = max(2, (p.groups+1)&^1)
		return 4
	}
	rows := 8
	if p.pk.wide != nil {
		rows = p.pk.wideRows
	}
	t.actTile = max(rows, packActTileBytes/max(xs, 1)/rows*rows, p.pk.wideTile)
	return t.gTile
}

// multiPackedTask runs the products of several prepared weights with the
// same activations as one job over their groups laid end to end.
type multiPackedTask struct {
	parts []packedTask
	start []int // part i has groups [start[i], start[i+1])
}

func (m *multiPackedTask) run(lo, hi int) {
	for i := range m.parts {
		a, b := max(lo, m.start[i]), min(hi, m.start[i+1])
		if a < b {
			m.parts[i].run(a-m.start[i], b-m.start[i])
		}
	}
}

var multiPackedTasks = sync.Pool{New: func() any { return new(multiPackedTask) }}

// mulPackedMulti sets outs[i] to the product of prepared weights ps[i]
// (all of cols columns) with n activation rows xq, as one parallel job;
// each product has mulPacked's bits.
func mulPackedMulti(outs [][]float32, ps []*prepared, xq []byte, xs, n int) {
	m := multiPackedTasks.Get().(*multiPackedTask)
	m.start = append(m.start[:0], 0)
	grain := 0
	for i, p := range ps {
		m.parts = append(m.parts, packedTask{})
		grain = max(grain, m.parts[i].set(outs[i], p, xq, xs, n))
		m.start = append(m.start, m.start[i]+p.groups)
	}
	parallelFor(m, m.start[len(ps)], n*ps[0].cols*packRows, grain)
	for i := range m.parts {
		m.parts[i].release()
	}
	clear(m.parts)
	m.parts = m.parts[:0]
	multiPackedTasks.Put(m)
}
