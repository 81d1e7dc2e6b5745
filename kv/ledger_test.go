package kv

import (
	"testing"

	"github.com/siskin-ml/siskin/ledger"
)

func TestRegisterMemory(t *testing.T) {
	c := &Cache{Layers: []*Layer{NewLayer(64, 0), NewLayer(64, 16)}}
	row := make([]float32, 64)
	for range 40 {
		for _, l := range c.Layers {
			l.Append(row, row)
		}
	}
	led := ledger.New()
	c.RegisterMemory(led, "KV")
	r := led.Report()
	full, ok1 := r.Find("KV layer 0 (full)")
	sliding, ok2 := r.Find("KV layer 1 (sliding 16)")
	if !ok1 || !ok2 {
		t.Fatalf("lines missing: %+v", r.Entries)
	}
	if full.Bytes != int64(c.Layers[0].Bytes()) || sliding.Bytes != int64(c.Layers[1].Bytes()) {
		t.Errorf("bytes %d, %d; want %d, %d", full.Bytes, sliding.Bytes, c.Layers[0].Bytes(), c.Layers[1].Bytes())
	}
	// The ring holds the window, not the sequence.
	if sliding.Bytes != 2*4*16*64 {
		t.Errorf("sliding layer holds %d bytes, want %d", sliding.Bytes, 2*4*16*64)
	}
	for _, e := range []ledger.Entry{full, sliding} {
		if e.Resident <= 0 || e.Resident > e.Bytes {
			t.Errorf("%s: resident %d of %d", e.Name, e.Resident, e.Bytes)
		}
	}
	if e, _ := r.Find("KV layer 0 (full)"); e.Category != ledger.KV {
		t.Errorf("category %q", e.Category)
	}
}

// TestRegisterMemoryF16: an f16 cache reports half the bytes of float32.
func TestRegisterMemoryF16(t *testing.T) {
	c := &Cache{Layers: []*Layer{NewLayerOf(64, 0, F16), NewLayerOf(64, 16, F16)}}
	row := make([]float32, 64)
	for range 40 {
		for _, l := range c.Layers {
			l.Append(row, row)
		}
	}
	led := ledger.New()
	c.RegisterMemory(led, "KV")
	r := led.Report()
	sliding, _ := r.Find("KV layer 1 (sliding 16)")
	full, _ := r.Find("KV layer 0 (full)")
	if sliding.Bytes != 2*2*16*64 || full.Bytes != int64(c.Layers[0].Bytes()) || full.Bytes < 2*2*40*64 || full.Bytes >= 2*4*40*64 {
		t.Errorf("f16 bytes: full %d, sliding %d", full.Bytes, sliding.Bytes)
	}
	if full.Resident <= 0 || full.Resident > full.Bytes {
		t.Errorf("resident %d of %d", full.Resident, full.Bytes)
	}
}

// TestRegisterMemoryQ8: a q8_0 cache reports 34 bytes per 32 elements.
func TestRegisterMemoryQ8(t *testing.T) {
	c := &Cache{Layers: []*Layer{NewLayerOf(64, 16, Q8_0)}}
	row := make([]float32, 64)
	for range 40 {
		c.Layers[0].Append(row, row)
	}
	led := ledger.New()
	c.RegisterMemory(led, "KV")
	r := led.Report()
	if sliding, _ := r.Find("KV layer 0 (sliding 16)"); sliding.Bytes != 2*68*16 {
		t.Errorf("q8_0 bytes: %d, want %d", sliding.Bytes, 2*68*16)
	}
}
