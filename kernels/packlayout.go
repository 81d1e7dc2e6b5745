package kernels

import (
	"unsafe"

	"github.com/siskin-ml/siskin/tensor"
)

// Packed weight layouts (see Prepare). Rows are taken in groups of
// packRows = 8; a group stores, for each block of its rows in turn, one
// "group block" holding that block of all 8 rows interleaved so that one
// 32-byte load gives 4 consecutive quants (bytes) of each of the 8 rows:
// byte 4r+i of such a load belongs to row r. A kernel multiplies it with
// the 4 matching activations broadcast to every row, so the 8 rows'
// results accumulate in the 8 lanes of one register (no horizontal sums),
// and 16-bit sums can run over a whole 32-element sub-block before one
// widening multiply by the sub-block scales. The group blocks are exactly
// as large as the 8 rows' blocks (the bytes are only moved), so a packed
// matrix takes the bytes of the original (plus padding rows up to a
// multiple of 8). Missing rows of the last group are zero and their
// results are never stored.
//
// Q4_0 (144 bytes):   [0,128) quants: load k (k<4) at 32k holds row r's
//
//	bytes 4k..4k+3 (low nibbles: elements 4k+i, high: 16+4k+i);
//	[128,144) the 8 fp16 d.
//
// Q8_0 (272 bytes):   [0,256) quants: load k (k<8) at 32k holds row r's
//
//	quants 4k..4k+3; [256,272) the 8 fp16 d.
//
// Q4_K (1152 bytes):  [0,16) d, [16,32) dmin (fp16 per row); [32,128)
//
//	the 12 scale bytes as three 32-byte vectors (bytes 0-3, 4-7, 8-11 of
//	each row at 4r); [128,1152) quants: chunk c (64 elements) at
//	128+256c, load k (k<8) at +32k holds row r's bytes 32c+4k..+3 (low
//	nibbles: elements 64c+4k+i of sub-block 2c, high: 64c+32+4k+i).
//
// Q5_K (1408 bytes):  [0,1152) as Q4_K (its d, dmin, scales and the
//
//	low nibbles of its quants); [1152,1408) the fifth bits: load k (k<8)
//	at 1152+32k holds row r's qh bytes 4k..4k+3 (bit b of qh byte l is
//	the fifth bit of element 32b+l, so one load serves the elements 4k+i
//	of every sub-block).
//
// Q6_K (1680 bytes):  [0,1024) low bits: half n (128 elements) at 512n,
//
//	load k (k<8) at +32k holds row r's ql bytes 64n+4k..+3 and at
//	+256+32k its ql bytes 64n+32+4k..+3; [1024,1536) high bits: half n
//	at 1024+256n, load k at +32k holds row r's qh bytes 32n+4k..+3;
//	[1536,1664) scales: pair p (p<8) at 1536+16p holds row r's scales
//	2p, 2p+1 at 2r; [1664,1680) the 8 fp16 d.
//
// W4A8 and W8A8 are packed as the Q4_0 and Q8_0 matrices holding the same
// values, so the Q4_0/Q8_0 packed kernels run them: each 128-group becomes
// four group blocks, the group's d copied into each (a W4 sub-block's 16
// bytes are exactly a Q4_0 block's quants, a W8 sub-block's 32 int8 a
// Q8_0 block's). The packed copy is then 72/66 (W4A8) or 136/130 (W8A8)
// of the original's size. The arm64 tiers (whose Q4_0/Q8_0 kernels read
// row-major blocks) pack W4A8 and W8A8 into plain row-major Q4_0 and Q8_0
// rows instead, of the same size (packRowMajor).
const packRows = 8

// packedAs maps the types packed in another type's layout to that type.
var packedAs = map[tensor.Type]tensor.Type{tensor.W4A8: tensor.Q4_0, tensor.W8A8: tensor.Q8_0}

// packLayout returns the type whose packed layout (and kernels) weights
// of type t use.
func packLayout(t tensor.Type) tensor.Type {
	if l, ok := packedAs[t]; ok {
		return l
	}
	return t
}

// A packMove copies size (2 or 4) bytes from offset src of each row's
// block to the group block: row r's bytes go to offset dst + size*r.
type packMove struct{ src, dst, size int }

// packMoves lists, for each packed type, the moves that pack one block of
// the rows of a group.
var packMoves = map[tensor.Type][]packMove{}

func init() {
	add := func(typ tensor.Type, src, dst, size int) {
		packMoves[typ] = append(packMoves[typ], packMove{src, dst, size})
	}
	for k := 0; k < 4; k++ {
		add(tensor.Q4_0, 2+4*k, 32*k, 4)
	}
	add(tensor.Q4_0, 0, 128, 2)
	for k := 0; k < 8; k++ {
		add(tensor.Q8_0, 2+4*k, 32*k, 4)
	}
	add(tensor.Q8_0, 0, 256, 2)
	// Q4_K and Q5_K: d, dmin, scales, then the nibbles at qs; Q5_K's qh
	// (at 16) after them.
	for typ, qs := range map[tensor.Type]int{tensor.Q4_K: 16, tensor.Q5_K: 48} {
		add(typ, 0, 0, 2)
		add(typ, 2, 16, 2)
		for v := 0; v < 3; v++ {
			add(typ, 4+4*v, 32+32*v, 4)
		}
		for c := 0; c < 4; c++ {
			for k := 0; k < 8; k++ {
				add(typ, qs+32*c+4*k, 128+256*c+32*k, 4)
			}
		}
	}
	for k := 0; k < 8; k++ {
		add(tensor.Q5_K, 16+4*k, 1152+32*k, 4)
	}
	// Q6_K: ql at 0, qh at 128, scales at 192, d at 208.
	for n := 0; n < 2; n++ {
		for k := 0; k < 8; k++ {
			add(tensor.Q6_K, 64*n+4*k, 512*n+32*k, 4)
			add(tensor.Q6_K, 64*n+32+4*k, 512*n+256+32*k, 4)
			add(tensor.Q6_K, 128+32*n+4*k, 1024+256*n+32*k, 4)
		}
	}
	for p := 0; p < 8; p++ {
		add(tensor.Q6_K, 192+2*p, 1536+16*p, 2)
	}
	add(tensor.Q6_K, 208, 1664, 2)
	// The weight-path groups: sub-block s goes to the s-th group block.
	for s := 0; s < 4; s++ {
		for k := 0; k < 4; k++ {
			add(tensor.W4A8, 2+16*s+4*k, 144*s+32*k, 4)
		}
		add(tensor.W4A8, 0, 144*s+128, 2)
		for k := 0; k < 8; k++ {
			add(tensor.W8A8, 2+32*s+4*k, 272*s+32*k, 4)
		}
		add(tensor.W8A8, 0, 272*s+256, 2)
	}
}

// packGroup packs rows [0, nrows) (nrows <= 8) of src, rows of stride
// bytes in the GGUF layout of typ, into dst (zeroed by the caller): blocks
// blocks of typ, each becoming packRows blocks of packLayout(typ). The ranges are checked once; the moves inside them are
// unchecked word copies.
func packGroup(typ tensor.Type, dst, src []byte, stride, nrows, blocks int) {
	moves := packMoves[typ]
	if moves == nil {
		panic("kernels: no packed layout for " + typ.String())
	}
	bb := typ.BlockBytes()
	lt := packLayout(typ)
	gb := packRows * lt.BlockBytes() * (typ.BlockSize() / lt.BlockSize())
	if nrows < 1 || nrows > packRows || len(dst) < blocks*gb || len(src) < (nrows-1)*stride+blocks*bb || stride < blocks*bb {
		panic("kernels: bad packGroup arguments")
	}
	d0, s0 := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	for b := 0; b < blocks; b++ {
		g, blk := unsafe.Add(d0, b*gb), unsafe.Add(s0, b*bb)
		// Every offset is within one block (src) or one group block
		// (dst): the layouts' definitions above.
		for _, m := range moves {
			to, from := unsafe.Add(g, m.dst), unsafe.Add(blk, m.src)
			if m.size == 4 {
				for r := 0; r < nrows; r++ {
					*(*[4]byte)(unsafe.Add(to, 4*r)) = *(*[4]byte)(unsafe.Add(from, r*stride))
				}
			} else {
				for r := 0; r < nrows; r++ {
					*(*[2]byte)(unsafe.Add(to, 2*r)) = *(*[2]byte)(unsafe.Add(from, r*stride))
				}
			}
		}
	}
}

// packRowMajor is packGroup for tiers whose kernels read row-major Q4_0
// and Q8_0 rows (arm64): it writes rows [0, nrows) of src, W4A8 or W8A8
// rows of blocks groups, into dst as rows of packLayout(typ) blocks, one
// row after another (a group of 8 rows is then simply an 8-row Q4_0 or
// Q8_0 matrix, of the size packGroup gives). Each 128-group becomes four
// blocks carrying the group's fp16 d, so the values are exactly the
// original's.
func packRowMajor(typ tensor.Type, dst, src []byte, stride, nrows, blocks int) {
	lt := packLayout(typ)
	if lt == typ {
		panic("kernels: no row-major packed layout for " + typ.String())
	}
	bb, lbb := typ.BlockBytes(), lt.BlockBytes()
	sub := typ.BlockSize() / lt.BlockSize()
	qb := lbb - 2 // quant bytes of a sub-block
	rs := blocks * sub * lbb
	if nrows < 1 || nrows > packRows || len(dst) < packRows*rs || len(src) < (nrows-1)*stride+blocks*bb || stride < blocks*bb {
		panic("kernels: bad packRowMajor arguments")
	}
	for r := 0; r < nrows; r++ {
		row, out := src[r*stride:r*stride+blocks*bb], dst[r*rs:(r+1)*rs]
		for b := 0; b < blocks; b++ {
			g := row[b*bb : (b+1)*bb]
			for s := 0; s < sub; s++ {
				o := out[(b*sub+s)*lbb : (b*sub+s+1)*lbb]
				o[0], o[1] = g[0], g[1]
				copy(o[2:], g[2+s*qb:2+(s+1)*qb])
			}
		}
	}
}
