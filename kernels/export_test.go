package kernels

import "github.com/siskin-ml/siskin/tensor"

// Test hooks.

// Tiers lists the kernel tiers this CPU and build can run, generic first.
func Tiers() []string {
	var s []string
	for t := tier(0); t < numTiers; t++ {
		if supported[t] {
			s = append(s, t.String())
		}
	}
	return s
}

// UseTier pins the kernel tier and returns a function restoring the
// previous one.
func UseTier(name string) (restore func()) {
	t, ok := parseTier(name)
	if !ok {
		panic("unknown tier " + name)
	}
	prev := setTier(t)
	return func() { setTier(prev) }
}

// TestKernel gives tests direct access to one tier's kernel for a type.
type TestKernel struct{ k *matKernel }

// KernelOf returns tier name's own kernel for typ, or nil when that tier
// falls back to the generic one.
func KernelOf(name string, typ tensor.Type) *TestKernel {
	t, ok := parseTier(name)
	if !ok {
		panic("unknown tier " + name)
	}
	if k := kernelSets[t][typ]; k != nil {
		return &TestKernel{k}
	}
	return nil
}

func (k *TestKernel) ActBytes(cols int) int {
	if k.k.float {
		return 4 * cols
	}
	return k.k.actBytes(cols)
}

func (k *TestKernel) Quant(dst []byte, x []float32) {
	if k.k.float {
		copy(dst, f32Bytes(x))
		return
	}
	k.k.quant(dst, x)
}

func (k *TestKernel) Vec(out []float32, w []byte, stride int, x []byte) { k.k.vec(out, w, stride, x) }

// Vec4 reports false if the kernel has no 4-row form.
func (k *TestKernel) Vec4(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int) bool {
	if k.k.vec4 == nil {
		return false
	}
	k.k.vec4(out, ostride, w, stride, rows, x, xstride)
	return true
}

// LayoutQuant returns the Go quantizer of the SIMD activation layout used
// with weights of type typ (nil if there is none), and the bytes it
// writes for cols activations.
func LayoutQuant(typ tensor.Type) (func(dst []byte, x []float32), func(cols int) int) {
	switch typ {
	case tensor.Q4_0, tensor.Q8_0:
		return quantQ8a, func(cols int) int { return cols / 32 * 72 }
	case tensor.Q4_K, tensor.Q5_K, tensor.Q6_K:
		return quantQ8ka, func(cols int) int { return cols / tensor.QK_K * 308 }
	}
	return nil, nil
}

// UsePackAlloc makes Prepare allocate packed copies with alloc (tests put
// them before a guard page) and returns a function restoring the default.
func UsePackAlloc(alloc func(n int) []byte) (restore func()) {
	prev := packAlloc
	packAlloc = alloc
	return func() { packAlloc = prev }
}

// PackedTypes lists the weight types tier name has packed kernels for.
func PackedTypes(name string) []tensor.Type {
	t, ok := parseTier(name)
	if !ok {
		panic("unknown tier " + name)
	}
	var ts []tensor.Type
	for _, typ := range []tensor.Type{tensor.F32, tensor.F16, tensor.BF16, tensor.Q4_0, tensor.Q4_1, tensor.Q8_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
		tensor.W4A8, tensor.W4A16, tensor.W8A8} {
		if k := kernelSets[t][typ]; k != nil && k.packed != nil {
			ts = append(ts, typ)
		}
	}
	return ts
}

// SetPackTiles sets the packed products' tile sizes in bytes (0 leaves one
// unchanged) and returns the previous values.
func SetPackTiles(weights, acts int) (int, int) {
	w, a := packTileBytes, packActTileBytes
	if weights > 0 {
		packTileBytes = weights
	}
	if acts > 0 {
		packActTileBytes = acts
	}
	return w, a
}

// PackedVec8 reports whether tier name's packed kernel for typ has an
// eight-row form.
func PackedVec8(name string, typ tensor.Type) bool {
	t, _ := parseTier(name)
	k := kernelSets[t][typ]
	return k != nil && k.packed != nil && k.packed.vec8 != nil
}

// PackedWide returns the rows of tier name's wide (AMX) packed kernel
// for typ on this CPU, 0 if it has none.
func PackedWide(name string, typ tensor.Type) int {
	t, _ := parseTier(name)
	k := kernelSets[t][typ]
	if k == nil || k.packed == nil || k.packed.wide == nil {
		return 0
	}
	return k.packed.wideRows
}

// PackedData returns the packed copy of a prepared w (nil if none).
func PackedData(w *tensor.Matrix) []byte {
	if p := lookupPrepared(w); p != nil {
		return p.data
	}
	return nil
}

// PackedTile runs prepared w's packed kernel directly on its groups [0,
// g) for rows (4 or 8) activation rows quantized in q from row i on,
// writing out (ostride floats per row); it reports false if w has no
// packed kernel of that many rows.
func PackedTile(w *tensor.Matrix, out []float32, ostride, g int, q *QuantizedActs, i, rows int) bool {
	p := lookupPrepared(w)
	if p == nil || g > p.fullGroups || i+rows > q.n {
		return false
	}
	f := p.pk.vec4
	switch {
	case rows == 4:
	case rows == 8:
		f = p.pk.vec8
	case p.pk.wide != nil && rows%p.pk.wideRows == 0:
		p.pk.wide(out, ostride, p.data[:g*p.gstride], g, p.blocks, q.data[i*q.xs:], q.xs, rows)
		return true
	default:
		return false
	}
	if f == nil {
		return false
	}
	f(out, ostride, p.data[:g*p.gstride], g, p.blocks, q.data[i*q.xs:], q.xs)
	return true
}

// PackTileGroups is the number of groups of prepared w that mulPacked
// takes at a time for n > 1.
func PackTileGroups(w *tensor.Matrix) int {
	return max(1, packTileBytes/lookupPrepared(w).gstride)
}
