package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/device"
)

func TestProbeCommandJSON(t *testing.T) {
	out, err := siskin(t, "probe", "--json", "--no-bandwidth")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"features", "cores", "caches", "memory", "bandwidth_gbs", "cpu", "auto_profile", "weight_path", "kernel_tier", "kernel_tiers"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	feats, _ := m["features"].(map[string]any)
	for _, name := range device.FeatureNames {
		if _, ok := feats[name].(bool); !ok {
			t.Errorf("features.%s = %v", name, feats[name])
		}
	}
	cores, _ := m["cores"].(map[string]any)
	if p, _ := cores["physical"].(float64); p < 1 {
		t.Errorf("cores %v", cores)
	}
	if m["bandwidth_gbs"] != nil {
		t.Errorf("bandwidth_gbs = %v with --no-bandwidth", m["bandwidth_gbs"])
	}
}

func TestProbeCommandTable(t *testing.T) {
	out, err := siskin(t, "probe", "-t", "1", "--duration", "10ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cpu ", "cores ", "caches ", "memory ", "features ", "read bandwidth ", "GB/s (1 thread,", "auto profile ", "weight path ", "kernel tier "} {
		if !strings.Contains(out, k) {
			t.Errorf("no %q in\n%s", k, out)
		}
	}
	t.Logf("\n%s", out)
}
