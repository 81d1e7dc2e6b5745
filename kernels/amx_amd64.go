//go:build amd64 && gc && !purego

package kernels

import (
	"fmt"
	"os"

	"github.com/klauspost/cpuid/v2"

	"github.com/siskin-ml/siskin/tensor"
)

// AMX in the AVX-512 tier: Q4_K and Q6_K prefill take 32 activation
// rows at a time through q4kPackVec32AMX and q6kPackVec32AMX, Q4_0 and
// Q8_0 (and W4A8 and W8A8, packed as them) sixteen through
// q4_0PackVec16AMX and q8_0PackVec16AMX (packk_vnni8_amd64.s, generated
// by kernels/_gen/amx.go and amx6.go); all give the eight-row kernels'
// bits. The tile state is configured and released inside each call, so a
// goroutine never carries tiles across a point where it could move to
// another thread. SISKIN_AMX=0 turns it off.

// amxUsable reports whether this CPU has AMX-INT8 and the OS let this
// process use the tile data (amxPermit).
var amxUsable = cpuid.CPU.Supports(cpuid.AMXTILE, cpuid.AMXINT8) && os.Getenv("SISKIN_AMX") != "0" && amxPermit()

// withAMX gives the AVX-512 tier's packed Q4_K, Q6_K, Q4_0 and Q8_0
// kernels in m (with their eight-row kernels already) the AMX kernels,
// and the fewest activation rows of their tiles (wideTile), each the
// fastest of 64, 96 and 128 in BenchmarkPrefill's down projection
// (6656 wide, whose share of packActTileBytes is 16 or 32 rows) and in
// pp512: Q6_K, whose unpacking costs most, 241 GMAC/s at 32 rows, 272
// at 64, 285-288 at 96 and 128.
func withAMX(m map[tensor.Type]*matKernel) {
	for _, k := range []struct {
		typ             tensor.Type
		gb, xb, n, tile int
		f               amxAsm
	}{
		{tensor.Q4_K, 8 * 144, 308, 32, 64, q4kPackVec32AMX},
		{tensor.Q6_K, 8 * 210, 308, 32, 96, q6kPackVec32AMX},
		{tensor.Q4_0, 8 * 18, 72, 16, 64, q4_0PackVec16AMX},
		{tensor.Q8_0, 8 * 34, 72, 16, 64, q8_0PackVec16AMX},
	} {
		pk := *m[k.typ].packed
		pk.wide, pk.wideRows, pk.wideTile = amxWide(pk.vec8, k.gb, k.xb, k.n, k.f), k.n, k.tile
		m[k.typ] = withPacked(m[k.typ], &pk)
	}
}

// amxMaxRows is the most activation rows an AMX kernel takes in a call
// (its float sums' scratch is on its stack), as kernels/_gen set it.
var amxMaxRows = amxMaxRowsAsm()

func amxMaxRowsAsm() int

// amxAsm is an AMX kernel: vec4 for rows activation rows, a multiple of
// its own row count, the groups taken two at a time.
type amxAsm func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride, rows int)

// amxWide wraps an AMX kernel f of n rows (a multiple of 8) for group
// blocks of gb bytes and activations of xb bytes per block; an odd last
// group runs vec8, which gives the same bits.
func amxWide(vec8 func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride int), gb, xb, n int, f amxAsm) amxAsm {
	return func(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride, rows int) {
		if groups <= 0 || rows <= 0 {
			return
		}
		if rows%n != 0 || blocks <= 0 || len(w) < groups*blocks*gb || ostride < packRows*groups || len(out) < (rows-1)*ostride+packRows*groups ||
			xstride < blocks*xb || len(x) < (rows-1)*xstride+blocks*xb {
			panic(fmt.Sprintf("kernels: bad packed kernel arguments: %d groups of %d blocks, %d weight bytes, %d outputs (stride %d), %d activation rows of %d bytes (stride %d)", groups, blocks, len(w), len(out), ostride, rows, len(x), xstride))
		}
		g := groups &^ 1
		for r := 0; g > 0 && r < rows; r += amxMaxRows {
			f(out[r*ostride:], ostride, w, g, blocks, x[r*xstride:], xstride, min(amxMaxRows, rows-r))
		}
		if g < groups {
			w1 := w[g*blocks*gb:]
			for i := 0; i < rows; i += 8 {
				vec8(out[i*ostride+packRows*g:], ostride, w1, 1, blocks, x[i*xstride:], xstride)
			}
		}
	}
}

//go:noescape
func q4kPackVec32AMX(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride, rows int)

//go:noescape
func q6kPackVec32AMX(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride, rows int)

//go:noescape
func q4_0PackVec16AMX(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride, rows int)

//go:noescape
func q8_0PackVec16AMX(out []float32, ostride int, w []byte, groups, blocks int, x []byte, xstride, rows int)
