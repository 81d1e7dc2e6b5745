// Package tensor describes how tensors are laid out in bytes: the GGML
// element types with their block sizes, and dequantization to float32.
package tensor

import "fmt"

// Type is a GGML tensor element type; the numeric values are the ones
// stored in GGUF files.
type Type uint32

// GGML type ids (ggml.h numbering).
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39

	// siskin's own weight-path types (never in a GGUF file other
	// readers see; the conversion cache stores them). Blocks hold
	// WeightGroup elements with one fp16 scale d.
	//
	// W4A8 and W4A16 share one layout, 66 bytes: fp16 d, then four
	// 16-byte sub-blocks laid out as Q4_0's quants: byte i of sub-block
	// j holds element 32j+i in its low nibble and 32j+16+i in its high
	// nibble; value (q-8)*d. They differ in the activations the kernels
	// take: int8 blocks (W4A8) or float32 (W4A16).
	//
	// W8A8, 130 bytes: fp16 d, then 128 int8 q; value q*d.
	//
	// W16A16 is BF16's layout (one bfloat16 an element, no scale), with
	// activations rounded to BF16 too, as llama.cpp computes BF16 weights
	// (VDPBF16PS where the CPU has AVX-512 BF16).
	W4A8   Type = 1024
	W4A16  Type = 1025
	W8A8   Type = 1026
	W16A16 Type = 1027
)

// WeightGroup is the number of elements sharing one scale in the
// weight-path types.
const WeightGroup = 128

// IsWeightPath reports whether t is one of siskin's own weight-path types.
func (t Type) IsWeightPath() bool { return t == W4A8 || t == W4A16 || t == W8A8 || t == W16A16 }

// QK_K is the super-block size of the K-quant types.
const QK_K = 256

type typeInfo struct {
	name       string
	blockSize  int // elements per block
	blockBytes int // bytes per block
	supported  bool
}

var types = map[Type]typeInfo{
	F32:     {"F32", 1, 4, true},
	F16:     {"F16", 1, 2, true},
	BF16:    {"BF16", 1, 2, true},
	Q4_0:    {"Q4_0", 32, 18, true},
	Q4_1:    {"Q4_1", 32, 20, true},
	Q5_0:    {"Q5_0", 32, 22, false},
	Q5_1:    {"Q5_1", 32, 24, false},
	Q8_0:    {"Q8_0", 32, 34, true},
	Q8_1:    {"Q8_1", 32, 36, false},
	Q2_K:    {"Q2_K", QK_K, 84, false},
	Q3_K:    {"Q3_K", QK_K, 110, false},
	Q4_K:    {"Q4_K", QK_K, 144, true},
	Q5_K:    {"Q5_K", QK_K, 176, true},
	Q6_K:    {"Q6_K", QK_K, 210, true},
	Q8_K:    {"Q8_K", QK_K, 292, false},
	IQ2_XXS: {"IQ2_XXS", QK_K, 66, false},
	IQ2_XS:  {"IQ2_XS", QK_K, 74, false},
	IQ3_XXS: {"IQ3_XXS", QK_K, 98, false},
	IQ1_S:   {"IQ1_S", QK_K, 50, false},
	IQ4_NL:  {"IQ4_NL", 32, 18, false},
	IQ3_S:   {"IQ3_S", QK_K, 110, false},
	IQ2_S:   {"IQ2_S", QK_K, 82, false},
	IQ4_XS:  {"IQ4_XS", QK_K, 136, false},
	I8:      {"I8", 1, 1, false},
	I16:     {"I16", 1, 2, false},
	I32:     {"I32", 1, 4, false},
	I64:     {"I64", 1, 8, false},
	F64:     {"F64", 1, 8, false},
	IQ1_M:   {"IQ1_M", QK_K, 56, false},
	TQ1_0:   {"TQ1_0", QK_K, 54, false},
	TQ2_0:   {"TQ2_0", QK_K, 66, false},
	MXFP4:   {"MXFP4", 32, 17, false},
	W4A8:    {"W4A8", WeightGroup, 66, true},
	W4A16:   {"W4A16", WeightGroup, 66, true},
	W8A8:    {"W8A8", WeightGroup, 130, true},
	W16A16:  {"W16A16", 1, 2, true},
}

func (t Type) String() string {
	if info, ok := types[t]; ok {
		return info.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Known reports whether t is a GGML type whose layout siskin knows.
func (t Type) Known() bool { _, ok := types[t]; return ok }

// Supported reports whether siskin can compute with tensors of type t.
func (t Type) Supported() bool { return types[t].supported }

// BlockSize is the number of elements in one block (0 for unknown types).
func (t Type) BlockSize() int { return types[t].blockSize }

// BlockBytes is the size in bytes of one block (0 for unknown types).
func (t Type) BlockBytes() int { return types[t].blockBytes }

// ParseType maps a name such as "q4_k" or "Q8_0" to its Type.
func ParseType(name string) (Type, bool) {
	for t, info := range types {
		if equalFold(info.name, name) {
			return t, true
		}
	}
	return 0, false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// RowBytes returns the bytes taken by n consecutive elements of type t, or
// an error when n is not a whole number of blocks or the type is unknown.
func RowBytes(t Type, n int) (int, error) {
	info, ok := types[t]
	if !ok {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%info.blockSize != 0 {
		return 0, fmt.Errorf("%s: row of %d elements is not a multiple of the block size %d", info.name, n, info.blockSize)
	}
	return n / info.blockSize * info.blockBytes, nil
}

// Matrix is a row-major 2-D weight: Rows rows of Cols elements of Type,
// each row RowBytes(Type, Cols) bytes long. Data usually points into a
// memory-mapped model file.
type Matrix struct {
	Name       string
	Type       Type
	Rows, Cols int
	Data       []byte
}

// RowStride is the number of bytes per row.
func (m *Matrix) RowStride() int {
	n, _ := RowBytes(m.Type, m.Cols)
	return n
}

// Row returns the bytes of row i.
func (m *Matrix) Row(i int) []byte {
	s := m.RowStride()
	return m.Data[i*s : (i+1)*s]
}
