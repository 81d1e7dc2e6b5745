package tensor_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/tensor"
)

// dequantStats is the layout of golden/dequant/*.dequant_stats.json, made
// by gguf-py's numpy dequantizer from the same files.
type dequantStats struct {
	ModelFile string `json:"model_file"`
	Tensors   []struct {
		Name         string    `json:"name"`
		Type         string    `json:"type"`
		Ne           []int     `json:"ne"`
		NBytes       int       `json:"n_bytes"`
		Offset       int64     `json:"offset"` // absolute offset in the file
		Sum          float64   `json:"sum"`
		SumSq        float64   `json:"sum_sq"`
		FirstRowHead []float64 `json:"first_row_head"`
		SHA256       string    `json:"sha256_f32"`
	} `json:"tensors"`
}

// TestDequantGolden dequantizes every tensor listed in the goldens and
// requires the sha256 of the float32 values to match exactly.
func TestDequantGolden(t *testing.T) {
	dir := testdata.Path(t, "llm", "tiny", "golden", "dequant")
	files, err := filepath.Glob(filepath.Join(dir, "*.dequant_stats.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dequant goldens in %s", dir)
	}
	total, matched := 0, 0
	perType := map[tensor.Type]int{}
	for _, jf := range files {
		raw, err := os.ReadFile(jf)
		if err != nil {
			t.Fatal(err)
		}
		var st dequantStats
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatalf("%s: %v", jf, err)
		}
		model, err := os.ReadFile(testdata.Path(t, "llm", "tiny", "models", st.ModelFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range st.Tensors {
			total++
			typ, ok := tensor.ParseType(ti.Type)
			if !ok {
				t.Errorf("%s %s: unknown type %q", st.ModelFile, ti.Name, ti.Type)
				continue
			}
			n := 1
			for _, d := range ti.Ne {
				n *= d
			}
			if ti.Offset < 0 || ti.Offset+int64(ti.NBytes) > int64(len(model)) {
				t.Errorf("%s %s: bytes [%d,+%d) outside the file", st.ModelFile, ti.Name, ti.Offset, ti.NBytes)
				continue
			}
			src := model[ti.Offset : ti.Offset+int64(ti.NBytes)]
			dst := make([]float32, n)
			if err := tensor.Dequantize(dst, typ, src); err != nil {
				t.Errorf("%s %s: %v", st.ModelFile, ti.Name, err)
				continue
			}
			buf := make([]byte, 4*n)
			var sum, sumSq float64
			for i, v := range dst {
				binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
				sum += float64(v)
				sumSq += float64(v) * float64(v)
			}
			h := sha256.Sum256(buf)
			if got := hex.EncodeToString(h[:]); got != ti.SHA256 {
				t.Errorf("%s %s (%s): sha256 %s, want %s", st.ModelFile, ti.Name, typ, got, ti.SHA256)
				for i, w := range ti.FirstRowHead {
					if float64(dst[i]) != w {
						t.Errorf("  first mismatch at %d: %v, want %v", i, dst[i], w)
						break
					}
				}
				continue
			}
			// The hash already proves equality; the stats guard against a
			// misread JSON layout making the comparison vacuous.
			if math.Abs(sum-ti.Sum) > 1e-9*math.Max(1, ti.SumSq) || math.Abs(sumSq-ti.SumSq) > 1e-9*ti.SumSq {
				t.Errorf("%s %s: sum %v sum_sq %v, want %v %v", st.ModelFile, ti.Name, sum, sumSq, ti.Sum, ti.SumSq)
			}
			matched++
			perType[typ]++
		}
	}
	t.Logf("dequant sha256 matches %d/%d tensors (per type: %v)", matched, total, perType)
	if matched != total {
		t.Fatalf("dequant sha256 matches %d/%d", matched, total)
	}
}

func TestDequantizeErrors(t *testing.T) {
	cases := []struct {
		name string
		n    int
		typ  tensor.Type
		src  int
	}{
		{"partial block", 31, tensor.Q4_0, 18},
		{"short src", 32, tensor.Q4_0, 17},
		{"long src", 32, tensor.Q8_0, 35},
		{"partial K block", 255, tensor.Q4_K, 144},
		{"unsupported", 32, tensor.Q5_0, 22},
		{"unknown", 32, tensor.Type(999), 32},
		{"F32 short", 4, tensor.F32, 15},
	}
	for _, c := range cases {
		if err := tensor.Dequantize(make([]float32, c.n), c.typ, make([]byte, c.src)); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	for _, typ := range []tensor.Type{tensor.F32, tensor.F16, tensor.BF16, tensor.Q4_0, tensor.Q4_1, tensor.Q8_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
		if err := tensor.Dequantize(nil, typ, nil); err != nil {
			t.Errorf("%s: empty input: %v", typ, err)
		}
	}
}

// TestDequantizeBlocks checks each block format on hand-built blocks whose
// values follow from the layout description, independent of the code.
func TestDequantizeBlocks(t *testing.T) {
	h := func(f float32) []byte {
		return binary.LittleEndian.AppendUint16(nil, tensor.Float32ToFP16(f))
	}
	check := func(typ tensor.Type, src []byte, want func(i int) float32) {
		t.Helper()
		dst := make([]float32, typ.BlockSize())
		if err := tensor.Dequantize(dst, typ, src); err != nil {
			t.Fatal(err)
		}
		for i, v := range dst {
			if w := want(i); v != w {
				t.Fatalf("%s[%d] = %v, want %v", typ, i, v, w)
			}
		}
	}

	// Q4_0: byte j = (j%16) | (15-j%16)<<4, d = 0.5.
	b := h(0.5)
	for j := 0; j < 16; j++ {
		b = append(b, byte(j)|byte(15-j)<<4)
	}
	check(tensor.Q4_0, b, func(i int) float32 {
		if i < 16 {
			return float32(i-8) * 0.5
		}
		return float32(15-(i-16)-8) * 0.5
	})

	// Q4_1: same nibbles, d = 0.25, m = -1.
	b = append(h(0.25), h(-1)...)
	for j := 0; j < 16; j++ {
		b = append(b, byte(j)|byte(15-j)<<4)
	}
	check(tensor.Q4_1, b, func(i int) float32 {
		q := i
		if i >= 16 {
			q = 15 - (i - 16)
		}
		return float32(q)*0.25 - 1
	})

	// Q8_0: q = i-16, d = 2.
	b = h(2)
	for j := 0; j < 32; j++ {
		b = append(b, byte(int8(j-16)))
	}
	check(tensor.Q8_0, b, func(i int) float32 { return float32(i-16) * 2 })

	// Q4_K: sub-block s has scale s+1 and min 2s (6-bit packed), d = 1,
	// dmin = 0.5; every nibble equals the sub-block index.
	sc := packScaleMin([8]uint8{1, 2, 3, 4, 5, 6, 7, 8}, [8]uint8{0, 2, 4, 6, 8, 10, 12, 14})
	b = append(append(h(1), h(0.5)...), sc[:]...)
	for k := 0; k < 4; k++ {
		for l := 0; l < 32; l++ {
			b = append(b, byte(2*k)|byte(2*k+1)<<4)
		}
	}
	k4 := func(i int) float32 { s := i / 32; return float32(s+1)*float32(s) - 0.5*float32(2*s) }
	check(tensor.Q4_K, b, k4)

	// Q5_K: as Q4_K plus the fifth bit set for odd elements.
	b = append(append(h(1), h(0.5)...), sc[:]...)
	for l := 0; l < 32; l++ {
		if l%2 == 1 {
			b = append(b, 0xff)
		} else {
			b = append(b, 0)
		}
	}
	for k := 0; k < 4; k++ {
		for l := 0; l < 32; l++ {
			b = append(b, byte(2*k)|byte(2*k+1)<<4)
		}
	}
	check(tensor.Q5_K, b, func(i int) float32 {
		s := i / 32
		q := s
		if i%2 == 1 {
			q += 16
		}
		return float32(s+1)*float32(q) - 0.5*float32(2*s)
	})

	// Q6_K: element e has q = e%64 (6 bits), scale of its 16-group g = g-8.
	var q6 [tensor.QK_K]uint8
	for e := range q6 {
		q6[e] = uint8(e % 64)
	}
	b = make([]byte, 210)
	for n := 0; n < 2; n++ {
		for l := 0; l < 32; l++ {
			e := 128 * n
			b[64*n+l] = q6[e+l]&15 | (q6[e+l+64]&15)<<4
			b[64*n+l+32] = q6[e+l+32]&15 | (q6[e+l+96]&15)<<4
			b[128+32*n+l] = q6[e+l]>>4 | (q6[e+l+32]>>4)<<2 | (q6[e+l+64]>>4)<<4 | (q6[e+l+96]>>4)<<6
		}
	}
	for g := 0; g < 16; g++ {
		b[192+g] = byte(int8(g - 8))
	}
	copy(b[208:], h(0.125))
	check(tensor.Q6_K, b, func(i int) float32 { return 0.125 * float32(i/16-8) * float32(int(q6[i])-32) })
}

// packScaleMin is the inverse of ScaleMinK4, written from the layout.
func packScaleMin(sc, m [8]uint8) [12]byte {
	var q [12]byte
	for j := 0; j < 4; j++ {
		q[j] = sc[j]&63 | (sc[j+4]>>4)<<6
		q[j+4] = m[j]&63 | (m[j+4]>>4)<<6
		q[j+8] = sc[j+4]&15 | (m[j+4]&15)<<4
	}
	return q
}

func TestScaleMinK4RoundTrip(t *testing.T) {
	var sc, m [8]uint8
	for i := range sc {
		sc[i], m[i] = uint8(i*9+5)&63, uint8(63-i*7)&63
	}
	q := packScaleMin(sc, m)
	for j := 0; j < 8; j++ {
		s, mm := tensor.ScaleMinK4(j, q[:])
		if s != sc[j] || mm != m[j] {
			t.Errorf("j=%d: got %d,%d want %d,%d", j, s, mm, sc[j], m[j])
		}
	}
}
