package hub

import (
	"fmt"
	"strings"
)

// Scheme prefixes a Hugging Face Hub model reference.
const Scheme = "hf://"

// Ref names a model on the Hub: hf://ORG/REPO[:QUANT][@REVISION].
type Ref struct {
	// Repo is the repository id, "ORG/REPO" (or a legacy one-part id).
	Repo string
	// Quant picks a GGUF file by its quantization name (Q4_K_M), matched
	// case-insensitively; "" when the repository holds one GGUF file or
	// safetensors.
	Quant string
	// Revision is a branch, tag or commit hash; "" means "main".
	Revision string
}

// IsRef reports whether s is written as an hf:// reference.
func IsRef(s string) bool { return strings.HasPrefix(s, Scheme) }

// Rev is the revision to ask for: Revision, or "main".
func (r Ref) Rev() string {
	if r.Revision == "" {
		return "main"
	}
	return r.Revision
}

// String writes r back as hf://ORG/REPO[:QUANT][@REVISION].
func (r Ref) String() string {
	s := Scheme + r.Repo
	if r.Quant != "" {
		s += ":" + r.Quant
	}
	if r.Revision != "" {
		s += "@" + r.Revision
	}
	return s
}

// ParseRef parses hf://ORG/REPO[:QUANT][@REVISION]; the hf:// prefix may
// be left out (siskin pull ORG/REPO).
func ParseRef(s string) (Ref, error) {
	body := strings.TrimPrefix(s, Scheme)
	var r Ref
	if i := strings.IndexByte(body, '@'); i >= 0 {
		body, r.Revision = body[:i], body[i+1:]
		if err := checkRevision(r.Revision); err != nil {
			return Ref{}, fmt.Errorf("%q: revision: %w", s, err)
		}
	}
	if i := strings.IndexByte(body, ':'); i >= 0 {
		body, r.Quant = body[:i], body[i+1:]
		if err := checkQuant(r.Quant); err != nil {
			return Ref{}, fmt.Errorf("%q: quant: %w", s, err)
		}
	}
	if err := checkRepo(body); err != nil {
		return Ref{}, fmt.Errorf("%q: %w (want hf://ORG/REPO[:QUANT][@REVISION])", s, err)
	}
	r.Repo = body
	return r, nil
}

// checkRepo applies the Hub's rules for repository ids: one or two parts
// of letters, digits, '-', '_' and '.', no "--" or "..", not starting or
// ending with '-' or '.', at most 96 characters each.
func checkRepo(id string) error {
	if id == "" {
		return fmt.Errorf("no repository")
	}
	parts := strings.Split(id, "/")
	if len(parts) > 2 {
		return fmt.Errorf("repository %q has more than ORG/REPO", id)
	}
	for _, p := range parts {
		if p == "" || len(p) > 96 {
			return fmt.Errorf("repository %q: empty or over-long part", id)
		}
		if strings.Contains(p, "--") || strings.Contains(p, "..") {
			return fmt.Errorf("repository %q: '--' and '..' are not allowed", id)
		}
		if strings.ContainsAny(p[:1], "-.") || strings.ContainsAny(p[len(p)-1:], "-.") {
			return fmt.Errorf("repository %q: a part may not start or end with '-' or '.'", id)
		}
		for _, c := range p {
			if !isWordByte(c) && c != '-' && c != '.' {
				return fmt.Errorf("repository %q: character %q is not allowed", id, c)
			}
		}
	}
	return nil
}

func isWordByte(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func checkQuant(q string) error {
	if q == "" || len(q) > 32 {
		return fmt.Errorf("empty or over-long")
	}
	for _, c := range q {
		if !isWordByte(c) {
			return fmt.Errorf("character %q is not allowed in %q", c, q)
		}
	}
	return nil
}

// checkRevision keeps a revision usable as a path under refs/: branch and
// tag names with '/', never "..", an absolute path or a control byte.
func checkRevision(rev string) error {
	if rev == "" || len(rev) > 255 {
		return fmt.Errorf("empty or over-long")
	}
	for _, p := range strings.Split(rev, "/") {
		if p == "" || p == "." || p == ".." {
			return fmt.Errorf("%q is not a branch, tag or commit", rev)
		}
	}
	for _, c := range rev {
		if !isWordByte(c) && !strings.ContainsRune("-./+", c) {
			return fmt.Errorf("character %q is not allowed in %q", c, rev)
		}
	}
	return nil
}

// isCommit reports whether rev is a full 40-hex commit hash.
func isCommit(rev string) bool { return isHex(rev, 40) }

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
