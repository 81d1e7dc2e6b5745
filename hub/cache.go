package hub

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/siskin-ml/siskin/mmap"
)

// CacheDir is the Hugging Face cache that transformers, vLLM and the hf
// CLI share: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
func CacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HUGGINGFACE_HUB_CACHE"); d != "" {
		return d
	}
	return filepath.Join(hfHome(), "hub")
}

func hfHome() string {
	if d := os.Getenv("HF_HOME"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return filepath.Join(home, ".cache", "huggingface")
}

// repoFolder is the cache folder name of a model repository:
// models--ORG--REPO.
func repoFolder(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}

// repoOfFolder inverts repoFolder ("" if name is not a model folder).
func repoOfFolder(name string) string {
	rest, ok := strings.CutPrefix(name, "models--")
	if !ok || rest == "" {
		return ""
	}
	return strings.ReplaceAll(rest, "--", "/")
}

// cache is one repository's folder in the Hugging Face cache.
type cache struct {
	root, repo string
}

func (c cache) dir() string             { return filepath.Join(c.root, repoFolder(c.repo)) }
func (c cache) blob(etag string) string { return filepath.Join(c.dir(), "blobs", etag) }
func (c cache) snapshot(commit string) string {
	return filepath.Join(c.dir(), "snapshots", commit)
}
func (c cache) lockFile(etag string) string {
	return filepath.Join(c.root, ".locks", repoFolder(c.repo), etag+".lock")
}

// commitOf resolves rev in the cache: a commit hash with a snapshot, or
// a branch or tag named in refs/. ok is false when it does not resolve
// locally.
func (c cache) commitOf(rev string) (string, bool) {
	if isCommit(rev) {
		st, err := os.Stat(c.snapshot(rev))
		return rev, err == nil && st.IsDir()
	}
	raw, err := os.ReadFile(filepath.Join(c.dir(), "refs", filepath.FromSlash(rev)))
	if err != nil {
		return "", false
	}
	commit := strings.TrimSpace(string(raw))
	return commit, isCommit(commit)
}

// writeRef records that rev points at commit (nothing for a commit).
func (c cache) writeRef(rev, commit string) error {
	if rev == commit {
		return nil
	}
	p := filepath.Join(c.dir(), "refs", filepath.FromSlash(rev))
	if old, err := os.ReadFile(p); err == nil && string(old) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return writeAtomic(p, []byte(commit))
}

// link points snapshots/COMMIT/FILE at blobs/ETAG with a relative symlink
// (a copy where symlinks are refused), replacing whatever was there, so
// that a snapshot only ever holds complete, verified files.
func (c cache) link(commit, file, etag string) error {
	dst := filepath.Join(c.snapshot(commit), filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(dst), c.blob(etag))
	if err != nil {
		return err
	}
	tmp := dst + ".siskin-link"
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		if err := copyFile(c.blob(etag), tmp); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// has reports whether the snapshot holds file as a readable regular file
// (a symlink whose blob exists).
func (c cache) has(commit, file string) bool {
	st, err := os.Stat(filepath.Join(c.snapshot(commit), filepath.FromSlash(file)))
	return err == nil && st.Mode().IsRegular()
}

// files lists the snapshot's files, slash-separated and relative to it.
func (c cache) files(commit string) ([]string, error) {
	root := c.snapshot(commit)
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".siskin-link") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no snapshot %s in the cache", commit)
	}
	return out, err
}

func writeAtomic(p string, data []byte) error {
	tmp := p + ".siskin-tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	w := mmap.NewWriter(out, 0) // a model: cached in 2 MiB folios for its mapping
	_, err = io.Copy(w, in)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}
