package main

import (
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	"github.com/siskin-ml/siskin/model"
)

// limitHeap sets Go's soft memory limit to the heap left live after
// loading plus heap (what the engine may hold) and a quarter more, unless
// GOMEMLIMIT is set. Between collections Go lets the heap grow to twice
// what is live (GOGC=100) and returns freed spans to the OS only slowly:
// after 100 distinct requests an LLM server with a 286 MiB KV budget held
// 287 MB of free heap spans and 136 MB of heap objects the ledger does
// not name, mostly garbage (GET /debug/memory), 687-709 MB of anonymous
// memory in all against 499 MB under this limit. Under it the collector
// runs before the heap passes it and freed pages go back; as a soft limit
// it never fails an allocation, it only makes collections more frequent.
func limitHeap(heap int64, log *slog.Logger) {
	if heap <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	runtime.GC()
	live := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(live)
	n := int64(live[0].Value.Uint64())
	limit := n + heap + (n+heap)/4 + 64<<20
	debug.SetMemoryLimit(limit)
	log.Info("Go heap limit", "MiB", limit>>20, "live_after_load_MiB", n>>20, "engine_MiB", heap>>20)
}

// llmHeapBytes is what an LLM engine may hold on the Go heap: the KV
// budget (sequences' caches, spares and prefix blocks), the activations
// of a step of maxToks tokens (the model's scratch buffers) and the
// logits of maxSeqs rows twice (a step's and the recycled ones).
func llmHeapBytes(c *model.Config, kvBytes int64, maxToks, maxSeqs int) int64 {
	if maxToks <= 0 {
		maxToks = 512 // engine.Config's default
	}
	perToken := int64(3*c.Hidden + 2*c.QDim() + 2*c.KVDim() + 2*c.FFN)
	return kvBytes + 4*int64(maxToks)*perToken + 2*4*int64(max(maxSeqs, 1))*int64(c.Vocab)
}
