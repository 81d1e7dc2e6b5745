package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// Tolerances of the SIMD tiers against the generic reference.
//
// Integer sums are exact in every tier (TestTierExactIntegers checks it
// with data whose float arithmetic is exact too). The SIMD kernels add the
// per-block float terms d*s in another order (8 lanes, then a horizontal
// sum), and float weights are accumulated in float32 lanes instead of
// float64. Each float addition rounds by at most 2^-24 of a partial sum,
// which is bounded by S, the sum of the magnitudes of all the terms (see
// termBound); a lane adds one term per block (per 8 elements for float
// weights), so
//
//	quantized: |simd - generic| <= (blocks + 16) * 2^-23 * S
//	float:     |simd - generic| <= (cols/8 + 16) * 2^-23 * S
//
// (2^-23: both sides round), plus one smallest subnormal per rounding. For a 2048-column row that is about 1e-5 S
// for the 32-blocks, 3e-6 S for the K-quants and 3e-5 S for float
// weights; observed errors are 10-100x smaller.
func tolerance(typ tensor.Type, cols int, s float64) float64 {
	n := float64(cols / max(typ.BlockSize(), 1))
	switch typ {
	case tensor.F32, tensor.F16, tensor.BF16:
		n = float64(cols) / 8
	case tensor.W4A8, tensor.W8A8:
		n = float64(cols) / 32 // a term per 32-sub-block
	case tensor.W4A16:
		// A lane adds one product per 8 elements into its group sum, and
		// each group's sum once (times d) into the row's.
		n = float64(cols)/8 + float64(cols)/tensor.WeightGroup
	case tensor.W16A16:
		n = float64(cols) / 16 // VDPBF16PS: a lane adds two products per 32 elements
	}
	// Results in the subnormal range round to absolute steps of the
	// smallest subnormal, which the relative bound does not cover;
	// VDPBF16PS flushes them to zero, a step of the smallest normal.
	step := math.SmallestNonzeroFloat32
	if typ == tensor.W16A16 {
		step = 0x1p-126
	}
	return (n + 16) * (0x1p-23*s + step)
}

// termBound returns S for one row: the sum over elements of the magnitude
// of weight times activation as the kernels see them (unsigned quants
// plus the offsets and mins that are applied separately), times the block
// scales. It decodes the formats itself, independently of the package.
func termBound(typ tensor.Type, row []byte, x []float32, xq []byte) float64 {
	n := len(x)
	h := func(b []byte) float64 { return math.Abs(float64(tensor.FP16ToFloat32(binary.LittleEndian.Uint16(b)))) }
	var s float64
	switch typ {
	case tensor.W16A16: // the activations as the kernels see them: BF16
		w, a := dequant(typ, row, n), dequant(tensor.BF16, xq, n)
		for i := range w {
			s += math.Abs(float64(w[i]) * float64(a[i]))
		}
	case tensor.F32, tensor.F16, tensor.BF16, tensor.W4A16:
		w := dequant(typ, row, n)
		for i := range w {
			s += math.Abs(float64(w[i]) * float64(x[i]))
		}
	case tensor.Q8_0, tensor.Q4_0, tensor.Q4_1:
		bb, xb := typ.BlockBytes(), 34
		if typ == tensor.Q4_1 {
			xb = 36
		}
		for b := 0; b < n/32; b++ {
			w, y := row[b*bb:], xq[b*xb:]
			var sum float64
			for e := 0; e < 32; e++ {
				a := math.Abs(float64(int8(y[xb-32+e])))
				switch typ {
				case tensor.Q8_0:
					sum += math.Abs(float64(int8(w[2+e]))) * a
				case tensor.Q4_0:
					sum += float64(w[2+e%16]>>(4*(e/16))&15+8) * a
				case tensor.Q4_1:
					sum += float64(w[4+e%16]>>(4*(e/16))&15) * a
				}
			}
			s += h(w) * h(y) * sum
			if typ == tensor.Q4_1 {
				s += h(w[2:]) * h(y[2:])
			}
		}
	case tensor.W4A8, tensor.W8A8:
		bb := typ.BlockBytes()
		for b := 0; b < n/32; b++ {
			w, y := row[b/4*bb:], xq[b*34:]
			var sum float64
			for e := 0; e < 32; e++ {
				a := math.Abs(float64(int8(y[2+e])))
				if typ == tensor.W8A8 {
					sum += math.Abs(float64(int8(w[2+32*(b%4)+e]))) * a
				} else {
					sum += math.Abs(float64(int(w[2+16*(b%4)+e%16]>>(4*(e/16))&15)-8)) * a
				}
			}
			s += h(w) * h(y) * sum
		}
	case tensor.Q4_K, tensor.Q5_K, tensor.Q6_K:
		bb := typ.BlockBytes()
		for b := 0; b < n/256; b++ {
			w, y := row[b*bb:(b+1)*bb], xq[b*292:]
			yd := math.Abs(float64(math.Float32frombits(binary.LittleEndian.Uint32(y))))
			a := func(e int) float64 { return math.Abs(float64(int8(y[4+e]))) }
			switch typ {
			case tensor.Q4_K, tensor.Q5_K:
				for j := 0; j < 8; j++ {
					sc, m := tensor.ScaleMinK4(j, w[4:16])
					for l := 0; l < 32; l++ {
						e := 32*j + l
						var q float64
						if typ == tensor.Q4_K {
							q = float64(w[16+32*(j/2)+l] >> (4 * (j % 2)) & 15)
						} else {
							q = float64(w[48+32*(j/2)+l]>>(4*(j%2))&15 + 16)
						}
						s += yd * (h(w)*float64(sc)*q + h(w[2:])*float64(m)) * a(e)
					}
				}
			case tensor.Q6_K:
				for e := 0; e < 256; e++ {
					sc := math.Abs(float64(int8(w[192+e/16])))
					s += yd * h(w[208:]) * sc * (63 + 32) * a(e) // q6 <= 63, offset 32
				}
			}
		}
	default:
		panic("termBound: " + typ.String())
	}
	return s
}

// reference is the generic result for one row: Dot for float weights,
// DotQ otherwise.
func reference(typ tensor.Type, row []byte, x []float32, xq []byte) float32 {
	if floatActs(typ) {
		return kernels.Dot(typ, row, x)
	}
	return kernels.DotQ(typ, row, xq)
}

const sentinel = float32(-12345.678)

// checkKernel runs tier's own kernel for typ on weights w (rows x cols)
// and the four activation rows xs, through vec and vec4, in buffers that
// end at an unmapped page (reads past the end fault) with sentinels around
// the outputs; it compares with the generic reference within tolerance
// and vec4 with vec bit for bit.
func checkKernel(t testing.TB, tierName string, typ tensor.Type, rows, cols int, wdata []byte, xs [4][]float32) {
	t.Helper()
	k := kernels.KernelOf(tierName, typ)
	if k == nil {
		return
	}
	stride, _ := tensor.RowBytes(typ, cols)
	w := guarded(t, len(wdata))
	copy(w, wdata)
	xsz := k.ActBytes(cols)
	xq := guarded(t, 4*xsz)
	for i := range xs {
		k.Quant(xq[i*xsz:(i+1)*xsz], xs[i])
	}
	one := make([][]float32, 4)
	for i := range xs {
		buf := make([]float32, rows+2)
		for j := range buf {
			buf[j] = sentinel
		}
		k.Vec(buf[1:1+rows], w, stride, xq[i*xsz:(i+1)*xsz])
		if buf[0] != sentinel || buf[rows+1] != sentinel {
			t.Fatalf("%s %s %dx%d: vec wrote outside its output", tierName, typ, rows, cols)
		}
		one[i] = buf[1 : 1+rows]
		xref := kernels.QuantizeActivations(typ, xs[i])
		for r := 0; r < rows; r++ {
			row := wdata[r*stride : (r+1)*stride]
			want := reference(typ, row, xs[i], xref)
			tol := tolerance(typ, cols, termBound(typ, row, xs[i], xref))
			got := one[i][r]
			if math.IsNaN(float64(got)) || math.Abs(float64(got)-float64(want)) > tol {
				t.Fatalf("%s %s %dx%d act %d row %d: %v, generic %v (|d| %.3g > tol %.3g)",
					tierName, typ, rows, cols, i, r, got, want, math.Abs(float64(got)-float64(want)), tol)
			}
		}
	}
	ostride := rows + 3
	buf := make([]float32, 3*ostride+rows+2)
	for j := range buf {
		buf[j] = sentinel
	}
	if !k.Vec4(buf[1:1+3*ostride+rows], ostride, w, stride, rows, xq, xsz) {
		return
	}
	for j, v := range buf {
		i, r := (j-1)/ostride, (j-1)%ostride
		if j == 0 || r >= rows {
			if v != sentinel {
				t.Fatalf("%s %s %dx%d: vec4 wrote outside its outputs at %d", tierName, typ, rows, cols, j)
			}
			continue
		}
		if math.Float32bits(v) != math.Float32bits(one[i][r]) {
			t.Fatalf("%s %s %dx%d: vec4 act %d row %d = %v, vec %v", tierName, typ, rows, cols, i, r, v, one[i][r])
		}
	}
}

// TestTierKernels: every tier's kernels against the generic reference on
// ragged row counts and several block counts.
func TestTierKernels(t *testing.T) {
	rng := newRNG(20)
	for _, tierName := range kernels.Tiers() {
		for _, typ := range allTypes {
			var colsList []int
			switch bs := typ.BlockSize(); bs {
			case 1:
				colsList = []int{1, 7, 8, 9, 16, 31, 33, 100, 256, 1000}
			case 32:
				colsList = []int{32, 64, 96, 160, 256, 416, 2048}
			case tensor.WeightGroup:
				colsList = []int{128, 256, 384, 640, 1152, 2048}
			default:
				colsList = []int{256, 512, 768, 1280, 2048, 4096}
			}
			for _, cols := range colsList {
				for _, rows := range []int{1, 2, 3, 5, 17} {
					t.Run(fmt.Sprintf("%s/%s/%dx%d", tierName, typ, rows, cols), func(t *testing.T) {
						var xs [4][]float32
						for i := range xs {
							xs[i] = randomVec(rng, cols)
						}
						checkKernel(t, tierName, typ, rows, cols, randomRow(rng, typ, rows*cols), xs)
					})
				}
			}
		}
	}
}

// TestTierExactIntegers: with integer weight scales and activations whose
// 8-bit quantization is exact, every product and sum is an exactly
// representable integer, so every tier must give the exact dot product.
func TestTierExactIntegers(t *testing.T) {
	rng := newRNG(21)
	const rows, cols = 9, 1024
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		for _, typ := range quantTypes {
			w := &tensor.Matrix{Name: "w", Type: typ, Rows: rows, Cols: cols, Data: integerRow(rng, typ, rows*cols)}
			const n = 5
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(rng.IntN(7) - 3)
			}
			for b := 0; b < len(x); b += 32 {
				x[b+rng.IntN(32)] = -127
			}
			out := make([]float32, n*rows)
			kernels.MatMul(out, w, x, n)
			for i := 0; i < n; i++ {
				for r := 0; r < rows; r++ {
					wr := dequant(typ, w.Row(r), cols)
					var want float64
					for e, v := range wr {
						want += float64(v) * float64(x[i*cols+e])
					}
					if got := out[i*rows+r]; float64(got) != want {
						t.Errorf("%s %s act %d row %d: %v, want %v", tierName, typ, i, r, got, want)
					}
				}
			}
		}
		restore()
	}
}

// TestTierMatMul: in every tier, MatMul rows are bit-identical to MatVec
// (whatever the batch size, so through the 4-row kernels and the
// remainder), independent of the thread count, and within tolerance of
// the generic reference.
func TestTierMatMul(t *testing.T) {
	defer kernels.SetThreads(0)
	rng := newRNG(22)
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		for _, typ := range allTypes {
			cols := 512
			if typ.BlockSize() == 1 {
				cols = 300
			}
			w := randomMatrix(rng, typ, 203, cols)
			const n = 11
			x := randomVec(rng, n*cols)
			var first []float32
			for _, th := range []int{1, 2, 3} {
				kernels.SetThreads(th)
				out := make([]float32, n*w.Rows)
				kernels.MatMul(out, w, x, n)
				if first == nil {
					first = out
				} else if j := sameBits(out, first); j >= 0 {
					t.Fatalf("%s %s: %d threads differ at %d", tierName, typ, th, j)
				}
			}
			for _, m := range []int{1, 4, 5, 7} {
				out := make([]float32, m*w.Rows)
				kernels.MatMul(out, w, x[:m*cols], m)
				if j := sameBits(out, first[:m*w.Rows]); j >= 0 {
					t.Fatalf("%s %s: batch of %d differs from batch of %d at %d: %v vs %v", tierName, typ, m, n, j, out[j], first[j])
				}
			}
			one := make([]float32, w.Rows)
			for i := 0; i < n; i++ {
				xi := x[i*cols : (i+1)*cols]
				kernels.MatVec(one, w, xi)
				if j := sameBits(one, first[i*w.Rows:(i+1)*w.Rows]); j >= 0 {
					t.Fatalf("%s %s: MatMul row %d differs from MatVec at %d", tierName, typ, i, j)
				}
				xq := kernels.QuantizeActivations(typ, xi)
				for r := 0; r < w.Rows; r++ {
					want := reference(typ, w.Row(r), xi, xq)
					tol := tolerance(typ, cols, termBound(typ, w.Row(r), xi, xq))
					if d := math.Abs(float64(one[r]) - float64(want)); !(d <= tol) {
						t.Fatalf("%s %s: act %d row %d: %v, generic %v (tol %.3g)", tierName, typ, i, r, one[r], want, tol)
					}
				}
			}
		}
		restore()
	}
}

// TestTierPinned: the tiers the package reports are the ones tests run,
// and the AVX2 kernels are there on amd64 CPUs that have it (see
// dispatch_amd64.go).
func TestTierPinned(t *testing.T) {
	tiers := kernels.Tiers()
	if tiers[0] != "generic" {
		t.Fatalf("tiers %v", tiers)
	}
	t.Logf("tiers %v, in use %s", tiers, kernels.Tier())
	for _, name := range tiers {
		restore := kernels.UseTier(name)
		if kernels.Tier() != name {
			t.Errorf("UseTier(%s): Tier() = %s", name, kernels.Tier())
		}
		restore()
	}
}

// TestQuantLayouts: each SIMD tier's activation quantizer writes exactly
// the bytes of the Go one (which is checked against QuantizeActivations
// by the kernel tests), on random magnitudes and the edge cases of the
// rounding rules.
func TestQuantLayouts(t *testing.T) {
	rng := newRNG(23)
	const cols = 2048
	var inputs [][]float32
	for trial := 0; trial < 40; trial++ {
		x := randomVec(rng, cols)
		scale := float32(math.Pow(10, float64(trial%12-6)))
		for i := range x {
			x[i] *= scale
		}
		switch trial % 8 {
		case 1: // a zero block and a block of one value
			clear(x[:256])
			for i := 256; i < 512; i++ {
				x[i] = 3
			}
		case 2: // ties at .5 after scaling (amax 127: d = 1)
			for i := range x {
				x[i] = float32(rng.IntN(255)-127) + 0.5*float32(rng.IntN(2))
			}
			for b := 0; b < cols; b += 32 {
				x[b] = -127
			}
		case 3: // equal magnitudes of opposite signs: the first one wins
			for b := 0; b < cols; b += 32 {
				x[b+rng.IntN(16)] = 50
				x[b+16+rng.IntN(16)] = -50
			}
		case 4: // tiny values: subnormal fp16 d, huge 1/d
			for i := range x {
				x[i] *= 1e-38
			}
		case 5: // one block element dominates
			for b := 0; b < cols; b += 32 {
				x[b+rng.IntN(32)] = 1e6
			}
		}
		inputs = append(inputs, x)
	}
	for _, tierName := range kernels.Tiers() {
		for _, typ := range []tensor.Type{tensor.Q8_0, tensor.Q4_K} {
			k := kernels.KernelOf(tierName, typ)
			ref, size := kernels.LayoutQuant(typ)
			if k == nil || tierName == "generic" {
				continue
			}
			for n, x := range inputs {
				want := make([]byte, k.ActBytes(cols))
				got := make([]byte, k.ActBytes(cols))
				ref(want, x)
				k.Quant(got, x)
				for i := 0; i < size(cols); i++ {
					if got[i] != want[i] {
						t.Fatalf("%s %s input %d: byte %d = %#x, want %#x", tierName, typ, n, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestTierEnv: SISKIN_KERNELS pins the tier at start-up (checked in a
// child process, since it is read once).
func TestTierEnv(t *testing.T) {
	if name := os.Getenv("SISKIN_TEST_WANT_TIER"); name != "" {
		if got := kernels.Tier(); got != name {
			t.Fatalf("%s=%s: Tier() = %s", kernels.EnvKernels, os.Getenv(kernels.EnvKernels), got)
		}
		return
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	for _, name := range kernels.Tiers() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTierEnv$")
		cmd.Env = append(os.Environ(), kernels.EnvKernels+"="+name, "SISKIN_TEST_WANT_TIER="+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s=%s: %v\n%s", kernels.EnvKernels, name, err, out)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTierEnv$")
	cmd.Env = append(os.Environ(), kernels.EnvKernels+"=nonsense", "SISKIN_TEST_WANT_TIER=generic")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "unknown tier") {
		t.Errorf("%s=nonsense: want a start-up panic naming the tiers, got %v\n%s", kernels.EnvKernels, err, out)
	}
}
