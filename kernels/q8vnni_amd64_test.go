//go:build linux && amd64 && gc && !purego

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"

	"github.com/siskin-ml/siskin/internal/cputime"
	"github.com/siskin-ml/siskin/tensor"
)

// q8_0PackVecTwin is the pure-Go twin of q8_0PackVecVNNI on the packed
// Q8_0 layout and q8a activations: per group and block, the exact
// integer sum of each row (taken as the kernel does: weights + 128, the
// two halves, then 16 times q8a's -8*sum), then the AVX2 kernels' float
// step F += float(I) * (dw*dx) with one rounding.
func q8_0PackVecTwin(out []float32, w []byte, groups, blocks int, x []byte) {
	nb := blocks
	for g := 0; g < groups; g++ {
		var f [packRows]float32
		for b := 0; b < blocks; b++ {
			gbk := w[(g*blocks+b)*272:]
			dx := math.Float32frombits(binary.LittleEndian.Uint32(x[64*nb+4*b:]))
			off := int32(binary.LittleEndian.Uint32(x[68*nb+4*b:]))
			for r := 0; r < packRows; r++ {
				var lo, hi int32
				for k := 0; k < 8; k++ {
					for i := 0; i < 4; i++ {
						p := int32(gbk[32*k+4*r+i]^0x80) * int32(int8(x[32*b+4*k+i]))
						if k%2 == 0 {
							lo += p
						} else {
							hi += p
						}
					}
				}
				sum := lo + hi + 16*off
				dw := tensor.FP16ToFloat32(binary.LittleEndian.Uint16(gbk[256+2*r:]))
				f[r] = fma32(float32(sum), dw*dx, f[r])
			}
		}
		copy(out[packRows*g:], f[:])
	}
}

// fma32 is a*b+c rounded once to float32 (VFMADD231PS): the exact value
// in big.Float, then one rounding to 24 bits (the operands here stay far
// from float32's subnormals and overflow).
func fma32(a, b, c float32) float32 {
	p := new(big.Float).SetPrec(200).Mul(big.NewFloat(float64(a)), big.NewFloat(float64(b)))
	s := new(big.Float).SetPrec(2000).Add(p, big.NewFloat(float64(c)))
	r, _ := s.SetMode(big.ToNearestEven).SetPrec(24).Float32()
	return r
}

// guardedBytes returns n bytes ending where an inaccessible page begins.
func guardedBytes(t testing.TB, n int) []byte {
	page := syscall.Getpagesize()
	size := (n + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, size+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[size:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	return mem[size-n : size : size]
}

// q8VNNICase makes packed Q8_0 weights (groups groups of blocks blocks,
// random bytes with 0x80 and 0x7f runs, fp16 d of a few magnitudes) and
// q8a activations of random values (some rows clipped to +-127), both
// in guarded memory.
func q8VNNICase(t testing.TB, rng *rand.Rand, groups, blocks int) (w, x []byte) {
	w = guardedBytes(t, groups*blocks*272)
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	for g := 0; g < groups*blocks; g++ {
		blk := w[272*g:]
		if g%3 == 1 { // extreme weights: -128 and 127
			for i := 0; i < 256; i++ {
				blk[i] = []byte{0x80, 0x7f}[i%2]
			}
		}
		for r := 0; r < packRows; r++ {
			binary.LittleEndian.PutUint16(blk[256+2*r:], tensor.Float32ToFP16(float32(rng.NormFloat64())*0.01))
		}
	}
	v := make([]float32, 32*blocks)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
		if i/32%4 == 2 {
			v[i] = float32(1 - 2*(i%2)) // every quant +-127
		}
	}
	x = guardedBytes(t, 72*blocks)
	quantQ8aFast(x, v)
	return w, x
}

// TestQ8_0VNNIKernel: the VNNI one-row Q8_0 kernel gives its pure-Go
// twin's bits and the AVX2 kernel's, for ragged group and block counts up
// to its limit, with weights and activations ending at guard pages and
// the outputs between sentinels.
func TestQ8_0VNNIKernel(t *testing.T) {
	if !supported[tierAVX512] {
		t.Skip("no AVX-512 F/BW/VL + VNNI on this CPU")
	}
	rng := rand.New(rand.NewPCG(61, 1))
	for _, groups := range []int{1, 2, 3, 5} {
		for _, blocks := range []int{1, 2, 3, 7, 32, 96, q8VNNIMaxBlocks} {
			t.Run(fmt.Sprintf("groups=%d/blocks=%d", groups, blocks), func(t *testing.T) {
				w, x := q8VNNICase(t, rng, groups, blocks)
				n := packRows * groups
				buf := make([]float32, n+16)
				for i := range buf {
					buf[i] = -7
				}
				q8_0VecVNNI(buf[8:8+n], w, groups, blocks, x)
				for _, i := range []int{0, 7, n + 8, n + 15} {
					if buf[i] != -7 {
						t.Fatalf("wrote outside its outputs at %d", i)
					}
				}
				got := buf[8 : 8+n]
				twin, avx2 := make([]float32, n), make([]float32, n)
				q8_0PackVecTwin(twin, w, groups, blocks, x)
				q8_0PackVecAVX2(avx2, w, groups, blocks, x)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(twin[i]) || math.Float32bits(got[i]) != math.Float32bits(avx2[i]) {
						t.Fatalf("row %d: vnni %v, twin %v, avx2 %v", i, got[i], twin[i], avx2[i])
					}
				}
			})
		}
	}
}

// BenchmarkQ8_0Vec1: the one-row Q8_0 packed kernels alone on one
// thread, in weight bytes per second of thread CPU time: vnni (this
// kernel), avx512pair (q8_0PackVecAVX512, two groups per ZMM) and avx2;
// 1024 and 3072 columns (the code predictor's), weights resident in L2
// (512 KiB) or streamed from memory (256 MiB, past the L3 cache).
func BenchmarkQ8_0Vec1(b *testing.B) {
	if !supported[tierAVX512] {
		b.Skip("no AVX-512 F/BW/VL + VNNI on this CPU")
	}
	kernels := []struct {
		name string
		f    func(out []float32, w []byte, groups, blocks int, x []byte)
	}{{"vnni", q8_0VecVNNI}, {"avx512pair", q8_0PackVecAVX512}, {"avx2", q8_0PackVecAVX2}}
	rng := rand.New(rand.NewPCG(62, 1))
	for _, cols := range []int{1024, 3072} {
		blocks := cols / 32
		gstride := blocks * 272
		for _, size := range []int{512 << 10, 256 << 20} {
			total := size / gstride &^ 15
			w := make([]byte, total*gstride)
			for i := range w {
				w[i] = byte(rng.Uint32())
			}
			for g := 0; g < total*blocks; g++ {
				for r := 0; r < packRows; r++ {
					binary.LittleEndian.PutUint16(w[272*g+256+2*r:], tensor.Float32ToFP16(0.01))
				}
			}
			v := make([]float32, cols)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			x := make([]byte, q8aBytes(cols))
			quantQ8aFast(x, v)
			out := make([]float32, packRows*total)
			const chunk = 16 // groups per call, as a packed tile
			for _, k := range kernels {
				b.Run(fmt.Sprintf("cols=%d/%dKiB/%s", cols, size>>10, k.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0 := threadCPUTime()
					for b.Loop() {
						for g := 0; g < total; g += chunk {
							k.f(out[packRows*g:], w[g*gstride:], chunk, blocks, x)
						}
					}
					cpu := threadCPUTime() - c0
					b.ReportMetric(float64(len(w))*float64(b.N)/cpu/1e9, "cpu-GB/s")
				})
			}
		}
	}
}

// threadCPUTime is the calling OS thread's CPU time in seconds.
func threadCPUTime() float64 { return cputime.Thread().Seconds() }
