package kernels_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedAssembly: the committed output of kernels/_gen is what the
// generator writes now.
func TestGeneratedAssembly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	cmd := exec.Command(gobin, "run", "./_gen", "-out", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./_gen: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.s"))
	if len(files) == 0 {
		t.Fatal("the generator wrote nothing")
	}
	for _, f := range files {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Base(f))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not the generator's output (run go run ./kernels/_gen from the repository root)", filepath.Base(f))
		}
	}
}
