// Package fakehub is an in-process Hugging Face Hub for tests: the model
// info and resolve endpoints with the Hub's semantics (branches, tags and
// commits; LFS files redirected to a second host with X-Linked-Etag;
// Range; 401/403 for gated files; 404 with X-Error-Code) and faults a
// test switches on (500s, a connection cut half-way, a flipped byte).
package fakehub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hub is the fake: API serves the Hub's endpoints, CDN the LFS bytes.
type Hub struct {
	API, CDN *httptest.Server
	// Token is the token gated repositories accept.
	Token string

	mu    sync.Mutex
	repos map[string]*repo
	moved map[string]string // old repository id -> new
	fail  int               // answer this many next requests with 500
	cut   int64             // the next CDN GET closes the connection after this many bytes (-1: off)
	flip  bool              // the next CDN GET flips a byte
	delay time.Duration
	stall time.Duration      // the next CDN GET stops this long half-way
	gets  map[string][]int64 // CDN GETs per sha256: each one's first byte
	sent  int64
}

type file struct {
	data            []byte
	lfs             bool
	sha256, gitSHA1 string
}

type repo struct {
	gated bool
	refs  map[string]string           // branch or tag -> commit
	trees map[string]map[string]*file // commit -> files
}

// New starts the two servers.
func New() *Hub {
	h := &Hub{Token: "hf_test_token", repos: map[string]*repo{}, moved: map[string]string{}, cut: -1, gets: map[string][]int64{}}
	h.API = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	h.CDN = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	return h
}

// Close stops both servers: later requests fail to connect.
func (h *Hub) Close() {
	h.API.Close()
	h.CDN.Close()
}

// IsLFS is how the fake stores files: weights in LFS, the rest in git.
func IsLFS(name string) bool {
	for _, ext := range []string{".gguf", ".safetensors", ".bin"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// Commit adds a commit holding files to repo id (created if new), moves
// branch "main" to it, tags it with tags, and returns its hash.
func (h *Hub) Commit(id string, files map[string][]byte, tags ...string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[id]
	if r == nil {
		r = &repo{refs: map[string]string{}, trees: map[string]map[string]*file{}}
		h.repos[id] = r
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	c := sha1.New()
	fmt.Fprintf(c, "%s %d", id, len(r.trees))
	tree := map[string]*file{}
	for _, n := range names {
		d := files[n]
		s := sha256.Sum256(d)
		g := sha1.New()
		fmt.Fprintf(g, "blob %d\x00", len(d))
		g.Write(d)
		tree[n] = &file{data: d, lfs: IsLFS(n), sha256: hex.EncodeToString(s[:]), gitSHA1: hex.EncodeToString(g.Sum(nil))}
		fmt.Fprintf(c, "%s %x", n, s)
	}
	commit := hex.EncodeToString(c.Sum(nil))
	r.trees[commit] = tree
	r.refs["main"] = commit
	for _, t := range tags {
		r.refs[t] = commit
	}
	return commit
}

// Gate makes repo id's files need Token.
func (h *Hub) Gate(id string) {
	h.mu.Lock()
	h.repos[id].gated = true
	h.mu.Unlock()
}

// Rename moves repository old to new; the Hub answers requests for the
// old id with a relative redirect to the new one.
func (h *Hub) Rename(old, new string) {
	h.mu.Lock()
	h.repos[new], h.moved[old] = h.repos[old], new
	delete(h.repos, old)
	h.mu.Unlock()
}

// Fail500 answers the next n requests (either server) with HTTP 500.
func (h *Hub) Fail500(n int) { h.mu.Lock(); h.fail = n; h.mu.Unlock() }

// CutAfter makes the next CDN download close the connection after n bytes.
func (h *Hub) CutAfter(n int64) { h.mu.Lock(); h.cut = n; h.mu.Unlock() }

// FlipByte makes the next CDN download send one wrong byte.
func (h *Hub) FlipByte() { h.mu.Lock(); h.flip = true; h.mu.Unlock() }

// Stall makes the next CDN download stop sending half-way for d (or
// until the client gives up).
func (h *Hub) Stall(d time.Duration) { h.mu.Lock(); h.stall = d; h.mu.Unlock() }

// Delay holds every CDN download this long before its first byte.
func (h *Hub) Delay(d time.Duration) { h.mu.Lock(); h.delay = d; h.mu.Unlock() }

// Gets returns the first byte of each CDN download of the blob with this
// sha256 (0 for a full download, more for a resumed one).
func (h *Hub) Gets(sha string) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.gets[sha]...)
}

// Sent is the number of bytes the CDN has sent.
func (h *Hub) Sent() int64 { h.mu.Lock(); defer h.mu.Unlock(); return h.sent }

func (h *Hub) failNow(w http.ResponseWriter) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail > 0 {
		h.fail--
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return true
	}
	return false
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// lookup finds repo id at rev; on failure it has written the Hub's answer.
func (h *Hub) lookup(w http.ResponseWriter, req *http.Request, id, rev string) (*repo, string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[id]
	if r == nil {
		// The Hub does not tell an anonymous caller whether a private
		// repository exists: 401, with 404 only for an authenticated one.
		status := http.StatusUnauthorized
		if req.Header.Get("Authorization") != "" {
			status = http.StatusNotFound
		}
		hubError(w, status, "RepoNotFound", "Repository not found")
		return nil, "", false
	}
	commit, ok := r.refs[rev]
	if !ok {
		if _, isCommit := r.trees[rev]; !isCommit {
			hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
			return nil, "", false
		}
		commit = rev
	}
	return r, commit, true
}

func (h *Hub) serveAPI(w http.ResponseWriter, req *http.Request) {
	if h.failNow(w) {
		return
	}
	p := req.URL.EscapedPath()
	h.mu.Lock()
	for old, new := range h.moved {
		for _, prefix := range []string{"/api/models/", "/"} {
			if rest, ok := strings.CutPrefix(p, prefix+old+"/"); ok {
				h.mu.Unlock()
				http.Redirect(w, req, prefix+new+"/"+rest, http.StatusTemporaryRedirect)
				return
			}
		}
	}
	h.mu.Unlock()
	if rest, ok := strings.CutPrefix(p, "/api/models/"); ok {
		h.serveInfo(w, req, rest)
		return
	}
	// /ORG/REPO/resolve/REV/PATH
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, req)
		return
	}
	rev, err1 := url.PathUnescape(parts[3])
	name, err2 := url.PathUnescape(parts[4])
	if err1 != nil || err2 != nil {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	h.serveResolve(w, req, parts[0]+"/"+parts[1], rev, name)
}

func (h *Hub) serveInfo(w http.ResponseWriter, req *http.Request, rest string) {
	id, rev := rest, "main"
	if i := strings.Index(rest, "/revision/"); i >= 0 {
		var err error
		id = rest[:i]
		if rev, err = url.PathUnescape(rest[i+len("/revision/"):]); err != nil {
			http.Error(w, "bad revision", http.StatusBadRequest)
			return
		}
	}
	r, commit, ok := h.lookup(w, req, id, rev)
	if !ok {
		return
	}
	h.mu.Lock()
	tree := r.trees[commit]
	type lfs struct {
		SHA256      string `json:"sha256"`
		Size        int    `json:"size"`
		PointerSize int    `json:"pointerSize"`
	}
	type sibling struct {
		Name   string `json:"rfilename"`
		Size   int    `json:"size,omitempty"`
		BlobID string `json:"blobId,omitempty"`
		LFS    *lfs   `json:"lfs,omitempty"`
	}
	var sibs []sibling
	for n, f := range tree {
		s := sibling{Name: n}
		if req.URL.Query().Get("blobs") == "true" {
			s.Size, s.BlobID = len(f.data), f.gitSHA1
			if f.lfs {
				s.LFS = &lfs{SHA256: f.sha256, Size: len(f.data), PointerSize: 134}
			}
		}
		sibs = append(sibs, s)
	}
	gated := any(false)
	if r.gated {
		gated = "manual"
	}
	h.mu.Unlock()
	sort.Slice(sibs, func(i, j int) bool { return sibs[i].Name < sibs[j].Name })
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"_id": commit[:24], "id": id, "modelId": id, "sha": commit,
		"private": false, "gated": gated, "siblings": sibs})
}

func (h *Hub) serveResolve(w http.ResponseWriter, req *http.Request, id, rev, name string) {
	r, commit, ok := h.lookup(w, req, id, rev)
	if !ok {
		return
	}
	if r.gated {
		switch auth := req.Header.Get("Authorization"); {
		case auth == "":
			hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to model "+id+" is restricted. You must have access to it and be authenticated to access it.")
			return
		case auth != "Bearer "+h.Token:
			hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+id+" is restricted and you are not in the authorized list.")
			return
		}
	}
	h.mu.Lock()
	f := r.trees[commit][name]
	h.mu.Unlock()
	if f == nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", name+" does not exist on \""+rev+"\"")
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	if !f.lfs {
		w.Header().Set("ETag", `"`+f.gitSHA1+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
		if req.Method == http.MethodGet {
			w.Write(f.data)
		}
		return
	}
	// The ETag of an LFS file's resolve answer is the pointer's; the
	// content's sha256 is in X-Linked-Etag.
	w.Header().Set("ETag", `"`+f.gitSHA1[:20]+`pointer"`)
	w.Header().Set("X-Linked-Etag", `"`+f.sha256+`"`)
	w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.data)))
	w.Header().Set("Location", h.CDN.URL+"/repos/"+f.sha256[:2]+"/"+f.sha256+"?X-Amz-Signature=fake&response-content-disposition=attachment")
	w.WriteHeader(http.StatusFound)
}

func (h *Hub) blob(sha string) []byte {
	for _, r := range h.repos {
		for _, t := range r.trees {
			for _, f := range t {
				if f.sha256 == sha {
					return f.data
				}
			}
		}
	}
	return nil
}

func (h *Hub) serveCDN(w http.ResponseWriter, req *http.Request) {
	if h.failNow(w) {
		return
	}
	if req.Header.Get("Authorization") != "" {
		http.Error(w, "the CDN must not receive the Hub token", http.StatusBadRequest)
		return
	}
	sha := req.URL.Path[strings.LastIndexByte(req.URL.Path, '/')+1:]
	h.mu.Lock()
	data := h.blob(sha)
	cut, flip, delay, stall := h.cut, h.flip, h.delay, h.stall
	h.cut, h.flip, h.stall = -1, false, 0
	h.mu.Unlock()
	if data == nil {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	start := int64(0)
	if rg := req.Header.Get("Range"); rg != "" {
		v, ok := strings.CutSuffix(strings.TrimPrefix(rg, "bytes="), "-")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || n < 0 || n >= int64(len(data)) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = n
	}
	h.mu.Lock()
	h.gets[sha] = append(h.gets[sha], start)
	h.mu.Unlock()
	time.Sleep(delay)
	body := append([]byte(nil), data[start:]...)
	if flip {
		body[len(body)/2] ^= 0x40
	}
	w.Header().Set("ETag", `"s3-`+sha[:32]+`"`) // the CDN's own ETag, not the sha256
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if start > 0 {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(data)-1, len(data)))
		w.WriteHeader(http.StatusPartialContent)
	}
	if cut >= 0 && cut < int64(len(body)) {
		w.Write(body[:cut])
		w.(http.Flusher).Flush()
		h.count(cut)
		panic(http.ErrAbortHandler) // closes the connection mid-body
	}
	if stall > 0 {
		half := len(body) / 2
		w.Write(body[:half])
		w.(http.Flusher).Flush()
		h.count(int64(half))
		select {
		case <-time.After(stall):
		case <-req.Context().Done():
			return
		}
		body = body[half:]
	}
	w.Write(body)
	h.count(int64(len(body)))
}

func (h *Hub) count(n int64) { h.mu.Lock(); h.sent += n; h.mu.Unlock() }
