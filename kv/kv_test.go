package kv

import (
	"math"
	"testing"
)

func row(dim int, v float32) []float32 {
	r := make([]float32, dim)
	for i := range r {
		r[i] = v
	}
	return r
}

func TestSlidingRingKeepsWindow(t *testing.T) {
	const dim, window = 8, 16
	full, sliding := NewLayer(dim, 0), NewLayer(dim, window)
	for p := 0; p < 4*window; p++ {
		full.Append(row(dim, float32(p)), row(dim, -float32(p)))
		sliding.Append(row(dim, float32(p)), row(dim, -float32(p)))
	}
	if sliding.Stored() != window || sliding.Bytes() != 2*4*dim*window {
		t.Errorf("sliding layer holds %d positions in %d bytes, want %d in %d", sliding.Stored(), sliding.Bytes(), window, 2*4*dim*window)
	}
	if full.Stored() != 4*window {
		t.Errorf("full layer holds %d", full.Stored())
	}
	for p := sliding.First(); p < sliding.Len(); p++ {
		if sliding.Key(p)[0] != float32(p) || sliding.Value(p)[dim-1] != -float32(p) {
			t.Fatalf("position %d: got %v", p, sliding.Key(p)[0])
		}
	}
	if err := sliding.Truncate(sliding.Len() - 1); err == nil {
		t.Error("rewinding a full ring should fail: the position it needs is gone")
	}
	if err := full.Truncate(10); err != nil || full.Len() != 10 {
		t.Errorf("truncate full: %v", err)
	}
}

func TestSeek(t *testing.T) {
	const dim, window = 4, 8
	for _, w := range []int{0, window} {
		l := NewLayer(dim, w)
		l.Seek(100)
		for p := 100; p < 110; p++ {
			l.Append(row(dim, float32(p)), row(dim, 0))
		}
		if l.Len() != 110 {
			t.Fatalf("window %d: len %d", w, l.Len())
		}
		want := 10
		if w > 0 {
			want = w
		}
		if l.Stored() != want || l.Key(109)[0] != 109 || l.Key(110 - want)[0] != float32(110-want) {
			t.Errorf("window %d: stored %d", w, l.Stored())
		}
	}
}

func TestClone(t *testing.T) {
	c := &Cache{Layers: []*Layer{NewLayer(2, 0), NewLayer(2, 3)}}
	for i := range 5 {
		for _, l := range c.Layers {
			l.Append([]float32{float32(i), 0}, []float32{0, float32(i)})
		}
	}
	d := c.Clone(3)
	// Room for 3 more positions of 2 values: the full layer grows by
	// them, the ring of 3 stays 3 rows.
	if full := d.Layers[0]; cap(full.k)-len(full.k) < 6 {
		t.Errorf("clone of a full layer has room for %d values, want 6", cap(full.k)-len(full.k))
	}
	if ring := d.Layers[1]; len(ring.k) != 6 || cap(ring.k) != 6 {
		t.Errorf("clone of a ring of 3 holds %d/%d values, want 6/6", len(ring.k), cap(ring.k))
	}
	for _, l := range c.Layers {
		l.Append([]float32{9, 9}, []float32{9, 9})
	}
	for i, l := range d.Layers {
		if l.Len() != 5 || l.Key(4)[0] != 4 || l.Value(4)[1] != 4 {
			t.Errorf("layer %d of the clone changed with the original: len %d, key %v", i, l.Len(), l.Key(4))
		}
		if i == 1 && l.Key(2)[0] != 2 {
			t.Errorf("sliding clone lost position 2: %v", l.Key(2))
		}
	}
}

// TestRun: Run's rows are Key and Value of consecutive positions, in at
// most two runs where a sliding layer's ring wraps, and a position no
// longer held panics.
func TestRun(t *testing.T) {
	const dim, window = 4, 8
	for _, l := range []*Layer{NewLayer(dim, 0), NewLayer(dim, window)} {
		for p := 0; p < 21; p++ {
			l.Append(row(dim, float32(p)), row(dim, float32(-p)))
		}
		from := l.First() + 1
		runs := 0
		for p := from; p < l.Len(); runs++ {
			k, v, m := l.Run(p, l.Len()-p)
			if m < 1 || len(k) != m*dim || len(v) != m*dim {
				t.Fatalf("window %d: Run(%d) gave %d rows in %d/%d floats", l.Window, p, m, len(k), len(v))
			}
			for i := 0; i < m; i++ {
				if k[i*dim] != l.Key(p + i)[0] || v[i*dim] != l.Value(p + i)[0] {
					t.Fatalf("window %d: Run(%d) row %d is not position %d", l.Window, p, i, p+i)
				}
			}
			p += m
		}
		if runs > 2 || (l.Window == 0 && runs != 1) {
			t.Errorf("window %d: %d runs", l.Window, runs)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Run of a position no longer held did not panic")
		}
	}()
	l := NewLayer(dim, window)
	for p := 0; p < 12; p++ {
		l.Append(row(dim, 0), row(dim, 0))
	}
	l.Run(2, 3)
}

// TestF16Layer: an f16 layer keeps its rows rounded to halves (values
// exact in f16 come back unchanged, others round to nearest even), wraps
// its ring, rewinds, clones independently and counts 2 bytes an element.
func TestF16Layer(t *testing.T) {
	const dim, window = 8, 16
	for _, w := range []int{0, window} {
		l := NewLayerOf(dim, w, F16)
		for p := 0; p < 3*window; p++ {
			l.Append(row(dim, float32(p)), row(dim, -float32(p)-1.0/4096))
		}
		if l.Type() != F16 || l.Len() != 3*window {
			t.Fatalf("window %d: type %v len %d", w, l.Type(), l.Len())
		}
		if want := 2 * 2 * dim * l.Stored(); w > 0 && l.Bytes() != want {
			t.Errorf("window %d: %d bytes, want %d", w, l.Bytes(), want)
		}
		for p := l.First(); p < l.Len(); p++ {
			// -p - 2^-12 rounds to -p in half precision once p >= 1.
			wantV := -float32(p) - 1.0/4096
			if p >= 1 {
				wantV = -float32(p)
			}
			if l.Key(p)[0] != float32(p) || l.Value(p)[dim-1] != wantV {
				t.Fatalf("window %d position %d: key %v value %v", w, p, l.Key(p)[0], l.Value(p)[dim-1])
			}
			if l.KeyF16(p)[1] != 0x3c00 && p == 1 {
				t.Fatalf("position 1 stored as %#x", l.KeyF16(p)[1])
			}
		}
		// Run's rows are the stored rows, in at most two runs.
		runs := 0
		for p := l.First(); p < l.Len(); runs++ {
			k, v, m := l.RunF16(p, l.Len()-p)
			for i := 0; i < m; i++ {
				if k[i*dim] != l.KeyF16(p + i)[0] || v[i*dim] != l.ValueF16(p + i)[0] {
					t.Fatalf("window %d: RunF16(%d) row %d", w, p, i)
				}
			}
			p += m
		}
		if runs > 2 {
			t.Errorf("window %d: %d runs", w, runs)
		}
		c := &Cache{Layers: []*Layer{l}}
		d := c.Clone(0)
		if err := l.Truncate(l.Len() - 1); err != nil && w == 0 {
			t.Fatal(err)
		}
		l.AppendF16(make([]uint16, dim), make([]uint16, dim))
		if d.Type() != F16 || d.Layers[0].Key(d.Len() - 1)[0] != float32(3*window-1) {
			t.Errorf("window %d: clone changed with the original", w)
		}
	}
	// f32 accessors on an f16 layer are refused rather than misread.
	defer func() {
		if recover() == nil {
			t.Error("Run on an f16 layer did not panic")
		}
	}()
	l := NewLayerOf(4, 0, F16)
	l.Append(row(4, 1), row(4, 1))
	l.Run(0, 1)
}

func TestParseType(t *testing.T) {
	for _, s := range []string{"f16", "f32", "q8_0"} {
		if typ, err := ParseType(s); err != nil || typ.String() != s {
			t.Errorf("%s: %v %v", s, typ, err)
		}
	}
	if _, err := ParseType("q4_0"); err == nil {
		t.Error("q4_0 accepted")
	}
	if F16.Size() != 2 || F32.Size() != 4 {
		t.Error("sizes")
	}
	if F32.RowBytes(128) != 512 || F16.RowBytes(128) != 256 || Q8_0.RowBytes(128) != 136 {
		t.Error("row bytes")
	}
	if Q8_0.CheckHeadDim(80) == nil || Q8_0.CheckHeadDim(64) != nil || F16.CheckHeadDim(80) != nil {
		t.Error("CheckHeadDim")
	}
}

// CopyRows reads across a sliding layer's ring wrap, and AppendRow puts
// the same rows back into an empty layer, in either element type.
func TestCopyRowsRoundTrip(t *testing.T) {
	const dim, window = 4, 8
	for _, typ := range []Type{F32, F16, Q8_0} {
		dim := dim
		if typ == Q8_0 {
			dim = 32
		}
		src := NewLayerOf(dim, window, typ)
		for p := 0; p < 13; p++ {
			src.Append(row(dim, float32(p)), row(dim, -float32(p)))
		}
		r := src.CopyRows(6, 7) // slots 6, 7, then 0..4 after the wrap
		if r.Len() != 7 {
			t.Fatalf("%s: %d rows copied, want 7", typ, r.Len())
		}
		dst := NewLayerOf(dim, 0, typ)
		dst.Seek(6)
		for i := 0; i < r.Len(); i++ {
			dst.AppendRow(r, i)
		}
		for p := 6; p < 13; p++ {
			// q8_0 rounds p (p/127 in fp16 times 127): the very bits copied come back.
			if k, v := dst.Key(p), dst.Value(p); k[0] != src.Key(p)[0] || v[dim-1] != src.Value(p)[dim-1] ||
				math.Abs(float64(k[0])-float64(p)) > 0.01 {
				t.Errorf("%s: position %d restored as key %v value %v", typ, p, k, v)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("f16 rows appended to a float32 layer")
		}
	}()
	f16 := NewLayerOf(dim, 0, F16)
	f16.Append(row(dim, 1), row(dim, 1))
	NewLayer(dim, 0).AppendRow(f16.CopyRows(0, 1), 0)
}

// A limited cache allocates once up to firstRows positions and never
// holds more than its limit (what its budget counted), while an
// unlimited one doubles; the rows read back are the ones appended.
func TestLimit(t *testing.T) {
	const dim = 4
	for _, tc := range []struct {
		limit, n, wantCap int
	}{
		{0, 65, 128},                         // doubling
		{65, 65, 65},                         // one allocation, no more
		{300, 300, 300},                      // firstRows, then capped at the limit
		{1000, firstRows + 1, 2 * firstRows}, // firstRows, then doubled
		{1000, 1000, 1000},                   // doubled up to the limit
		{40, 50, 80},                         // past the limit: doubles again
	} {
		c := &Cache{Layers: []*Layer{NewLayerOf(dim, 0, F16), NewLayerOf(dim, 0, F32)}}
		if tc.limit > 0 {
			c.Limit(tc.limit)
		}
		for p := range tc.n {
			for _, l := range c.Layers {
				l.Append(row(dim, float32(p)), row(dim, -float32(p)))
			}
		}
		for _, l := range c.Layers {
			if got := l.Bytes() / (2 * dim * l.Type().Size()); got != tc.wantCap {
				t.Errorf("limit %d, %d positions, %s: room for %d, want %d", tc.limit, tc.n, l.Type(), got, tc.wantCap)
			}
			for p := range tc.n {
				if l.Key(p)[0] != float32(p) || l.Value(p)[dim-1] != -float32(p) {
					t.Fatalf("limit %d, %s: position %d reads %v", tc.limit, l.Type(), p, l.Key(p)[0])
				}
			}
		}
	}
}

// TestQ8Layer: a q8_0 layer stores blocks of 32 int8 with an fp16 scale:
// values come back within d*(1/2 + 127/2048) of what was appended (d = the block's amax /
// 127; half a step plus the scale's fp16 rounding); it wraps its ring,
// rewinds, clones independently and counts 34 bytes per 32 elements.
func TestQ8Layer(t *testing.T) {
	const dim, window = 64, 16
	for _, w := range []int{0, window} {
		l := NewLayerOf(dim, w, Q8_0)
		val := func(p, i int) float32 { return float32(math.Sin(float64(p*dim+i))) * float32(1+p) }
		for p := 0; p < 3*window; p++ {
			k, v := make([]float32, dim), make([]float32, dim)
			for i := range k {
				k[i], v[i] = -val(p, i), val(p, i)
			}
			l.Append(k, v)
		}
		if l.Type() != Q8_0 || l.Len() != 3*window {
			t.Fatalf("window %d: type %v len %d", w, l.Type(), l.Len())
		}
		if want := 2 * 68 * l.Stored(); w > 0 && l.Bytes() != want {
			t.Errorf("window %d: %d bytes, want %d", w, l.Bytes(), want)
		}
		for p := l.First(); p < l.Len(); p++ {
			k, v := l.Key(p), l.Value(p)
			for i := range k {
				if k[i] != -v[i] {
					t.Fatalf("window %d position %d: key[%d] = %v, value %v", w, p, i, k[i], v[i])
				}
				amax := 0.0
				for j := i &^ 31; j < i&^31+32; j++ {
					amax = math.Max(amax, math.Abs(float64(val(p, j))))
				}
				if d := math.Abs(float64(v[i] - val(p, i))); d > amax/127*(0.5+127.0/2048) {
					t.Fatalf("window %d position %d: value[%d] = %v, appended %v", w, p, i, v[i], val(p, i))
				}
			}
		}
		runs := 0
		for p := l.First(); p < l.Len(); runs++ {
			k, _, m := l.RunQ8(p, l.Len()-p)
			if len(k) != m*68 {
				t.Fatalf("window %d: RunQ8(%d) gave %d bytes for %d rows", w, p, len(k), m)
			}
			p += m
		}
		if runs > 2 {
			t.Errorf("window %d: %d runs", w, runs)
		}
		c := &Cache{Layers: []*Layer{l}}
		d := c.Clone(0)
		want := d.Layers[0].Value(d.Len() - 1)
		if err := l.Truncate(l.Len() - 1); err != nil && w == 0 {
			t.Fatal(err)
		}
		l.AppendQ8(make([]byte, 68), make([]byte, 68))
		if got := d.Layers[0].Value(d.Len() - 1); d.Type() != Q8_0 || got[5] != want[5] || got[5] == 0 {
			t.Errorf("window %d: clone changed with the original", w)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a q8_0 layer of dim 48 was made")
		}
	}()
	NewLayerOf(48, 0, Q8_0)
}

// TestReset: an emptied cache holds no position, keeps its memory (the
// next sequence's appends write where the last one's did, growing only
// past that room) and reads back what the new sequence appended, in
// full and sliding layers of every element type.
func TestReset(t *testing.T) {
	const dim, window = 32, 16
	var layers []*Layer
	for _, typ := range []Type{F32, F16, Q8_0} {
		layers = append(layers, NewLayerOf(dim, 0, typ), NewLayerOf(dim, window, typ))
	}
	c := &Cache{Layers: layers}
	c.Limit(40)
	for p := range 40 {
		for _, l := range c.Layers {
			l.Append(row(dim, float32(p)), row(dim, -float32(p)))
		}
	}
	bytes := c.Bytes()
	c.Reset()
	if c.Len() != 0 || c.Bytes() != bytes {
		t.Fatalf("after Reset: %d positions, %d bytes (had %d)", c.Len(), c.Bytes(), bytes)
	}
	c.Limit(30)
	for p := range 30 {
		for _, l := range c.Layers {
			l.Append(row(dim, float32(100+p)), row(dim, -float32(100+p)))
		}
	}
	if c.Bytes() != bytes {
		t.Errorf("30 positions after Reset hold %d bytes, want the same %d", c.Bytes(), bytes)
	}
	for _, l := range c.Layers {
		if l.Len() != 30 {
			t.Fatalf("%s window %d: %d positions", l.Type(), l.Window, l.Len())
		}
		for p := l.First(); p < l.Len(); p++ {
			if k, v := l.Key(p)[0], l.Value(p)[dim-1]; !near(l, k, float32(100+p)) || !near(l, v, -float32(100+p)) {
				t.Fatalf("%s window %d: position %d reads %v, %v", l.Type(), l.Window, p, k, v)
			}
		}
	}
	// Past the old room the layers grow as a fresh one would.
	for p := 30; p < 50; p++ {
		for _, l := range c.Layers {
			l.Append(row(dim, float32(100+p)), row(dim, -float32(100+p)))
		}
	}
	for _, l := range c.Layers {
		if k := l.Key(49)[0]; !near(l, k, 149) || !near(l, l.Key(l.First())[0], float32(100+l.First())) {
			t.Fatalf("%s window %d: position 49 reads %v", l.Type(), l.Window, k)
		}
	}
}

// near is exact equality but for q8_0, whose scale is an fp16 (relative
// error up to 2^-11, and half a step of 1/127 of the block's amax).
func near(l *Layer, got, want float32) bool {
	if l.Type() != Q8_0 {
		return got == want
	}
	return math.Abs(float64(got-want)) <= math.Abs(float64(want))*(1.0/2048+0.5/127)
}
