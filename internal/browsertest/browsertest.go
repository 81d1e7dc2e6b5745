// Package browsertest starts Debian's headless Chromium for siskin's
// browser tests (the chat page), through chromedp. Only tests import it.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium finds Debian's Chromium, or fails saying how to install it.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SISKIN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the browser test needs Chromium: apt-get update && apt-get install -y chromium (or set SISKIN_CHROMIUM to its path)")
	return ""
}

// New starts headless Chromium with a fresh profile, closed when the test
// ends, and returns the allocator context tabs are opened from.
func New(t testing.TB) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 800),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"), // the voice test's audio starts from script
		// Chromium leaves its singleton socket folder in TMPDIR; keep it in the test's.
		chromedp.Env("TMPDIR=" + t.TempDir()),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	return actx
}
