package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model/load"
)

func TestBandwidth(t *testing.T) {
	bw, err := MeasureBandwidth(64<<20, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !(bw.Min > 0 && bw.Min <= bw.Median && bw.Median <= bw.Max) || bw.Bytes != 64<<20 || bw.Runs != 3 {
		t.Fatalf("bandwidth %+v", bw)
	}
	t.Logf("%.1f GB/s [%.1f-%.1f]", bw.Median, bw.Min, bw.Max)
}

// siskin bench's JSON on the tiny models: one object per test with the
// documented fields, positive speeds, and a generation share of the
// bandwidth ceiling in (0, 1.5).
func TestRunJSON(t *testing.T) {
	for _, name := range []string{"spark2_5-tiny-q4_k_m.gguf", "qwen3-tiny-f32.gguf"} {
		t.Run(name, func(t *testing.T) {
			path := testdata.Path(t, "llm", "tiny", "models", name)
			lm, err := load.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer lm.Close()
			info := Describe(path, lm)
			res, err := Run(lm.Model, info, Options{Prompts: []int{16}, Gens: []int{8}, Threads: 2, Reps: 2, BandwidthBytes: 128 << 20, BandwidthRuns: 2})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WriteJSON(&buf, res); err != nil {
				t.Fatal(err)
			}
			var objs []map[string]any
			if err := json.Unmarshal(buf.Bytes(), &objs); err != nil {
				t.Fatalf("%v\n%s", err, buf.String())
			}
			if len(objs) != 2 {
				t.Fatalf("%d objects, want 2", len(objs))
			}
			for i, o := range objs {
				test := []string{"pp16", "tg8"}[i]
				if o["test"] != test {
					t.Errorf("object %d: test %v, want %s", i, o["test"], test)
				}
				for _, k := range []string{"tokens_per_second_median", "tokens_per_second_min", "tokens_per_second_max", "bandwidth_gbs", "weight_bytes", "threads"} {
					v, ok := o[k].(float64)
					if !ok || !(v > 0) {
						t.Errorf("%s: %s = %v, want a positive number", test, k, o[k])
					}
				}
				if o["tokens_per_second_min"].(float64) > o["tokens_per_second_median"].(float64) || o["tokens_per_second_median"].(float64) > o["tokens_per_second_max"].(float64) {
					t.Errorf("%s: min/median/max out of order: %v", test, o)
				}
				np, ng := o["n_prompt"].(float64), o["n_gen"].(float64)
				share, hasShare := o["ceiling_share"].(float64)
				if i == 0 {
					if np != 16 || ng != 0 || hasShare {
						t.Errorf("pp16: n_prompt %v n_gen %v ceiling_share %v", np, ng, o["ceiling_share"])
					}
				} else {
					// A tiny model's weights sit in cache, so its share of the
					// DRAM ceiling may exceed 1; only sanity is checked here.
					if np != 0 || ng != 8 || !hasShare || !(share > 0 && share < 100) {
						t.Errorf("tg8: n_prompt %v n_gen %v ceiling_share %v", np, ng, o["ceiling_share"])
					}
				}
			}
			var table bytes.Buffer
			if err := WriteTable(&table, res); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(table.String(), " tg8 |") || !strings.Contains(table.String(), "memory read bandwidth") {
				t.Errorf("table:\n%s", table.String())
			}
		})
	}
}
