//go:build unix

package main

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// TestServePprof: --pprof serves the runtime profiles on their own
// address, and the API's address does not.
func TestServePprof(t *testing.T) {
	model := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf")
	out := &syncBuffer{}
	root := rootCmd()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"serve", "-m", model, "--port", "0", "--max-model-len", "256", "--pprof", "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	base := waitListening(t, out, exited)
	m := regexp.MustCompile(`msg=profiles url=(http://\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no profiles log line:\n%s", out)
	}
	if code := getStatus(t, m[1]+"cmdline"); code != http.StatusOK {
		t.Errorf("%scmdline: %d, want 200", m[1], code)
	}
	if code := getStatus(t, base+"/debug/pprof/cmdline"); code == http.StatusOK {
		t.Errorf("the API's address serves /debug/pprof/cmdline")
	}
}
