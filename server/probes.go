package server

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// Kubernetes probes. Liveness (/livez) only says the process answers: it
// stays 200 while the model loads and while the server drains, so a slow
// load or a graceful shutdown never gets the pod restarted. Readiness
// (/health, vLLM's route, and its Kubernetes-style alias /readyz) says
// the server takes new requests: 503 while loading and while draining,
// which takes the pod out of its Service's and InferencePool's endpoints.

func live(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

// LoadingHandler answers while the model loads: /livez 200, /health and
// /readyz 503, everything else 503 with Retry-After.
func LoadingHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, &apiError{Status: 503, Message: "model is loading", Type: "unavailable"})
	})
	return mux
}

// drainGate is what a server needs to drain: whether it is draining, and
// how many HTTP requests it is serving.
type drainGate struct {
	draining atomic.Bool
	inflight atomic.Int64
}

// SetDraining makes the server refuse new generation requests (503) and
// turns readiness (/health) to 503 while in-flight ones finish.
func (g *drainGate) SetDraining() { g.draining.Store(true) }

// track counts the requests in flight, so Drain knows when the last one
// has finished. The count is raised before the handler checks draining,
// so a request Drain does not wait for has been refused.
func (g *drainGate) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.inflight.Add(1)
		defer g.inflight.Add(-1)
		next.ServeHTTP(w, r)
	})
}

// Drain turns readiness to 503 and refuses new generation requests, then
// waits until the requests in flight have finished or ctx ends (its error
// then). Probes and scrapes that arrive meanwhile are answered and
// counted only while they run.
func (g *drainGate) Drain(ctx context.Context) error {
	g.SetDraining()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for g.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// InFlight is the number of HTTP requests being served.
func (g *drainGate) InFlight() int64 { return g.inflight.Load() }
