// Package testdata locates the shared test data (model files and goldens
// made by independent implementations) that tests read but never copy.
package testdata

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Root returns the test data directory: $SISKIN_TESTDATA, else
// ../shared/data beside the repository root. It fails the test, with a
// message saying what to set, when the directory is missing.
func Root(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SISKIN_TESTDATA")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		repo := filepath.Join(filepath.Dir(file), "..", "..")
		dir = filepath.Join(repo, "..", "shared", "data")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("test data not found at %s: set SISKIN_TESTDATA to the shared data folder (the one holding llm/ and tokenizers/)", dir)
	}
	return dir
}

// Path joins elements onto Root and fails the test if the result is missing.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{Root(t)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test data file missing: %s (set SISKIN_TESTDATA to the shared data folder)", p)
	}
	return p
}
