package device

import (
	"encoding/json"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"
)

// The JSON names, FeatureNames and Map must agree: scripts read the JSON
// and the CLI prints FeatureNames.
func TestFeatureNames(t *testing.T) {
	var tags []string
	typ := reflect.TypeFor[Features]()
	for i := range typ.NumField() {
		tags = append(tags, typ.Field(i).Tag.Get("json"))
	}
	if !slices.Equal(tags, FeatureNames) {
		t.Errorf("json tags %v\nFeatureNames %v", tags, FeatureNames)
	}
	want := []string{"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vnni", "avxvnni",
		"amx_tile", "amx_int8", "amx_bf16", "asimd", "dotprod", "i8mm", "sve"}
	m := Features{}.Map()
	for _, n := range want {
		if _, ok := m[n]; !ok {
			t.Errorf("feature %q missing from Map", n)
		}
	}
	if len(m) != len(FeatureNames) {
		t.Errorf("Map has %d names, FeatureNames %d", len(m), len(FeatureNames))
	}
	// Each field maps to its own name.
	v := reflect.ValueOf(&Features{}).Elem()
	for i := range v.NumField() {
		v.Field(i).SetBool(true)
		for n, b := range (v.Interface().(Features)).Map() {
			if b != (n == FeatureNames[i]) {
				t.Errorf("field %s set: Map[%s] = %v", typ.Field(i).Name, n, b)
			}
		}
		v.Field(i).SetBool(false)
	}
}

func TestProbeJSONShape(t *testing.T) {
	info := Probe()
	raw, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	obj := func(key string, fields ...string) map[string]any {
		o, ok := m[key].(map[string]any)
		if !ok {
			t.Fatalf("%s is %T, want an object", key, m[key])
		}
		for _, f := range fields {
			if _, ok := o[f]; !ok {
				t.Errorf("%s.%s missing", key, f)
			}
		}
		return o
	}
	feats := obj("features", FeatureNames...)
	for k, v := range feats {
		if _, ok := v.(bool); !ok {
			t.Errorf("features.%s is %T", k, v)
		}
	}
	obj("cores", "physical", "logical")
	obj("caches", "l1d_bytes", "l2_bytes", "l3_bytes")
	obj("memory", "total_bytes", "available_bytes")
	cpu := obj("cpu", "brand", "vendor", "arch")
	obj("amx", "cpu_has", "os_grants")
	if v, ok := m["bandwidth_gbs"]; !ok || v != nil {
		t.Errorf("bandwidth_gbs = %v (present %v), want null before measuring", v, ok)
	}
	if cpu["arch"] != runtime.GOARCH {
		t.Errorf("cpu.arch = %v", cpu["arch"])
	}
	if info.Cores.Physical < 1 || info.Cores.Logical < info.Cores.Physical || info.DefaultThreads() < 1 {
		t.Errorf("cores %+v, default threads %d", info.Cores, info.DefaultThreads())
	}
	if runtime.GOARCH == "amd64" && !info.Features.AVX2 && info.Features.AVX512F {
		t.Errorf("AVX-512 without AVX2: %+v", info.Features)
	}
	if runtime.GOARCH == "arm64" && !info.Features.ASIMD {
		t.Errorf("arm64 without ASIMD")
	}
	if a := info.AMX; (info.Features.AMXTile || info.Features.AMXInt8) && !a.Usable() {
		t.Errorf("AMX features set but not usable: %+v", a)
	}
	if runtime.GOOS == "linux" && (info.Memory.TotalBytes <= 0 || info.Memory.AvailableBytes <= 0 ||
		info.Memory.AvailableBytes > info.Memory.TotalBytes) {
		t.Errorf("memory %+v", info.Memory)
	}
	t.Logf("%s", raw)
}

func TestDefaultThreads(t *testing.T) {
	for _, c := range []struct {
		cores Cores
		want  int
	}{
		{Cores{Physical: 8, Logical: 16, Usable: 16}, 8},
		{Cores{Physical: 8, Logical: 16, Usable: 4}, 4}, // affinity mask
		{Cores{Physical: 14, Logical: 20, Usable: 20, Hybrid: true, Performance: 6, Efficiency: 8}, 6},
		{Cores{Physical: 4, Logical: 4, Usable: 4, Hybrid: true}, 4}, // hybrid, no per-core scan
		{Cores{}, 1},
	} {
		if got := (&Info{Cores: c.cores}).DefaultThreads(); got != c.want {
			t.Errorf("%+v: %d threads, want %d", c.cores, got, c.want)
		}
	}
}

func TestMeasureBandwidth(t *testing.T) {
	start := time.Now()
	gbs := MeasureBandwidth(1, 20*time.Millisecond)
	if !(gbs > 0) {
		t.Fatalf("bandwidth %v GB/s", gbs)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("took %v", el)
	}
	b := measureBandwidth(2, time.Millisecond, 4<<20)
	if b.Passes < bwMinPasses || b.MinGBs > b.GBs || b.GBs > b.MaxGBs || b.Threads != 2 || b.BufferBytes != 4<<20 || b.Pattern == "" {
		t.Errorf("%+v", b)
	}
	t.Logf("1 thread: %.1f GB/s; small buffer: %+v", gbs, b)
}

func TestBufferSize(t *testing.T) {
	for _, c := range []struct {
		l3, avail, want int64
	}{
		{0, 0, 256 << 20},               // unknown L3: 8 x 32 MiB
		{32 << 20, 0, 256 << 20},        // 8 x L3
		{1 << 20, 0, bwMinBuffer},       // small L3: at least 64 MiB
		{512 << 20, 0, bwMaxBuffer},     // huge L3: at most 1 GiB
		{32 << 20, 512 << 20, 64 << 20}, // a board: an eighth of available memory
	} {
		info := &Info{Caches: Caches{L3: c.l3}, Memory: Memory{AvailableBytes: c.avail}}
		if got := bufferSize(info); got != c.want {
			t.Errorf("L3 %d avail %d: %d, want %d", c.l3, c.avail, got, c.want)
		}
	}
}

func TestSumWords(t *testing.T) {
	for n := range 70 {
		b := make([]uint64, n)
		var want uint64
		for i := range b {
			b[i] = uint64(i*i + 1)
			want += b[i]
		}
		for _, p := range ReadPatterns {
			if got := p.Sum(b); got != want {
				t.Errorf("%s, n=%d: %d, want %d", p.Name, n, got, want)
			}
		}
	}
}

func TestFeatureNamesFor(t *testing.T) {
	x86, arm := FeatureNamesFor("amd64"), FeatureNamesFor("arm64")
	if x86[0] != "avx2" || x86[len(x86)-1] != "amx_bf16" || arm[0] != "asimd" || len(x86)+len(arm) != len(FeatureNames) {
		t.Errorf("x86 %v arm64 %v", x86, arm)
	}
	if len(FeatureNamesFor("riscv64")) != len(FeatureNames) {
		t.Error("other architectures should list every name")
	}
}

func TestBestPattern(t *testing.T) {
	for _, c := range []struct {
		rates [][]float64
		want  int
	}{
		{[][]float64{{1, 2, 3}, {2, 3, 4}}, 1},
		{[][]float64{{5, 6, 9}, {1, 2, 30}}, 0}, // the median decides, not the best pass
		{[][]float64{{2}, {2}}, 0},              // a tie keeps the first
	} {
		if got := BestPattern(c.rates); got != c.want {
			t.Errorf("%v: %d, want %d", c.rates, got, c.want)
		}
	}
}
