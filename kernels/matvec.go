package kernels

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/siskin-ml/siskin/tensor"
)

var threads atomic.Int32 // 0: use GOMAXPROCS

// SetThreads sets how many goroutines MatVec and MatMul may use; n <= 0
// restores the default, runtime.GOMAXPROCS(0) at the time of each call.
// Results never depend on it: each output element is computed by one
// goroutine with the same code.
func SetThreads(n int) {
	if n < 0 {
		n = 0
	}
	threads.Store(int32(n))
}

// Threads returns the number of goroutines MatVec and MatMul may use.
func Threads() int {
	if n := threads.Load(); n > 0 {
		return int(n)
	}
	return runtime.GOMAXPROCS(0)
}

// minWorkPerThread is the number of multiply-adds below which starting a
// goroutine (about a microsecond) costs more than the work it takes over.
const minWorkPerThread = 1 << 16

// parallelRows calls fn on disjoint ranges covering [0, rows), on up to
// Threads() goroutines (the caller's included). rowWork is the cost of one
// row in multiply-adds; small jobs run on the calling goroutine.
func parallelRows(rows, rowWork int, fn func(lo, hi int)) {
	nt := min(Threads(), rows)
	if total := rows * rowWork; total/minWorkPerThread < nt {
		nt = total / minWorkPerThread
	}
	if nt <= 1 {
		fn(0, rows)
		return
	}
	// Several chunks per goroutine, handed out dynamically, so a goroutine
	// descheduled by the OS does not hold up the whole call.
	chunk := max(1, rows/(4*nt))
	var next atomic.Int64
	work := func() {
		for {
			lo := int(next.Add(int64(chunk))) - chunk
			if lo >= rows {
				return
			}
			fn(lo, min(lo+chunk, rows))
		}
	}
	var wg sync.WaitGroup
	for range nt - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

func checkMatrix(w *tensor.Matrix, n int, x, out []float32) {
	if !w.Type.Supported() {
		panic(fmt.Sprintf("kernels: %s: unsupported weight type %s", w.Name, w.Type))
	}
	stride, err := tensor.RowBytes(w.Type, w.Cols)
	if err != nil {
		panic(fmt.Sprintf("kernels: %s: %v", w.Name, err))
	}
	if len(w.Data) != stride*w.Rows {
		panic(fmt.Sprintf("kernels: %s: %d bytes of data for %dx%d %s", w.Name, len(w.Data), w.Rows, w.Cols, w.Type))
	}
	if len(x) != n*w.Cols {
		panic(fmt.Sprintf("kernels: %s: %d activations, want %d rows of %d", w.Name, len(x), n, w.Cols))
	}
	if len(out) != n*w.Rows {
		panic(fmt.Sprintf("kernels: %s: output of %d, want %d rows of %d", w.Name, len(out), n, w.Rows))
	}
}

func isFloat(t tensor.Type) bool { return t == tensor.F32 || t == tensor.F16 || t == tensor.BF16 }

// MatVecFloat sets out[r] = Dot(w.Type, w.Row(r), x) for every row: the
// float-activation reference for any weight type.
func MatVecFloat(out []float32, w *tensor.Matrix, x []float32) {
	checkMatrix(w, 1, x, out)
	dot := dotFunc(w.Type)
	stride := w.RowStride()
	parallelRows(w.Rows, w.Cols, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			out[r] = dot(w.Data[r*stride:(r+1)*stride], x)
		}
	})
}

// MatVec sets out[r] to row r of w times x, as llama.cpp computes it: F32,
// F16 and BF16 weights use the float activations (Dot); quantized weights
// quantize x once with QuantizeActivations and use DotQ.
func MatVec(out []float32, w *tensor.Matrix, x []float32) {
	MatMul(out, w, x, 1)
}

// bufPool recycles quantized-activation buffers between calls.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

// MatMul multiplies n activation rows x ([n][w.Cols], row-major) by w,
// writing out[i*w.Rows+r] = row r of w times row i of x. Each output is
// bit-identical to MatVec on that activation row, so a batched prompt
// gives the same numbers as feeding it one token at a time.
func MatMul(out []float32, w *tensor.Matrix, x []float32, n int) {
	checkMatrix(w, n, x, out)
	stride := w.RowStride()
	if isFloat(w.Type) {
		dot := dotFunc(w.Type)
		parallelRows(w.Rows, n*w.Cols, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				row := w.Data[r*stride : (r+1)*stride]
				for i := 0; i < n; i++ {
					out[i*w.Rows+r] = dot(row, x[i*w.Cols:(i+1)*w.Cols])
				}
			}
		})
		return
	}
	qBytes := ActivationBytes(w.Type, w.Cols)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	if cap(*bp) < n*qBytes {
		*bp = make([]byte, n*qBytes)
	}
	xq := (*bp)[:n*qBytes]
	parallelRows(n, w.Cols, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			QuantizeActivationsTo(xq[i*qBytes:(i+1)*qBytes], w.Type, x[i*w.Cols:(i+1)*w.Cols])
		}
	})
	dot := dotQFunc(w.Type)
	parallelRows(w.Rows, n*w.Cols, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := w.Data[r*stride : (r+1)*stride]
			for i := 0; i < n; i++ {
				out[i*w.Rows+r] = dot(row, xq[i*qBytes:(i+1)*qBytes])
			}
		}
	})
}
