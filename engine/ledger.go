package engine

import "github.com/siskin-ml/siskin/ledger"

// RegisterMemory adds the engine's prefix cache and spare caches to l,
// read from Stats at every report (the loop goroutine owns the caches;
// Stats is safe to read).
// The caches of running sequences are not listed: only the loop may read
// them, so they fall under the runtime's unregistered heap objects.
func (e *Engine) RegisterMemory(l *ledger.Ledger) {
	l.AddFunc("engine prefix cache", ledger.KV, func() (int64, int64) {
		b := e.Stats().PrefixCacheBytes
		return b, b
	})
	l.AddFunc("engine spare caches", ledger.KV, func() (int64, int64) {
		b := e.Stats().SpareCacheBytes
		return b, b
	})
}
