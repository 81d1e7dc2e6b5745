package kernels

import (
	"fmt"
	"strings"

	"github.com/siskin-ml/siskin/tensor"
)

// Matrices held only packed.
//
// Weights converted at load (package weightpath) are needed by the
// kernels only in the packed layout, so a Packer builds that copy eight
// rows at a time and the matrix never exists row-major in full: its Data
// stays nil. MatMul, MatMulQ and MatVec use the packed copy; Row and
// MatVecFloat unpack rows from it (packing only moves bytes, so it is
// exact). Such a matrix runs only in the tier that packed it.

// A Packer builds the packed copy of a rows x cols matrix of one type in
// the tier in use, group by group (8 rows); groups may be packed
// concurrently.
type Packer struct {
	p      *prepared
	stride int // bytes per row-major row
}

// NewPacker returns a Packer for a rows x cols matrix of type typ, or nil
// when the tier in use does not pack typ.
func NewPacker(typ tensor.Type, rows, cols int) *Packer {
	w := &tensor.Matrix{Type: typ, Rows: rows, Cols: cols}
	stride := checkShape(w)
	p := plan(w)
	if p == nil {
		return nil
	}
	p.data = packAlloc(p.groups * p.gstride)
	p.only = true
	return &Packer{p: p, stride: stride}
}

// Groups is the number of 8-row groups.
func (k *Packer) Groups() int { return k.p.groups }

// GroupRows is the number of rows of group g (8, or fewer in the last).
func (k *Packer) GroupRows(g int) int { return min(packRows, k.p.rows-g*packRows) }

// Group packs group g from rows, its GroupRows(g) rows row-major.
func (k *Packer) Group(g int, rows []byte) {
	nr := k.GroupRows(g)
	if g < 0 || nr <= 0 || len(rows) != nr*k.stride {
		panic(fmt.Sprintf("kernels: packing group %d from %d bytes (%d rows of %d)", g, len(rows), nr, k.stride))
	}
	p := k.p
	p.packer()(p.typ, p.data[g*p.gstride:(g+1)*p.gstride], rows, k.stride, nr, p.cols/p.typ.BlockSize())
}

// Data is the packed copy (for a cache file).
func (k *Packer) Data() []byte { return k.p.data }

// Register makes the packed copy w's only copy (counted in
// PreparedBytes until Release(w)); w must have the Packer's type and
// shape, and nil Data. Every group must have been packed; a Packer is
// registered once.
func (k *Packer) Register(w *tensor.Matrix) {
	p := k.p
	if w.Data != nil || w.Type != p.typ || w.Rows != p.rows || w.Cols != p.cols {
		panic(fmt.Sprintf("kernels: %s: a packed copy of %dx%d %s for a %dx%d %s with %d bytes of data", w.Name, p.rows, p.cols, p.typ, w.Rows, w.Cols, w.Type, len(w.Data)))
	}
	register(w, p)
}

// Row returns the bytes of row i of w as w.Row(i) gives them: w's own
// when it has them, otherwise unpacked from its packed copy into dst
// (w.RowStride() bytes), which is returned.
func Row(dst []byte, w *tensor.Matrix, i int) []byte {
	if i < 0 || i >= w.Rows {
		panic(fmt.Sprintf("kernels: %s: row %d of %d", w.Name, i, w.Rows))
	}
	if len(w.Data) != 0 {
		return w.Row(i)
	}
	checkWeights(w)
	p := registered(w)
	dst = dst[:w.RowStride()]
	unpackRow(dst, p, i)
	return dst
}

// unpackRow writes row i of the packed copy p into dst, undoing
// packGroup's moves (a weight-path group's d, copied into each of its
// group blocks, is read from each in turn: the copies are equal).
func unpackRow(dst []byte, p *prepared, i int) {
	typ := p.typ
	lt := packLayout(typ)
	bb, blocks := typ.BlockBytes(), p.cols/typ.BlockSize()
	gb := packRows * lt.BlockBytes() * (typ.BlockSize() / lt.BlockSize())
	g, r := i/packRows, i%packRows
	grp := p.data[g*p.gstride : (g+1)*p.gstride]
	if p.pk.pack != nil { // packRowMajor: row r holds sub blocks per group block
		sub, lbb := typ.BlockSize()/lt.BlockSize(), lt.BlockBytes()
		row := grp[r*blocks*sub*lbb : (r+1)*blocks*sub*lbb]
		for b := 0; b < blocks; b++ {
			blk := dst[b*bb : (b+1)*bb]
			copy(blk[:2], row[b*sub*lbb:])
			for s := 0; s < sub; s++ {
				o := row[(b*sub+s)*lbb : (b*sub+s+1)*lbb]
				copy(blk[2+s*(lbb-2):2+(s+1)*(lbb-2)], o[2:])
			}
		}
		return
	}
	for b := 0; b < blocks; b++ {
		blk, gblk := dst[b*bb:(b+1)*bb], grp[b*gb:(b+1)*gb]
		for _, m := range packMoves[typ] {
			copy(blk[m.src:m.src+m.size], gblk[m.dst+m.size*r:])
		}
	}
}

// LayoutKey names everything that decides how the tier in use holds
// prepared weights: the tier, the packed layout's version, and the types
// it packs (the others stay row-major). A weight cache made under another
// key holds other layouts and must not be used.
func LayoutKey() string {
	var packed []string
	for _, t := range allTypes {
		if PackedLayout(t) != "" {
			packed = append(packed, t.String())
		}
	}
	if len(packed) == 0 {
		return Tier() + " row-major"
	}
	return fmt.Sprintf("%s-pack%d-v%d %s packed", Tier(), packRows, packLayoutVersion, strings.Join(packed, ","))
}

// allTypes are the weight types the kernels multiply.
var allTypes = []tensor.Type{tensor.F32, tensor.F16, tensor.BF16, tensor.Q4_0, tensor.Q4_1, tensor.Q8_0,
	tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.W4A8, tensor.W4A16, tensor.W8A8, tensor.W16A16}
