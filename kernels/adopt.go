package kernels

import (
	"fmt"
	"unsafe"

	"github.com/siskin-ml/siskin/tensor"
)

// Packed weights kept outside the heap.
//
// Repacking a whole model at every start costs about a second for a
// 1.7B model; a weight cache (package weightpath) stores the packed bytes
// on disk instead and hands them back here, memory-mapped, so a second
// start only maps them. PackedLayout names the layout so that a cache
// made by another tier or an older layout is never used.

// packLayoutVersion changes whenever a packed layout (packlayout.go)
// changes, so caches written with the old layout are refused.
const packLayoutVersion = 1

// PackedLayout names the layout Prepare gives a matrix of type typ in the
// tier in use ("" when that tier keeps typ row-major).
func PackedLayout(typ tensor.Type) string {
	t := tier(current.Load())
	k := kernelSets[t][typ]
	if k == nil || k.packed == nil {
		return ""
	}
	return fmt.Sprintf("%s-pack%d-v%d", t, packRows, packLayoutVersion)
}

// Packed returns the packed bytes of a prepared matrix (nil when w is not
// prepared for the tier in use). They must not be modified.
func Packed(w *tensor.Matrix) []byte {
	if p := lookupPrepared(w); p != nil {
		return p.data
	}
	return nil
}

// Adopt registers data, bytes that Prepare made for a matrix of w's type
// and shape in this tier (as returned by Packed), as w's packed copy
// without copying it. data must stay valid and unchanged until Release(w)
// and is not counted in PreparedBytes (the caller accounts for it, e.g.
// as a mapped file). When w.Data is nil, data is w's only copy.
func Adopt(w *tensor.Matrix, data []byte) error {
	if w.Data == nil {
		checkShape(w)
	} else {
		checkWeights(w)
	}
	p := plan(w)
	if p == nil {
		return fmt.Errorf("kernels: %s: %s weights are not packed in the %s tier", w.Name, w.Type, Tier())
	}
	if len(data) != p.groups*p.gstride {
		return fmt.Errorf("kernels: %s: %d packed bytes, want %d for %dx%d %s", w.Name, len(data), p.groups*p.gstride, w.Rows, w.Cols, w.Type)
	}
	p.data, p.adopted, p.only = data, true, w.Data == nil
	register(w, p)
	return nil
}

// plan returns the geometry of w's packed copy in the tier in use, or nil
// when w is not packed there.
func plan(w *tensor.Matrix) *prepared {
	t := tier(current.Load())
	k := kernelSets[t][w.Type]
	if k == nil || k.packed == nil || w.Rows == 0 || w.Cols == 0 {
		return nil
	}
	// The kernels see blocks of the layout type (32-blocks for W4A8/W8A8).
	lt := packLayout(w.Type)
	bs, bb := lt.BlockSize(), lt.BlockBytes()
	p := &prepared{
		tier: t, typ: w.Type, rows: w.Rows, cols: w.Cols,
		src: unsafe.SliceData(w.Data), srcLen: len(w.Data),
		pk:     k.packed,
		blocks: w.Cols / bs, groups: (w.Rows + packRows - 1) / packRows,
		fullGroups: w.Rows / packRows,
	}
	p.gstride = p.blocks * packRows * bb
	return p
}

// register makes p w's packed copy, replacing any earlier one.
func register(w *tensor.Matrix, p *prepared) {
	registryMu.Lock()
	if old, ok := registry.Swap(w, p); ok && !old.(*prepared).adopted {
		preparedBytes.Add(-int64(len(old.(*prepared).data)))
	}
	if !p.adopted {
		preparedBytes.Add(int64(len(p.data)))
	}
	registryMu.Unlock()
}
