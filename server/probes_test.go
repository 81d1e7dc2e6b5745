package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Readiness (/health, /readyz) turns 503 while draining; liveness (/livez)
// stays 200. While loading, LoadingHandler answers the same way.
func TestProbesWhileDraining(t *testing.T) {
	ts := stories(t)
	for _, p := range []string{"/health", "/readyz", "/livez"} {
		if code := status(t, ts.URL+p); code != 200 {
			t.Errorf("%s before draining: %d", p, code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.srv.Drain(ctx); err != nil {
		t.Fatalf("Drain with nothing in flight: %v", err)
	}
	for p, want := range map[string]int{"/health": 503, "/readyz": 503, "/livez": 200} {
		if code := status(t, ts.URL+p); code != want {
			t.Errorf("%s while draining: %d, want %d", p, code, want)
		}
	}
	loading := httptest.NewServer(LoadingHandler())
	defer loading.Close()
	for p, want := range map[string]int{"/health": 503, "/readyz": 503, "/livez": 200, "/v1/models": 503} {
		if code := status(t, loading.URL+p); code != want {
			t.Errorf("%s while loading: %d, want %d", p, code, want)
		}
	}
}

// Drain waits for a request in flight and gives up at its deadline.
func TestDrainWaits(t *testing.T) {
	ts := stories(t)
	ts.srv.inflight.Add(1) // a request that has not finished
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ts.srv.Drain(ctx); err != context.DeadlineExceeded {
		t.Errorf("Drain with a request in flight: %v, want the deadline", err)
	}
	go func() { time.Sleep(20 * time.Millisecond); ts.srv.inflight.Add(-1) }()
	if err := ts.srv.Drain(context.Background()); err != nil {
		t.Errorf("Drain after the request ended: %v", err)
	}
}
