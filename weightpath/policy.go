package weightpath

import (
	"fmt"
	"strings"

	"github.com/siskin-ml/siskin/device"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/quantize"
	"github.com/siskin-ml/siskin/tensor"
)

// Path is a weight path's name (device.WeightPath: profiles, flags and
// device.ChooseWeightPath use the same type).
type Path = device.WeightPath

// Weight paths.
const (
	GGUF  = device.WeightPathGGUF  // the file's own types, packed for the kernels
	W4A8  = device.WeightPathW4A8  // int4 weights, int8 dynamic activations
	W4A16 = device.WeightPathW4A16 // int4 weights, float activations
	W8A8  = device.WeightPathW8A8  // int8 weights, int8 dynamic activations
	// Q4KM is llama.cpp's Q4_K_M mix (Q4_K, with Q6_K where it keeps more
	// bits), made at load with llama.cpp's reference quantizers: the GGUF
	// kernels with a Q4_K_M file's fidelity, from any source.
	Q4KM = device.WeightPathQ4KM
	// W16A16 holds every weight as BF16 and rounds the activations to
	// BF16 too (llama.cpp's numerics for BF16 files): VDPBF16PS's twice
	// the multiply-adds an instruction of the float32 FMA path.
	W16A16 = device.WeightPathW16A16
)

// Paths lists the weight paths in the order they are documented.
var Paths = []Path{GGUF, W4A8, W4A16, W8A8, Q4KM, W16A16}

// CheckPath refuses an unknown weight-path name.
func CheckPath(p Path) error {
	names := make([]string, len(Paths))
	for i, q := range Paths {
		if p == q {
			return nil
		}
		names[i] = string(q)
	}
	return fmt.Errorf("unknown weight path %q (want one of %s)", p, strings.Join(names, ", "))
}

// policyVersion changes whenever Target's choices change, so that caches
// converted under the old rules are rebuilt.
const policyVersion = 3

// Target is the type a weight with role r (see model.Role; its name is
// the GGUF name pattern), stored as typ with rows of cols elements, is
// converted to on path. Like llama.cpp's Q4_K_M, the 4-bit paths keep
// more bits where errors hurt most; those weights get W8A8:
//   - the output projection (and the token embedding small models tie
//     to it);
//   - the attention output projection of every layer: with only it at
//     4 bits (every other weight at W8A8), the tiny Spark and Qwen3 test
//     models lost the most KL per 4-bit parameter of any role, with the
//     V projection (siskin eval, F32 reference);
//   - the V (or fused QKV) and FFN down projections of the first and last
//     eighth of the layers and every third layer between (llama.cpp's
//     pattern).
//
// Rows whose length is not a multiple of the group stay as they are.
//
// On the Q4KM path the type is the one llama.cpp's quantizer gives the
// weight in a Q4_K_M file.
func Target(path Path, r model.Role, typ tensor.Type, cols int) tensor.Type {
	if path == Q4KM {
		name := r.Name
		if strings.Contains(name, "%d") {
			name = fmt.Sprintf(name, r.Layer)
		}
		return quantize.LayerType(q4km, name, cols, r.Layer, r.Layers, r.Tied)
	}
	if path == W16A16 {
		return tensor.W16A16
	}
	if path == GGUF || path == "" || cols%tensor.WeightGroup != 0 {
		return typ
	}
	if path == W8A8 || isOutput(r.Name) || strings.HasSuffix(r.Name, ".attn_output.weight") ||
		r.Layers > 0 && moreBits(r.Name) && useMoreBits(r.Layer, r.Layers) {
		return tensor.W8A8
	}
	switch path {
	case W4A8:
		return tensor.W4A8
	case W4A16:
		return tensor.W4A16
	}
	return typ
}

var q4km = func() quantize.FileType {
	ft, err := quantize.ParseFileType(string(Q4KM))
	if err != nil {
		panic(err)
	}
	return ft
}()

func isOutput(name string) bool { return name == "output.weight" || name == "token_embd.weight" }

// moreBits: the roles llama.cpp's _M mixes give more bits on some layers.
func moreBits(name string) bool {
	for _, s := range []string{".attn_v.weight", ".attn_qkv.weight", ".ffn_down.weight"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// useMoreBits is llama.cpp's layer pattern for those roles: the first
// and last eighth of the layers and every third layer between them.
func useMoreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

// ForSource adjusts an automatic choice of path (with its reason) for the
// model at src: weights the file already holds at 6 bits or fewer stay
// as they are, since converting them to a 4-bit path would quantize
// twice and lose fidelity for little speed. An explicit choice is never
// adjusted; callers apply this only to "auto".
func ForSource(src *model.Source, path Path, why string) (Path, string) {
	if path == GGUF {
		return path, why
	}
	_, bytes := src.TensorStats()
	var top tensor.Type
	for t, b := range bytes {
		if b > bytes[top] {
			top = t
		}
	}
	switch top {
	case tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K:
		return GGUF, fmt.Sprintf("%s would be chosen (%s), but the file's weights are already %s: converting would quantize them twice", path, why, top)
	}
	return path, why
}
