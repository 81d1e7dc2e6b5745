package kernels

import (
	"fmt"
	"sync"

	"github.com/siskin-ml/siskin/tensor"
)

// The f32 convolution of the speech codec (causal, dilated, stride 1; a
// pointwise conv, a linear layer and a transposed conv's GEMM are the
// one-tap case), computed as a time-blocked GEMM without im2col: a tile
// of output rows times one or two 16-wide blocks of output channels is
// held in registers and accumulated over taps x input channels, reading
// the input rows in place.
//
// Every output is one FMA chain over (tap, input channel) in that order,
// started at zero, with the bias added last; the tiling (rows per tile,
// the split of rows and blocks over threads) never changes it. So a
// streamed decode equals the whole decode bit for bit within a tier, and
// the AVX2 and AVX-512 tiles give the same bits.

// convBlock is the output-channel width of a packed block.
const convBlock = 16

// convChunk is the number of output rows one parallel task computes (a
// multiple of every tier's tile height).
const convChunk = 48

// ConvWeights is a convolution's weights and bias packed for Conv: blocks
// of 16 output channels, each [Taps][In][16] floats (zero-padded past Out).
type ConvWeights struct {
	Out, In, Taps int
	w, bias       []float32
}

// Bytes is the memory the packed weights hold.
func (c *ConvWeights) Bytes() int64 { return 4 * int64(len(c.w)+len(c.bias)) }

// PackConv packs an F32 matrix of Out rows and Taps*In columns (column
// j*In+i is tap j of input channel i) and an optional bias (nil: zero).
func PackConv(m *tensor.Matrix, taps int, bias []float32) (*ConvWeights, error) {
	if m.Type != tensor.F32 || taps < 1 || m.Cols%taps != 0 || m.Rows < 1 || m.Cols < 1 {
		return nil, fmt.Errorf("kernels: PackConv: %s %dx%d with %d taps", m.Type, m.Rows, m.Cols, taps)
	}
	if bias != nil && len(bias) != m.Rows {
		return nil, fmt.Errorf("kernels: PackConv: bias of %d for %d outputs", len(bias), m.Rows)
	}
	nb := (m.Rows + convBlock - 1) / convBlock
	c := &ConvWeights{Out: m.Rows, In: m.Cols / taps, Taps: taps,
		w: make([]float32, nb*m.Cols*convBlock), bias: make([]float32, nb*convBlock)}
	copy(c.bias, bias)
	src := bytesF32(m.Data)
	for o := range m.Rows {
		row := src[o*m.Cols : (o+1)*m.Cols]
		blk := c.w[o/convBlock*m.Cols*convBlock:]
		for col, v := range row {
			blk[col*convBlock+o%convBlock] = v
		}
	}
	return c, nil
}

// convTile computes rows output rows (at most the tier's tile height) of
// blocks (1 or 2) 16-wide output blocks: dst[r*ostride + b*16 + l] for
// weights w (block b at w[b*bstride:]) and input rows x[r*xstride:], tap
// j reading x[r*xstride + j*tapstep:]. Strides are in floats.
type convTile func(dst []float32, ostride int, w []float32, bstride int, x []float32, xstride, in, taps, tapstep, rows, blocks int, bias []float32)

// convKernel is one tier's convolution tile and its shape limits.
type convKernel struct {
	tile   convTile
	rows   int // tile height
	blocks int // widest tile, in blocks
	simd   bool
}

var convGeneric = &convKernel{tile: convTileGo, rows: 12, blocks: 2}

// convTileGo is the reference tile: one float32 chain per output.
func convTileGo(dst []float32, ostride int, w []float32, bstride int, x []float32, xstride, in, taps, tapstep, rows, blocks int, bias []float32) {
	for b := range blocks {
		wb := w[b*bstride : b*bstride+taps*in*convBlock]
		for r := range rows {
			var acc [convBlock]float32
			for j := range taps {
				xr := x[r*xstride+j*tapstep : r*xstride+j*tapstep+in]
				wj := wb[j*in*convBlock:]
				for i, xv := range xr {
					wv := wj[i*convBlock : i*convBlock+convBlock]
					for l := range acc {
						acc[l] += wv[l] * xv
					}
				}
			}
			o := dst[r*ostride+b*convBlock : r*ostride+b*convBlock+convBlock]
			bb := bias[b*convBlock : b*convBlock+convBlock]
			for l := range acc {
				o[l] = acc[l] + bb[l]
			}
		}
	}
}

// ConvAccelerated reports whether the tier in use has SIMD convolution
// tiles (otherwise Conv runs the pure-Go reference, and a caller with an
// im2col path over MatMul's SIMD dot products may prefer that).
func ConvAccelerated() bool { return convKernelFor(tier(current.Load())).simd }

// Conv computes n output rows of a causal convolution with dilation dil:
// dst[t*Out+o] = bias[o] + Σ_j Σ_i W[o][j*In+i]·x[(t+j*dil)*In+i] for
// t < n, where x holds n+(Taps-1)*dil rows of In (the history rows
// first). Each output is computed the same way whatever n and the
// thread count (see above).
func Conv(dst []float32, c *ConvWeights, x []float32, n, dil int) {
	if n <= 0 {
		return
	}
	if dil < 1 || len(x) < (n+(c.Taps-1)*dil)*c.In || len(dst) < n*c.Out {
		panic(fmt.Sprintf("kernels: Conv: %d rows, dilation %d, %d inputs, %d outputs for %dx%dx%d", n, dil, len(x), len(dst), c.Out, c.Taps, c.In))
	}
	k := convKernelFor(tier(current.Load()))
	full := c.Out / convBlock
	units := (full + k.blocks - 1) / k.blocks
	if c.Out%convBlock != 0 {
		units++
	}
	t := convTasks.Get().(*convTask)
	*t = convTask{k: k, c: c, dst: dst, x: x, n: n, dil: dil, full: full, units: units, chunks: (n + convChunk - 1) / convChunk}
	// Weights of a unit that stay in L1/L2 next to the rows: all units
	// of a row chunk in turn (the rows are read once); larger ones: all
	// row chunks of a unit in turn (its weights are read once).
	t.rowMajor = 4*k.blocks*convBlock*c.Taps*c.In <= convRowMajorBytes
	parallelFor(t, units*t.chunks, convChunk*k.blocks*convBlock*c.Taps*c.In, 1)
	*t = convTask{}
	convTasks.Put(t)
}

type convTask struct {
	k                           *convKernel
	c                           *ConvWeights
	dst, x                      []float32
	n, dil, full, units, chunks int
	rowMajor                    bool
}

// convRowMajorBytes is the largest unit of weights (bytes) for which
// Conv orders its tasks row chunk first.
const convRowMajorBytes = 128 << 10

var (
	convTasks   = sync.Pool{New: func() any { return new(convTask) }}
	convScratch = sync.Pool{New: func() any { return new([12 * convBlock]float32) }}
)

// run computes tasks [lo, hi): task u*chunks+q (or q*units+u when
// rowMajor) is column unit u (k.blocks full blocks, or the last partial
// block) over row chunk q.
func (t *convTask) run(lo, hi int) {
	k, c := t.k, t.c
	kin := c.Taps * c.In
	for idx := lo; idx < hi; idx++ {
		u, q := idx/t.chunks, idx%t.chunks
		if t.rowMajor {
			u, q = idx%t.units, idx/t.units
		}
		b0 := u * k.blocks
		nb := min(k.blocks, t.full-b0)
		t0, t1 := q*convChunk, min(t.n, (q+1)*convChunk)
		w := c.w[b0*kin*convBlock:]
		if nb > 0 {
			for r := t0; r < t1; r += k.rows {
				rows := min(k.rows, t1-r)
				k.tile(t.dst[r*c.Out+b0*convBlock:], c.Out, w, kin*convBlock, t.x[r*c.In:], c.In, c.In, c.Taps, t.dil*c.In, rows, nb, c.bias[b0*convBlock:])
			}
			continue
		}
		// The partial last block goes through a 16-wide scratch row.
		b0, w = t.full, c.w[t.full*kin*convBlock:]
		tail := c.Out - b0*convBlock
		buf := convScratch.Get().(*[12 * convBlock]float32)
		for r := t0; r < t1; r += k.rows {
			rows := min(k.rows, t1-r)
			k.tile(buf[:], convBlock, w, kin*convBlock, t.x[r*c.In:], c.In, c.In, c.Taps, t.dil*c.In, rows, 1, c.bias[b0*convBlock:])
			for i := range rows {
				copy(t.dst[(r+i)*c.Out+b0*convBlock:(r+i)*c.Out+c.Out], buf[i*convBlock:i*convBlock+tail])
			}
		}
		convScratch.Put(buf)
	}
}

// FMAPeak runs the tier's register-only FMA loop (independent chains, no
// memory operands) for iters iterations on each of threads threads and
// returns the float operations done (multiply and add counted as two),
// 0 where the tier has no such loop. Divided by the wall time it is the
// FP32 FMA ceiling the convolution's throughput is a share of.
func FMAPeak(iters, threads int) float64 {
	t := tier(current.Load())
	if fmaPeakLoop(t, 1) == 0 {
		return 0
	}
	if threads <= 1 {
		return fmaPeakLoop(t, iters) // on the calling thread
	}
	var flops [64]float64
	threads = min(threads, len(flops))
	var wg sync.WaitGroup
	for i := range threads {
		wg.Go(func() { flops[i] = fmaPeakLoop(t, iters) })
	}
	wg.Wait()
	s := 0.0
	for _, f := range flops {
		s += f
	}
	return s
}
