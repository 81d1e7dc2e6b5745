package weightpath

import (
	"fmt"
	"strings"

	"github.com/siskin-ml/siskin/tensor"
)

// Weight paths (the names device.ChooseWeightPath and profiles use).
const (
	GGUF  = "gguf"  // the file's own types, packed for the kernels
	W4A8  = "w4a8"  // int4 weights, int8 dynamic activations
	W4A16 = "w4a16" // int4 weights, float activations
	W8A8  = "w8a8"  // int8 weights, int8 dynamic activations
)

// Paths lists the weight paths in the order they are documented.
var Paths = []string{GGUF, W4A8, W4A16, W8A8}

// CheckPath refuses an unknown weight-path name.
func CheckPath(p string) error {
	for _, q := range Paths {
		if p == q {
			return nil
		}
	}
	return fmt.Errorf("unknown weight path %q (want one of %s)", p, strings.Join(Paths, ", "))
}

// policyVersion changes whenever Target's choices change, so that caches
// converted under the old rules are rebuilt.
const policyVersion = 1

// Target is the type a [rows, cols] weight named name, stored as typ, is
// converted to on path. The output projection (and the token embedding,
// which small models tie to it) keeps 8 bits on every converted path, as
// llama.cpp's Q4_K_M keeps 6: its errors land directly on the logits.
// Rows whose length is not a multiple of the group stay as they are.
func Target(path, name string, typ tensor.Type, cols int) tensor.Type {
	if path == GGUF || path == "" || cols%tensor.WeightGroup != 0 {
		return typ
	}
	if isOutput(name) {
		return tensor.W8A8
	}
	switch path {
	case W4A8:
		return tensor.W4A8
	case W4A16:
		return tensor.W4A16
	case W8A8:
		return tensor.W8A8
	}
	return typ
}

func isOutput(name string) bool {
	for _, s := range []string{"output.weight", "token_embd.weight", "lm_head.weight", "embed_tokens.weight"} {
		if name == s || strings.HasSuffix(name, "."+s) {
			return true
		}
	}
	return false
}
