package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Snapshot is one cached revision of a repository.
type Snapshot struct {
	Commit string
	Refs   []string // branches and tags in refs/ that point at it
	Dir    string
	Files  []string // slash-separated, relative to Dir
}

// CachedRepo is one model repository in the cache.
type CachedRepo struct {
	Repo, Dir string
	Snapshots []Snapshot
}

// Scan lists the model repositories in the cache root (none if it does
// not exist).
func Scan(root string) ([]CachedRepo, error) {
	ents, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []CachedRepo
	for _, e := range ents {
		repo := repoOfFolder(e.Name())
		if !e.IsDir() || repo == "" {
			continue
		}
		out = append(out, scanRepo(root, repo))
	}
	return out, nil
}

func scanRepo(root, repo string) CachedRepo {
	ch := cache{root, repo}
	r := CachedRepo{Repo: repo, Dir: ch.dir()}
	refs := map[string][]string{}
	refDir := filepath.Join(ch.dir(), "refs")
	filepath.WalkDir(refDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			name, _ := filepath.Rel(refDir, p)
			if c, ok := ch.commitOf(filepath.ToSlash(name)); ok {
				refs[c] = append(refs[c], filepath.ToSlash(name))
			}
		}
		return nil
	})
	snaps, _ := os.ReadDir(filepath.Join(ch.dir(), "snapshots"))
	for _, s := range snaps {
		if !s.IsDir() || !isCommit(s.Name()) {
			continue
		}
		files, _ := ch.files(s.Name())
		sort.Strings(refs[s.Name()])
		r.Snapshots = append(r.Snapshots, Snapshot{Commit: s.Name(), Refs: refs[s.Name()], Dir: ch.snapshot(s.Name()), Files: files})
	}
	return r
}

// Removal is what removing a repository (or one revision of it) from
// the cache deletes.
type Removal struct {
	Repo  string
	Paths []string // files and folders, deleted in this order
	Bytes int64    // the blobs' bytes
	Whole bool     // the repository's whole cache folder
}

// PlanRemoval works out what removing repo (rev "" for all of it) from
// the cache deletes: for one revision, its snapshot, the refs naming it
// and the blobs no other snapshot links to.
func PlanRemoval(root, repo, rev string) (*Removal, error) {
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	ch := cache{root, repo}
	if _, err := os.Stat(ch.dir()); err != nil {
		return nil, fmt.Errorf("hf://%s is not in the Hugging Face cache %s", repo, root)
	}
	cr := scanRepo(root, repo)
	rm := &Removal{Repo: repo}
	if rev == "" {
		rm.Whole = true
		rm.Bytes = dirBytes(filepath.Join(ch.dir(), "blobs"))
		rm.Paths = []string{ch.dir(), filepath.Join(root, ".locks", repoFolder(repo))}
		return rm, nil
	}
	commit, ok := ch.commitOf(rev)
	if !ok {
		return nil, fmt.Errorf("hf://%s: revision %s is not in the cache", repo, rev)
	}
	used := map[string]bool{}
	var mine []string
	for _, s := range cr.Snapshots {
		for _, f := range s.Files {
			target, ok := blobOf(filepath.Join(s.Dir, filepath.FromSlash(f)), filepath.Join(ch.dir(), "blobs"))
			if !ok {
				continue
			}
			if s.Commit == commit {
				mine = append(mine, target)
			} else {
				used[target] = true
			}
		}
		if s.Commit == commit {
			for _, r := range s.Refs {
				rm.Paths = append(rm.Paths, filepath.Join(ch.dir(), "refs", filepath.FromSlash(r)))
			}
		}
	}
	rm.Paths = append(rm.Paths, ch.snapshot(commit))
	sort.Strings(mine)
	for i, b := range mine {
		if used[b] || i > 0 && mine[i-1] == b {
			continue
		}
		if st, err := os.Stat(b); err == nil {
			rm.Bytes += st.Size()
		}
		rm.Paths = append(rm.Paths, b)
	}
	return rm, nil
}

// Apply deletes the planned paths.
func (rm *Removal) Apply() error {
	for _, p := range rm.Paths {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Size writes n bytes in binary units (KiB, MiB, GiB).
func Size(n int64) string { return size(n) }

// blobOf returns the blob a snapshot file links to, if it is a link into
// blobs (a copied file has none).
func blobOf(p, blobs string) (string, bool) {
	link, err := os.Readlink(p)
	if err != nil {
		return "", false
	}
	if !filepath.IsAbs(link) {
		link = filepath.Join(filepath.Dir(p), link)
	}
	link = filepath.Clean(link)
	return link, strings.HasPrefix(link, blobs+string(filepath.Separator))
}
