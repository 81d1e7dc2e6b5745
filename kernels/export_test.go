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
		return quantQ8a, func(cols int) int { return cols / 32 * 68 }
	case tensor.Q4_K, tensor.Q5_K, tensor.Q6_K:
		return quantQ8ka, func(cols int) int { return cols / tensor.QK_K * 308 }
	}
	return nil, nil
}
