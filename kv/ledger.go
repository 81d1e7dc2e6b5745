package kv

import (
	"fmt"

	"github.com/siskin-ml/siskin/ledger"
)

// resident is the part of the layer's buffers in physical memory: a
// sliding layer allocates its whole window at the first append but fills
// it a row at a time, and pages never written are not resident.
func (l *Layer) resident() int64 {
	return ledger.Resident(l.k) + ledger.Resident(l.v) + ledger.Resident(l.k16) + ledger.Resident(l.v16) +
		ledger.Resident(l.k8) + ledger.Resident(l.v8)
}

// RegisterMemory adds one ledger line per layer, "<prefix> layer N (full)"
// or "(sliding W)", measured at each report. The cache must not be
// appended to while a report runs (reports read its slices unlocked).
func (c *Cache) RegisterMemory(l *ledger.Ledger, prefix string) {
	for i, layer := range c.Layers {
		kind := "full"
		if layer.Window > 0 {
			kind = fmt.Sprintf("sliding %d", layer.Window)
		}
		l.AddFunc(fmt.Sprintf("%s layer %d (%s)", prefix, i, kind), ledger.KV, func() (int64, int64) {
			return int64(layer.Bytes()), layer.resident()
		})
	}
}
