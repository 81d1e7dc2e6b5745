package quantize

import (
	"fmt"
	"sort"
	"strings"

	"github.com/siskin-ml/siskin/tensor"
)

// FileType is a whole-file quantization scheme, named and numbered as
// llama.cpp's LLAMA_FTYPE_* (the number goes into general.file_type).
type FileType struct {
	Name    string      // as on the command line: q4_k_m
	ID      uint32      // LLAMA_FTYPE value
	Default tensor.Type // type of an ordinary weight matrix
}

// FileTypes lists the schemes siskin writes.
var FileTypes = []FileType{
	{"f32", 0, tensor.F32},
	{"f16", 1, tensor.F16},
	{"q4_0", 2, tensor.Q4_0},
	{"q8_0", 7, tensor.Q8_0},
	{"q4_k_s", 14, tensor.Q4_K},
	{"q4_k_m", 15, tensor.Q4_K},
	{"q6_k", 18, tensor.Q6_K},
	{"bf16", 32, tensor.BF16},
}

// ParseFileType looks a scheme up by name, case-insensitively.
func ParseFileType(name string) (FileType, error) {
	for _, ft := range FileTypes {
		if strings.EqualFold(ft.Name, name) {
			return ft, nil
		}
	}
	return FileType{}, fmt.Errorf("unknown type %q (want one of %s)", name, FileTypeNames())
}

// FileTypeNames lists the scheme names for help texts and errors.
func FileTypeNames() string {
	names := make([]string, len(FileTypes))
	for i, ft := range FileTypes {
		names[i] = ft.Name
	}
	return strings.Join(names, "|")
}

func (ft FileType) quantized() bool {
	return ft.Default != tensor.F32 && ft.Default != tensor.F16 && ft.Default != tensor.BF16
}

// mixer picks each tensor's type the way llama.cpp's llama-quantize does
// (llama_tensor_get_type, no importance matrix, no overrides), restricted
// to what the file types above need.
type mixer struct {
	ft        FileType
	nLayer    int
	nAttnV    int // tensors counted as attention V (attn_v, attn_qkv)
	iAttnV    int
	iFFNDown  int
	hasOutput bool // an untied output.weight exists
}

// newMixer counts what the rules depend on. names must be in output order,
// because the rules number attn_v and ffn_down tensors as they come.
func newMixer(ft FileType, nLayer int, names []string) *mixer {
	m := &mixer{ft: ft, nLayer: nLayer}
	for _, n := range names {
		if isAttnV(n) {
			m.nAttnV++
		} else if n == "output.weight" {
			m.hasOutput = true
		}
	}
	return m
}

// isAttnV: llama.cpp counts fused QKV projections with V (their V rows are
// what the extra bits are for). Its reference Q4_K_M file of the tiny Spark
// model confirms that attn_qkv follows the attn_v rule (Q6_K on layers 0,
// 3, 6, 7 of 8), not the older "attn_qkv -> Q5_K" rule.
func isAttnV(name string) bool {
	return strings.Contains(name, "attn_v.weight") || strings.Contains(name, "attn_qkv.weight") || strings.Contains(name, "attn_kv_b.weight")
}

// useMoreBits is llama.cpp's layer pattern for the _M mixes: the first and
// last eighth of the layers and every third layer between them.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// LayerType is the type ft gives the quantizable weight matrix name (a
// GGUF tensor name) with rows of rowLen elements, in layer layer (its
// "blk.N" number) of a model of nLayer layers that each hold one
// attention V (or fused QKV) projection and one FFN down projection;
// tied says the output head is the token embedding. It is what File
// writes for that tensor of such a model, for a caller that meets the
// weights one at a time instead of as a whole file.
func LayerType(ft FileType, name string, rowLen, layer, nLayer int, tied bool) tensor.Type {
	m := &mixer{ft: ft, nLayer: nLayer, nAttnV: nLayer, iAttnV: layer, iFFNDown: layer, hasOutput: !tied}
	return m.typeFor(name, []uint64{uint64(rowLen), 2})
}

// nDims counts dimensions as ggml_n_dims does: trailing 1s do not count.
func nDims(dims []uint64) int {
	for i := len(dims) - 1; i >= 1; i-- {
		if dims[i] > 1 {
			return i + 1
		}
	}
	return 1
}

// quantizable is llama-quantize's test for tensors it converts at all:
// weights of two or more dimensions, except norms and a few small or
// position-like tensors it keeps as they are.
func quantizable(name string, dims []uint64) bool {
	if !strings.HasSuffix(name, "weight") || nDims(dims) < 2 {
		return false
	}
	for _, s := range []string{"_norm.weight", "ffn_gate_inp.weight", "altup", "laurel", "per_layer_model_proj", "ssm_conv1d.weight", "attn_rel_b.weight"} {
		if strings.Contains(name, s) {
			return false
		}
	}
	return name != "position_embd.weight" && name != "token_types.weight"
}

// typeFor returns the output type of a quantizable tensor. It must be
// called once per tensor, in output order.
func (m *mixer) typeFor(name string, dims []uint64) tensor.Type {
	t := m.ft.Default
	if !m.ft.quantized() {
		return t
	}
	ne0 := int(dims[0])
	switch {
	case name == "output.weight" || (!m.hasOutput && name == "token_embd.weight"):
		// The output head (or the embedding that doubles as it) gets
		// Q6_K, or Q8_0 when rows do not fit the default type's blocks.
		if ne0%t.BlockSize() != 0 {
			t = tensor.Q8_0
		} else if t != tensor.Q8_0 {
			t = tensor.Q6_K
		}
	case name == "token_embd.weight":
		// Untied embedding: the default type for these schemes.
	case isAttnV(name):
		if m.ft.Name == "q4_k_m" && useMoreBits(m.iAttnV, m.nAttnV) {
			t = tensor.Q6_K
		} else if m.ft.Name == "q4_k_s" && m.iAttnV < 4 {
			t = tensor.Q5_K
		}
		m.iAttnV++
	case strings.Contains(name, "ffn_down"):
		if m.ft.Name == "q4_k_m" && useMoreBits(m.iFFNDown, m.nLayer) {
			t = tensor.Q6_K
		} else if m.ft.Name == "q4_k_s" && m.iFFNDown < m.nLayer/8 {
			t = tensor.Q5_K
		}
		m.iFFNDown++
	}
	return fallback(t, ne0)
}

// fallback replaces a type whose blocks do not divide the row length.
// llama.cpp uses Q5_0 / Q5_1 / Q8_0 for Q4_K / Q5_K / Q6_K; siskin does not
// read Q5_0 or Q5_1, so Q4_K falls back to Q4_1 (same 32-element blocks
// with an fp16 scale and min per block, 5.0 bits per weight) and Q5_K to
// Q8_0. Rows that are not whole 32-element blocks stay F16, as in
// llama.cpp (which gives up on Q4_0/Q8_0 there; F16 is the useful answer).
func fallback(t tensor.Type, ne0 int) tensor.Type {
	if ne0%t.BlockSize() == 0 {
		return t
	}
	switch t {
	case tensor.Q4_K:
		t = tensor.Q4_1
	case tensor.Q5_K, tensor.Q6_K:
		t = tensor.Q8_0
	}
	if ne0%t.BlockSize() != 0 {
		t = tensor.F16
	}
	return t
}

// layerOf reads the block number of "blk.N.*", -1 otherwise.
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	n, digits := 0, 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		n = n*10 + int(rest[digits]-'0')
		digits++
	}
	if digits == 0 || digits >= len(rest) || rest[digits] != '.' {
		return -1
	}
	return n
}

// sortTensorNames orders names as llama.cpp's model loader does
// (weight_name_comparer): non-block tensors first, then by block number,
// and by name within each group. llama-quantize writes in this order, and
// the attn_v / ffn_down counters above rely on it.
func sortTensorNames(names []string) {
	sort.SliceStable(names, func(i, j int) bool {
		li, lj := layerOf(names[i]), layerOf(names[j])
		if li != lj {
			return li < lj
		}
		return names[i] < names[j]
	})
}
