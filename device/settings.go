package device

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Setting names: the YAML keys of a profile (sampling ones under
// "sampling:") and the names Resolve reports.
const (
	KeyThreads             = "threads"
	KeyWeightPath          = "weight_path"
	KeyPriority            = "priority"
	KeyMaxModelLen         = "max_model_len"
	KeyKVCacheBytes        = "kv_cache_bytes"
	KeyKVCacheType         = "kv_cache_type"
	KeyMaxNumSeqs          = "max_num_seqs"
	KeyMaxNumBatchedTokens = "max_num_batched_tokens"
	KeyTemperature         = "temperature"
	KeyTopP                = "top_p"
	KeyTopK                = "top_k"
	KeyMinP                = "min_p"
	KeyRepetitionPenalty   = "repetition_penalty"
)

// WeightPath is how the kernels hold and multiply the weights: the one
// type of a weight path's name, which weightpath (as weightpath.Path)
// converts to and profiles and flags name.
type WeightPath string

// Weight paths; weightpath documents what each holds.
const (
	WeightPathAuto  WeightPath = "auto"   // ChooseWeightPath decides from the CPU
	WeightPathGGUF  WeightPath = "gguf"   // the GGUF file's own block formats, native kernels
	WeightPathW4A8  WeightPath = "w4a8"   // 4-bit weights, int8 activations (VNNI, AMX)
	WeightPathW4A16 WeightPath = "w4a16"  // 4-bit weights, float32 activations
	WeightPathW8A8  WeightPath = "w8a8"   // 8-bit weights, int8 activations
	WeightPathQ4KM  WeightPath = "q4_k_m" // llama.cpp's Q4_K_M mix made at load, GGUF kernels
	// WeightPathW16A16: BF16 weights and activations (VDPBF16PS), as
	// llama.cpp computes BF16 files; needs AVX-512 BF16.
	WeightPathW16A16 WeightPath = "w16a16"
)

// Priorities trade speed for fidelity to the unquantized model.
const (
	PrioritySpeed    = "speed"
	PriorityFidelity = "fidelity"
)

// KV cache element types (kv.ParseType's names): f16 is llama.cpp's
// default and halves the bytes attention reads per token; q8_0 (blocks of
// 32 int8 and a scale) takes 0.53 of f16's.
const (
	KVCacheF16  = "f16"
	KVCacheF32  = "f32"
	KVCacheQ8_0 = "q8_0"
)

// WeightPaths, Priorities and KVCacheTypes list the accepted values.
var (
	WeightPaths  = []string{string(WeightPathAuto), string(WeightPathGGUF), string(WeightPathW4A8), string(WeightPathW4A16), string(WeightPathW8A8), string(WeightPathQ4KM), string(WeightPathW16A16)}
	Priorities   = []string{PrioritySpeed, PriorityFidelity}
	KVCacheTypes = []string{KVCacheF16, KVCacheQ8_0, KVCacheF32}
)

// kind is the Go type of a setting's value: int, int64, float64 or string.
type kind uint8

const (
	kindInt kind = iota
	kindInt64
	kindFloat
	kindString
)

func (k kind) String() string {
	return [...]string{"an integer", "an integer", "a number", "a string"}[k]
}

// spec describes one setting.
type spec struct {
	name     string
	kind     kind
	sampling bool               // under "sampling:" in a profile
	check    func(v any) string // "" if v (already of kind) is valid, else why not
}

// specs are all settings in the order Resolve reports them.
var specs = []spec{
	{KeyThreads, kindInt, false, atLeast(1)},
	{KeyWeightPath, kindString, false, oneOf(WeightPaths)},
	{KeyPriority, kindString, false, oneOf(Priorities)},
	{KeyMaxModelLen, kindInt, false, atLeast(1)},
	{KeyKVCacheBytes, kindInt64, false, atLeast(1)},
	{KeyKVCacheType, kindString, false, oneOf(KVCacheTypes)},
	{KeyMaxNumSeqs, kindInt, false, atLeast(1)},
	{KeyMaxNumBatchedTokens, kindInt, false, atLeast(1)},
	// The sampling ranges are vLLM's (and sample.Params.Validate's), so a
	// profile can never set a default that every request then fails on.
	{KeyTemperature, kindFloat, true, floatIn(0, math.Inf(1), true, false, "must be non-negative")},
	{KeyTopP, kindFloat, true, floatIn(0, 1, false, true, "must be in (0, 1]")},
	{KeyTopK, kindInt, true, atLeast(-1)},
	{KeyMinP, kindFloat, true, floatIn(0, 1, true, true, "must be in [0, 1]")},
	{KeyRepetitionPenalty, kindFloat, true, floatIn(0, math.Inf(1), false, false, "must be greater than 0")},
}

// SettingNames lists every setting name in Resolve's order.
func SettingNames() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

func specFor(name string) (*spec, bool) {
	for i := range specs {
		if specs[i].name == name {
			return &specs[i], true
		}
	}
	return nil, false
}

func atLeast(lo int64) func(any) string {
	return func(v any) string {
		var n int64
		switch x := v.(type) {
		case int:
			n = int64(x)
		case int64:
			n = x
		}
		if n < lo {
			return fmt.Sprintf("must be at least %d", lo)
		}
		return ""
	}
}

func oneOf(values []string) func(any) string {
	return func(v any) string {
		if !slices.Contains(values, v.(string)) {
			return "must be one of " + strings.Join(values, ", ")
		}
		return ""
	}
}

// floatIn checks lo < v < hi, with either bound inclusive, and that v is
// finite; the comparisons fail for NaN.
func floatIn(lo, hi float64, loIncl, hiIncl bool, why string) func(any) string {
	return func(v any) string {
		x := v.(float64)
		okLo := x > lo || (loIncl && x == lo)
		okHi := x < hi || (hiIncl && x == hi)
		if math.IsInf(x, 0) || !okLo || !okHi {
			return why
		}
		return ""
	}
}

// convert turns v into the setting's Go type. Integer settings take only
// integer types (a fractional thread count is a mistake, not something
// to round), number settings take integers too.
func (s *spec) convert(v any) (any, error) {
	bad := func() error { return fmt.Errorf("%s: want %s, got %T %v", s.name, s.kind, v, v) }
	var i int64
	isInt := true
	switch x := v.(type) {
	case int:
		i = int64(x)
	case int8:
		i = int64(x)
	case int16:
		i = int64(x)
	case int32:
		i = int64(x)
	case int64:
		i = x
	case uint8:
		i = int64(x)
	case uint16:
		i = int64(x)
	case uint32:
		i = int64(x)
	case uint:
		if uint64(x) > math.MaxInt64 {
			return nil, bad()
		}
		i = int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return nil, bad()
		}
		i = int64(x)
	default:
		isInt = false
	}
	switch s.kind {
	case kindInt:
		if !isInt || int64(int(i)) != i {
			return nil, bad()
		}
		return int(i), nil
	case kindInt64:
		if !isInt {
			return nil, bad()
		}
		return i, nil
	case kindFloat:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		}
		if isInt {
			return float64(i), nil
		}
		return nil, bad()
	default:
		if x, ok := v.(string); ok {
			return x, nil
		}
		return nil, bad()
	}
}

// parse reads a setting from text (a command-line flag's value).
func (s *spec) parse(text string) (any, error) {
	text = strings.TrimSpace(text)
	switch s.kind {
	case kindInt, kindInt64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: want an integer, got %q", s.name, text)
		}
		return s.convert(n)
	case kindFloat:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: want a number, got %q", s.name, text)
		}
		return f, nil
	}
	return text, nil
}

// validate converts and range-checks v.
func (s *spec) validate(v any) (any, error) {
	v, err := s.convert(v)
	if err != nil {
		return nil, err
	}
	if why := s.check(v); why != "" {
		return nil, fmt.Errorf("%s: %s %s", s.name, formatValue(v), why)
	}
	return v, nil
}

// formatValue prints a setting's value, strings quoted.
func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
