// Package ollama finds models in ollama's store ($OLLAMA_MODELS or
// ~/.ollama/models): manifests/HOST/NAMESPACE/NAME/TAG names the layers,
// blobs/sha256-HEX holds them. The model layer is a GGUF file that siskin
// maps where it lies.
package ollama

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Scheme prefixes an ollama model reference.
const Scheme = "ollama://"

// Media types of the manifest layers siskin reads.
const (
	MediaModel    = "application/vnd.ollama.image.model"
	MediaTemplate = "application/vnd.ollama.image.template"
	MediaParams   = "application/vnd.ollama.image.params"
	MediaSystem   = "application/vnd.ollama.image.system"
	MediaAdapter  = "application/vnd.ollama.image.adapter"
	MediaProject  = "application/vnd.ollama.image.projector"
)

// Ref names a model as ollama does: [HOST/][NAMESPACE/]NAME[:TAG], with
// registry.ollama.ai, library and latest as the defaults.
type Ref struct{ Host, Namespace, Name, Tag string }

// IsRef reports whether s is written as an ollama:// reference.
func IsRef(s string) bool { return strings.HasPrefix(s, Scheme) }

// String writes the short form ollama prints (library models without
// host and namespace).
func (r Ref) String() string {
	s := r.Name + ":" + r.Tag
	if r.Host != "registry.ollama.ai" || r.Namespace != "library" {
		s = r.Host + "/" + r.Namespace + "/" + s
		s = strings.TrimPrefix(s, "registry.ollama.ai/")
	}
	return Scheme + s
}

// ParseRef parses ollama://[HOST/][NAMESPACE/]NAME[:TAG].
func ParseRef(s string) (Ref, error) {
	body, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Ref{}, fmt.Errorf("%q does not start with %s", s, Scheme)
	}
	r := Ref{Host: "registry.ollama.ai", Namespace: "library", Tag: "latest"}
	slash := strings.LastIndexByte(body, '/')
	if i := strings.LastIndexByte(body, ':'); i > slash {
		body, r.Tag = body[:i], body[i+1:]
	}
	parts := strings.Split(body, "/")
	switch len(parts) {
	case 1:
		r.Name = parts[0]
	case 2:
		r.Namespace, r.Name = parts[0], parts[1]
	case 3:
		r.Host, r.Namespace, r.Name = parts[0], parts[1], parts[2]
	default:
		return Ref{}, fmt.Errorf("%q: want ollama://[HOST/][NAMESPACE/]NAME[:TAG]", s)
	}
	for what, v := range map[string]string{"host": r.Host, "namespace": r.Namespace, "name": r.Name, "tag": r.Tag} {
		if err := checkPart(v, what == "host"); err != nil {
			return Ref{}, fmt.Errorf("%q: %s: %w", s, what, err)
		}
	}
	return r, nil
}

// checkPart keeps each part one plain path element.
func checkPart(p string, host bool) error {
	if p == "" || len(p) > 128 || p[0] == '.' || p[0] == '-' {
		return fmt.Errorf("%q is empty, over-long or starts with '.' or '-'", p)
	}
	for _, c := range p {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || host && c == ':'
		if !ok {
			return fmt.Errorf("character %q is not allowed in %q", c, p)
		}
	}
	return nil
}

// Dir is ollama's store: $OLLAMA_MODELS, else ~/.ollama/models.
func Dir() string {
	if d := os.Getenv("OLLAMA_MODELS"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return filepath.Join(home, ".ollama", "models")
}

// Layer is one blob of a manifest.
type Layer struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// Manifest is ollama's (Docker v2 style) manifest.
type Manifest struct {
	SchemaVersion int     `json:"schemaVersion"`
	Config        Layer   `json:"config"`
	Layers        []Layer `json:"layers"`
}

// ParseManifest decodes a manifest and checks every digest.
func ParseManifest(raw []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m.SchemaVersion != 2 {
		return nil, fmt.Errorf("schemaVersion %d, want 2", m.SchemaVersion)
	}
	for _, l := range m.Layers {
		if _, err := blobName(l.Digest); err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.MediaType, err)
		}
		if l.Size < 0 {
			return nil, fmt.Errorf("layer %s: negative size", l.MediaType)
		}
	}
	return &m, nil
}

// blobName maps sha256:HEX to the blob file name sha256-HEX.
func blobName(digest string) (string, error) {
	hex, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", digest)
	}
	return "sha256-" + hex, nil
}

// Model is a resolved ollama model: the GGUF blob and the text of the
// layers beside it.
type Model struct {
	Ref      Ref
	Manifest string // the manifest file
	GGUF     string // the model blob, a GGUF file
	Size     int64
	// Template, Params and System are the layers' contents ("" if absent).
	Template, Params, System string
	// Others lists media types siskin does not use (adapters, projectors).
	Others []string
}

// Open reads ref's manifest in the store dir and checks its model blob.
func Open(dir string, ref Ref) (*Model, error) {
	mp := filepath.Join(dir, "manifests", ref.Host, ref.Namespace, ref.Name, ref.Tag)
	raw, err := os.ReadFile(mp)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("%s: no manifest %s (is it pulled? set OLLAMA_MODELS to ollama's models folder)", ref, mp)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	man, err := ParseManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", ref, mp, err)
	}
	m := &Model{Ref: ref, Manifest: mp}
	for _, l := range man.Layers {
		name, _ := blobName(l.Digest)
		p := filepath.Join(dir, "blobs", name)
		switch l.MediaType {
		case MediaModel:
			if m.GGUF != "" {
				return nil, fmt.Errorf("%s: %s names two model layers", ref, mp)
			}
			st, err := os.Stat(p)
			if err != nil {
				return nil, fmt.Errorf("%s: model layer: %w", ref, err)
			}
			if st.Size() != l.Size {
				return nil, fmt.Errorf("%s: model blob %s has %d bytes, the manifest says %d", ref, p, st.Size(), l.Size)
			}
			m.GGUF, m.Size = p, l.Size
		case MediaTemplate, MediaParams, MediaSystem:
			if l.Size > 1<<20 {
				return nil, fmt.Errorf("%s: %s layer of %d bytes is too large", ref, l.MediaType, l.Size)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %s layer: %w", ref, l.MediaType, err)
			}
			*m.text(l.MediaType) = string(b)
		default:
			m.Others = append(m.Others, l.MediaType)
		}
	}
	if m.GGUF == "" {
		return nil, fmt.Errorf("%s: %s has no model layer (%s)", ref, mp, MediaModel)
	}
	return m, nil
}

func (m *Model) text(media string) *string {
	switch media {
	case MediaTemplate:
		return &m.Template
	case MediaParams:
		return &m.Params
	}
	return &m.System
}

// List returns every model in the store dir whose manifest opens; the
// ones that do not are returned as errors.
func List(dir string) ([]*Model, []error) {
	root := filepath.Join(dir, "manifests")
	var out []*Model
	var errs []error
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 4 {
			return nil
		}
		m, err := Open(dir, Ref{Host: parts[0], Namespace: parts[1], Name: parts[2], Tag: parts[3]})
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		out = append(out, m)
		return nil
	})
	return out, errs
}
