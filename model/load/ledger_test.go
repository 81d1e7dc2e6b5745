package load

import (
	"fmt"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/ledger"
)

func TestRegisterMemory(t *testing.T) {
	for _, c := range []struct {
		file  string
		norms int // vectors of Hidden floats, besides qwen3's per-head ones
		ropes []string
	}{
		{"spark2_5-tiny-q4_0.gguf", 2*8 + 1, []string{"RoPE table, full layers (rot 16)", "RoPE table, sliding layers (rot 64)"}},
		{"qwen3-tiny-q4_k_m.gguf", 2*8 + 1, []string{"RoPE table (rot 64)"}},
		{"llama-tiny-q4_k_m.gguf", 2*8 + 1, nil},
	} {
		t.Run(c.file, func(t *testing.T) {
			lm, err := Open(testdata.Path(t, "llm", "tiny", "models", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer lm.Close()
			led := ledger.New()
			lm.RegisterMemory(led)
			cfg := lm.Model.Config()
			cache := lm.Model.NewCache()
			if _, err := lm.Model.Forward(cache, []int{1, 2, 3, 4}, false); err != nil {
				t.Fatal(err)
			}
			r := led.Report()

			var tensorBytes int64
			for _, ti := range lm.Source.GGUF.Tensors {
				tensorBytes += int64(len(ti.Data))
			}
			var mapped int64
			for i := 0; i < cfg.Layers; i++ {
				e, ok := r.Find(fmt.Sprintf("blk.%d weights (mapped)", i))
				if !ok || e.Category != ledger.WeightsMapped {
					t.Fatalf("layer %d: %+v, %v", i, e, ok)
				}
				// The forward pass read every weight of the layer.
				if e.Resident < e.Bytes-4096 {
					t.Errorf("%s: %d of %d bytes resident after a forward pass", e.Name, e.Resident, e.Bytes)
				}
			}
			for _, e := range r.Entries {
				if e.Category == ledger.WeightsMapped {
					mapped += e.Bytes
				}
			}
			hdr, ok := findSuffix(r, ": header and padding (mapped)")
			if !ok {
				t.Fatal("no line for the GGUF header")
			}
			// Every tensor is in exactly one line besides the header's.
			if mapped-hdr.Bytes != tensorBytes {
				t.Errorf("mapped lines hold %d bytes, the tensors %d", mapped-hdr.Bytes, tensorBytes)
			}
			if e, _ := r.Find("norm vectors (float32)"); e.Bytes < int64(4*cfg.Hidden*c.norms) {
				t.Errorf("norm vectors %d bytes, want at least %d", e.Bytes, 4*cfg.Hidden*c.norms)
			}
			if c.ropes == nil {
				c.ropes = []string{fmt.Sprintf("RoPE table (rot %d)", cfg.LayerSpecs[0].RopeDims)}
			}
			for _, name := range c.ropes {
				// Four positions seen: the table holds its minimum of 64.
				if e, ok := r.Find(name); !ok || e.Category != ledger.RoPE || e.Bytes < 64*4 {
					t.Errorf("%s: %+v, %v", name, e, ok)
				}
			}
			if e, ok := r.Find("tokenizer"); !ok || e.Bytes < int64(lm.Tokenizer.VocabSize()) {
				t.Errorf("tokenizer: %+v, %v", e, ok)
			}
			if e, ok := r.Find("gguf metadata (heap copies)"); !ok || e.Bytes <= 0 {
				t.Errorf("gguf metadata: %+v, %v", e, ok)
			}
		})
	}
}

func findSuffix(r *ledger.Report, suffix string) (ledger.Entry, bool) {
	for _, e := range r.Entries {
		if len(e.Name) >= len(suffix) && e.Name[len(e.Name)-len(suffix):] == suffix {
			return e, true
		}
	}
	return ledger.Entry{}, false
}
