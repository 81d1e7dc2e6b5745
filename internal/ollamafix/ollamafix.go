// Package ollamafix writes ollama-store fixtures for tests: blobs named
// by their sha256 and a manifest naming them, in ollama's layout.
package ollamafix

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Layer is a layer to write: its media type and content.
type Layer struct {
	MediaType string
	Data      []byte
}

// Write stores a model under dir (an OLLAMA_MODELS folder) as
// registry.ollama.ai/library/NAME/TAG: the GGUF at gguf (copied) as the
// model layer, then the other layers. It returns the model blob's path.
func Write(t testing.TB, dir, name, tag, gguf string, others ...Layer) string {
	t.Helper()
	blobs := filepath.Join(dir, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	type layer struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int64  `json:"size"`
	}
	put := func(media string, r io.Reader) (layer, string) {
		tmp, err := os.CreateTemp(blobs, "tmp-")
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(tmp, h), r)
		tmp.Close()
		if err != nil {
			t.Fatal(err)
		}
		hx := hex.EncodeToString(h.Sum(nil))
		p := filepath.Join(blobs, "sha256-"+hx)
		if err := os.Rename(tmp.Name(), p); err != nil {
			t.Fatal(err)
		}
		return layer{media, "sha256:" + hx, n}, p
	}
	f, err := os.Open(gguf)
	if err != nil {
		t.Fatal(err)
	}
	model, modelPath := put("application/vnd.ollama.image.model", f)
	f.Close()
	layers := []layer{model}
	for _, o := range others {
		l, _ := put(o.MediaType, bytes.NewReader(o.Data))
		layers = append(layers, l)
	}
	cfg, _ := put("application/vnd.docker.container.image.v1+json", bytes.NewReader([]byte(`{"model_format":"gguf","model_family":"llama"}`)))
	man, _ := json.Marshal(map[string]any{"schemaVersion": 2,
		"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "config": cfg, "layers": layers})
	mdir := filepath.Join(dir, "manifests", "registry.ollama.ai", "library", name)
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mdir, tag), man, 0o644); err != nil {
		t.Fatal(err)
	}
	return modelPath
}
