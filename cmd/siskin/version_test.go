package main

import (
	"strings"
	"testing"
)

// --version prints the version the Go toolchain recorded: "(devel)" in a
// test binary, with the commit when the build stamped one (go build
// -buildvcs, the default in a git checkout).
func TestVersionFlag(t *testing.T) {
	out, err := siskin(t, "--version")
	if err != nil || !strings.HasPrefix(out, "siskin version ") || strings.TrimSpace(strings.TrimPrefix(out, "siskin version ")) == "" {
		t.Errorf("--version: %q %v", out, err)
	}
}
