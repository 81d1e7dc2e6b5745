package engine

import (
	"context"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/ledger"
)

func TestRegisterMemory(t *testing.T) {
	e := New(tinySpark(t), Config{})
	defer e.Close()
	led := ledger.New()
	e.RegisterMemory(led)
	if l, _ := led.Report().Find("engine prefix cache"); l.Bytes != 0 {
		t.Errorf("empty engine: prefix cache line %+v", l)
	}
	p := prompt(48, 1)
	ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 2, Sampler: sampler(t, 0, 1, p)})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, ch)
	l, ok := led.Report().Find("engine prefix cache")
	if want := e.Stats().PrefixCacheBytes; !ok || want <= 0 || l.Bytes != want || l.Category != ledger.KV {
		t.Errorf("after a 48-token prompt: %+v, %v; Stats says %d", l, ok, want)
	}
	for e.Stats().Running != 0 {
		time.Sleep(time.Millisecond)
	}
	l, ok = led.Report().Find("engine spare caches")
	if want := e.Stats().SpareCacheBytes; !ok || want <= 0 || l.Bytes != want || l.Category != ledger.KV {
		t.Errorf("after the request ended: %+v, %v; Stats says %d", l, ok, want)
	}
}
