package hub

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/fakehub"
)

// TestHelperProcessPull is the child of TestTwoProcessesDownloadOnce.
func TestHelperProcessPull(t *testing.T) {
	if os.Getenv("SISKIN_HUB_HELPER") == "" {
		t.Skip("run by TestTwoProcessesDownloadOnce")
	}
	c := &Client{Endpoint: os.Getenv("HF_ENDPOINT"), Cache: os.Getenv("HF_HUB_CACHE"), HTTP: &http.Client{}, Log: os.Stderr, Backoff: time.Millisecond}
	ref, _ := ParseRef("hf://org/tiny-GGUF:Q4_K_M")
	if _, err := c.Pull(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
}

// Two processes pulling one file at once: the blob's lock makes the
// second wait and find it done; the CDN sends it once.
func TestTwoProcessesDownloadOnce(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files, _ := ggufRepo(h)
	h.Delay(time.Second)
	cache := t.TempDir()
	var outs [2]strings.Builder
	var cmds [2]*exec.Cmd
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestHelperProcessPull$", "-test.v")
		cmds[i].Env = append(os.Environ(), "SISKIN_HUB_HELPER=1", "HF_ENDPOINT="+h.API.URL, "HF_HUB_CACHE="+cache)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
		}
	}
	if gets := h.Gets(sum(files["tiny-model-Q4_K_M.gguf"])); len(gets) != 1 {
		t.Errorf("downloaded %d times", len(gets))
	}
	if !strings.Contains(outs[0].String()+outs[1].String(), "waiting for another download") {
		t.Errorf("the processes did not overlap:\n%s\n%s", outs[0].String(), outs[1].String())
	}
}
