package gguf

import "math"

// Get returns the raw value of a metadata key.
func (f *File) Get(key string) (any, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return nil, false
	}
	return f.KV[i].Value, true
}

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// String returns a string value.
func (f *File) String(key string) (string, bool) {
	v, ok := f.Get(key)
	s, ok2 := v.(string)
	return s, ok && ok2
}

// Uint returns a non-negative integer value of any integer type.
func (f *File) Uint(key string) (uint64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return toUint(v)
}

// Int returns an integer value of any integer type that fits in int64.
func (f *File) Int(key string) (int64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return toInt(v)
}

// Float returns a numeric value of any type as float64.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := toInt(v); ok {
		return float64(i), true
	}
	if u, ok := toUint(v); ok {
		return float64(u), true
	}
	return 0, false
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) {
	v, ok := f.Get(key)
	b, ok2 := v.(bool)
	return b, ok && ok2
}

// Strings returns an array of strings.
func (f *File) Strings(key string) ([]string, bool) {
	v, ok := f.Get(key)
	s, ok2 := v.([]string)
	return s, ok && ok2
}

// Bools returns an array of bools.
func (f *File) Bools(key string) ([]bool, bool) {
	v, ok := f.Get(key)
	s, ok2 := v.([]bool)
	return s, ok && ok2
}

// Float32s returns a numeric array converted to float32.
func (f *File) Float32s(key string) ([]float32, bool) {
	v, ok := f.Get(key)
	if !ok {
		return nil, false
	}
	switch x := v.(type) {
	case []float32:
		return x, true
	case []float64:
		out := make([]float32, len(x))
		for i, e := range x {
			out[i] = float32(e)
		}
		return out, true
	}
	ints, ok := toInt64s(v)
	if !ok {
		return nil, false
	}
	out := make([]float32, len(ints))
	for i, e := range ints {
		out[i] = float32(e)
	}
	return out, true
}

// Int32s returns an integer array converted to int32; values that do not
// fit make it fail.
func (f *File) Int32s(key string) ([]int32, bool) {
	v, ok := f.Get(key)
	if !ok {
		return nil, false
	}
	if x, ok := v.([]int32); ok {
		return x, true
	}
	ints, ok := toInt64s(v)
	if !ok {
		return nil, false
	}
	out := make([]int32, len(ints))
	for i, e := range ints {
		if e < math.MinInt32 || e > math.MaxInt32 {
			return nil, false
		}
		out[i] = int32(e)
	}
	return out, true
}

// Int64s returns an integer array converted to int64.
func (f *File) Int64s(key string) ([]int64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return nil, false
	}
	return toInt64s(v)
}

func toInt64s(v any) ([]int64, bool) {
	var out []int64
	add := func(n int, get func(int) int64) {
		out = make([]int64, n)
		for i := range out {
			out[i] = get(i)
		}
	}
	switch x := v.(type) {
	case []uint8:
		add(len(x), func(i int) int64 { return int64(x[i]) })
	case []int8:
		add(len(x), func(i int) int64 { return int64(x[i]) })
	case []uint16:
		add(len(x), func(i int) int64 { return int64(x[i]) })
	case []int16:
		add(len(x), func(i int) int64 { return int64(x[i]) })
	case []uint32:
		add(len(x), func(i int) int64 { return int64(x[i]) })
	case []int32:
		add(len(x), func(i int) int64 { return int64(x[i]) })
	case []int64:
		out = x
	case []uint64:
		for _, e := range x {
			if e > math.MaxInt64 {
				return nil, false
			}
		}
		add(len(x), func(i int) int64 { return int64(x[i]) })
	default:
		return nil, false
	}
	return out, true
}

func toUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	}
	if i, ok := toInt(v); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}
