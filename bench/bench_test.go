package bench

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
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

// forwardLog is a model that logs the cache length each one-token step
// starts from.
type forwardLog struct {
	model.Model
	steps []int
}

func (f *forwardLog) Forward(c *kv.Cache, tokens []int, all bool) ([]float32, error) {
	if len(tokens) == 1 {
		f.steps = append(f.steps, c.Len())
	}
	return f.Model.Forward(c, tokens, all)
}

// A test's repetitions take the depths in turn (each after its warm-up),
// or, under a CPU profile, run depth by depth, one profile each; the
// results come in order of depth either way.
func TestRunDepthsInTurn(t *testing.T) {
	lm, err := load.Open(testdata.Path(t, "llm", "tiny", "models", "qwen3-tiny-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	for _, profiled := range []bool{false, true} {
		f := &forwardLog{Model: lm.Model}
		opt := Options{Gens: []int{2}, Depths: []int{0, 8}, Threads: 1, Reps: 2, BandwidthBytes: -1}
		var profiles []string
		want := []int{0, 8, 0, 1, 8, 9, 0, 1, 8, 9} // warm-ups, then the depths in turn
		if profiled {
			opt.Profile = func(test string) (func() error, error) {
				profiles = append(profiles, test)
				return func() error { return nil }, nil
			}
			want = []int{0, 8, 0, 1, 0, 1, 8, 9, 8, 9}
		}
		res, err := Run(f, ModelInfo{}, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.steps, want) {
			t.Errorf("profiled %v: steps from cache lengths %v, want %v", profiled, f.steps, want)
		}
		if profiled && !slices.Equal(profiles, []string{"tg2", "tg2 @ d8"}) {
			t.Errorf("profiles %q", profiles)
		}
		if len(res) != 2 || res[0].Test != "tg2" || res[1].Test != "tg2 @ d8" || res[1].NDepth != 8 || len(res[0].SamplesNS) != 2 || len(res[1].SamplesNS) != 2 {
			t.Errorf("profiled %v: results %+v", profiled, res)
		}
	}
}
