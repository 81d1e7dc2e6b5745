package hub

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/fakehub"
)

func random(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// newClient returns a client of the fake Hub with a fresh cache, fast
// retries and its log in the returned buffer.
func newClient(t *testing.T, h *fakehub.Hub) (*Client, *syncBuf) {
	log := &syncBuf{}
	return &Client{Endpoint: h.API.URL, Cache: t.TempDir(), HTTP: &http.Client{}, Log: log,
		Retries: 3, Backoff: time.Millisecond, IdleTimeout: 5 * time.Second}, log
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func pull(t *testing.T, c *Client, ref string) (string, error) {
	t.Helper()
	r, err := ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	return c.Pull(context.Background(), r)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noPartialInSnapshots fails if a snapshot holds anything but complete
// files (symlinks to whole blobs).
func noPartialInSnapshots(t *testing.T, cacheDir string) {
	t.Helper()
	filepath.Walk(cacheDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.Contains(p, string(filepath.Separator)+"snapshots"+string(filepath.Separator)) &&
			(strings.Contains(p, ".incomplete") || strings.Contains(p, ".siskin-")) {
			t.Errorf("half file in snapshots: %s", p)
		}
		return nil
	})
}

func ggufRepo(h *fakehub.Hub) (map[string][]byte, string) {
	files := map[string][]byte{
		"README.md":                  []byte("# tiny\n"),
		"tiny-model-Q4_K_M.gguf":     random(300_000, 1),
		"tiny-model-Q8_0.gguf":       random(200_000, 2),
		"tiny-model-Q4_K.gguf":       random(100_000, 3),
		"mmproj-tiny-model-f16.gguf": random(1000, 4),
		"sub/tiny-model-Q2_K.gguf":   random(1000, 5),
		".gitattributes":             []byte("*.gguf filter=lfs\n"),
	}
	return files, h.Commit("org/tiny-GGUF", files, "v1")
}

func TestPullGGUFByQuant(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files, commit := ggufRepo(h)
	c, _ := newClient(t, h)
	p, err := pull(t, c, "hf://org/tiny-GGUF:q4_k_m")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(c.Cache, "models--org--tiny-GGUF", "snapshots", commit, "tiny-model-Q4_K_M.gguf")
	if p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	if !bytes.Equal(mustRead(t, p), files["tiny-model-Q4_K_M.gguf"]) {
		t.Fatal("content differs")
	}
	// huggingface_hub's layout: a relative symlink to blobs/SHA256, refs/main.
	target, err := os.Readlink(p)
	if err != nil || target != filepath.Join("..", "..", "blobs", sum(files["tiny-model-Q4_K_M.gguf"])) {
		t.Errorf("snapshot link %q, %v", target, err)
	}
	if ref := mustRead(t, filepath.Join(c.Cache, "models--org--tiny-GGUF", "refs", "main")); string(ref) != commit {
		t.Errorf("refs/main = %q, want %s", ref, commit)
	}
	// Only the chosen file was fetched.
	if names, _ := (cache{c.Cache, "org/tiny-GGUF"}).files(commit); len(names) != 1 {
		t.Errorf("snapshot holds %v", names)
	}
	// Q4_K is a part of its own file's name, not of Q4_K_M's; a sub-folder
	// file is found too.
	if p, err := pull(t, c, "hf://org/tiny-GGUF:Q4_K@v1"); err != nil || filepath.Base(p) != "tiny-model-Q4_K.gguf" {
		t.Errorf("Q4_K: %s, %v", p, err)
	}
	if p, err := pull(t, c, "hf://org/tiny-GGUF:Q2_K@"+commit); err != nil || !strings.HasSuffix(p, "sub/tiny-model-Q2_K.gguf") {
		t.Errorf("Q2_K: %s, %v", p, err)
	}
	for ref, msg := range map[string]string{
		"hf://org/tiny-GGUF:Q5_K_M": "no GGUF file matches quant Q5_K_M; the repository has: sub/tiny-model-Q2_K.gguf, tiny-model-Q4_K.gguf, tiny-model-Q4_K_M.gguf, tiny-model-Q8_0.gguf",
		"hf://org/tiny-GGUF":        "has 4 GGUF files, pick one with :QUANT",
	} {
		if _, err := pull(t, c, ref); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", ref, err, msg)
		}
	}
	// A pull-request ref is a revision with slashes: refs/refs/pr/1 in the
	// cache, as huggingface_hub writes it.
	h.Commit("org/tiny-GGUF", map[string][]byte{"pr-Q8_0.gguf": random(10, 6)}, "refs/pr/1")
	if p, err := pull(t, c, "hf://org/tiny-GGUF:Q8_0@refs/pr/1"); err != nil || filepath.Base(p) != "pr-Q8_0.gguf" ||
		!exists(filepath.Join(c.Cache, "models--org--tiny-GGUF", "refs", "refs", "pr", "1")) {
		t.Errorf("refs/pr/1: %s, %v", p, err)
	}
}

func TestPullShardedSafetensors(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	index := []byte(`{"metadata":{"total_size":3000},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors","c":"model-00001-of-00002.safetensors"}}`)
	files := map[string][]byte{
		"config.json": []byte(`{"model_type":"llama"}`), "tokenizer.json": []byte(`{}`), "tokenizer_config.json": []byte(`{}`),
		"generation_config.json": []byte(`{}`), "model.safetensors.index.json": index,
		"model-00001-of-00002.safetensors": random(2000, 7), "model-00002-of-00002.safetensors": random(1000, 8),
		"README.md": []byte("x"), "original/consolidated.00.pth": random(500, 9), "onnx/model.onnx": random(10, 1),
		"onnx/tokenizer.json": []byte(`{}`), "speech_tokenizer/config.json": []byte(`{}`),
		"speech_tokenizer/model.safetensors": random(300, 10), "speech_tokenizer/notes.md": []byte("x"),
	}
	commit := h.Commit("org/sharded", files)
	c, _ := newClient(t, h)
	p, err := pull(t, c, "hf://org/sharded")
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(c.Cache, "models--org--sharded", "snapshots", commit) {
		t.Fatalf("path %s", p)
	}
	// With the Hub gone, the sharded snapshot resolves from the cache
	// (the index read back from it).
	h.Close()
	ref, _ := ParseRef("hf://org/sharded")
	if lp, err := c.Resolve(context.Background(), ref); err != nil || lp != p {
		t.Errorf("from the cache: %s, %v", lp, err)
	}
	os.Remove(filepath.Join(p, "model-00002-of-00002.safetensors"))
	if _, err := c.Local(ref); err == nil || !strings.Contains(err.Error(), "model-00002-of-00002.safetensors is not in the cached snapshot") {
		t.Errorf("missing shard: %v", err)
	}
	got, _ := (cache{c.Cache, "org/sharded"}).files(commit)
	want := "config.json generation_config.json model-00001-of-00002.safetensors model.safetensors.index.json speech_tokenizer/config.json speech_tokenizer/model.safetensors tokenizer.json tokenizer_config.json"
	if strings.Join(got, " ") != want {
		t.Errorf("snapshot holds %v\nwant %s", got, want)
	}
	for _, n := range got {
		if !bytes.Equal(mustRead(t, filepath.Join(p, n)), files[n]) {
			t.Errorf("%s differs", n)
		}
	}
}

// A download cut half-way leaves blobs/SHA.incomplete (nothing in the
// snapshot); the next pull asks for the rest with Range and the result's
// sha256 is the Hub's.
func TestPullResumesAfterCut(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files, _ := ggufRepo(h)
	data := files["tiny-model-Q4_K_M.gguf"]
	c, _ := newClient(t, h)
	c.Retries = 0
	h.CutAfter(int64(len(data) / 2))
	_, err := pull(t, c, "hf://org/tiny-GGUF:Q4_K_M")
	if err == nil || !strings.Contains(err.Error(), "org/tiny-GGUF") || !strings.Contains(err.Error(), "tiny-model-Q4_K_M.gguf") {
		t.Fatalf("cut download: error %v", err)
	}
	part := filepath.Join(c.Cache, "models--org--tiny-GGUF", "blobs", sum(data)+".incomplete")
	st, err := os.Stat(part)
	if err != nil || st.Size() != int64(len(data)/2) {
		t.Fatalf("partial file: %v, %v", st, err)
	}
	noPartialInSnapshots(t, c.Cache)
	p, err := pull(t, c, "hf://org/tiny-GGUF:Q4_K_M")
	if err != nil {
		t.Fatal(err)
	}
	if got := sum(mustRead(t, p)); got != sum(data) {
		t.Fatalf("sha256 %s, want %s", got, sum(data))
	}
	if gets := h.Gets(sum(data)); len(gets) != 2 || gets[0] != 0 || gets[1] != int64(len(data)/2) {
		t.Errorf("CDN requests started at %v, want [0 %d]", gets, len(data)/2)
	}
	if h.Sent() != int64(len(data)) {
		t.Errorf("CDN sent %d bytes for a %d-byte file", h.Sent(), len(data))
	}
	if exists(part) {
		t.Error("partial file left behind")
	}
}

// A cut with retries left resumes inside one pull.
func TestPullRetriesCutAnd500(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files, _ := ggufRepo(h)
	data := files["tiny-model-Q8_0.gguf"]
	c, log := newClient(t, h)
	h.Fail500(2)
	p, err := pull(t, c, "hf://org/tiny-GGUF:Q8_0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "HTTP 500") || !strings.Contains(log.String(), "retrying") {
		t.Errorf("log does not show the retries:\n%s", log)
	}
	os.Remove(p)
	c2, log2 := newClient(t, h)
	h.CutAfter(1000)
	if p, err = pull(t, c2, "hf://org/tiny-GGUF:Q8_0"); err != nil {
		t.Fatal(err)
	}
	if sum(mustRead(t, p)) != sum(data) || !strings.Contains(log2.String(), "resuming at byte 1000") {
		t.Errorf("resume within a pull failed; log:\n%s", log2)
	}
}

// A download that stops sending is abandoned after IdleTimeout and
// resumed.
func TestPullRetriesStall(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files, _ := ggufRepo(h)
	data := files["tiny-model-Q8_0.gguf"]
	c, log := newClient(t, h)
	c.IdleTimeout = 100 * time.Millisecond
	h.Stall(time.Minute)
	p, err := pull(t, c, "hf://org/tiny-GGUF:Q8_0")
	if err != nil {
		t.Fatal(err)
	}
	if sum(mustRead(t, p)) != sum(data) || !strings.Contains(log.String(), "no data received for 100ms") ||
		!strings.Contains(log.String(), fmt.Sprintf("resuming at byte %d", len(data)/2)) {
		t.Errorf("log:\n%s", log)
	}
}

func TestPullCatchesCorruptByte(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files, commit := ggufRepo(h)
	data := files["tiny-model-Q8_0.gguf"]
	c, _ := newClient(t, h)
	h.FlipByte()
	_, err := pull(t, c, "hf://org/tiny-GGUF:Q8_0")
	if err == nil || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), sum(data)) ||
		!strings.Contains(err.Error(), "deleted the partial file") || !strings.Contains(err.Error(), "tiny-model-Q8_0.gguf") {
		t.Fatalf("error %v", err)
	}
	blobs, _ := os.ReadDir(filepath.Join(c.Cache, "models--org--tiny-GGUF", "blobs"))
	if len(blobs) != 0 {
		t.Errorf("blobs left: %v", blobs)
	}
	if exists(filepath.Join(c.Cache, "models--org--tiny-GGUF", "snapshots", commit, "tiny-model-Q8_0.gguf")) {
		t.Error("corrupt file linked into the snapshot")
	}
	if p, err := pull(t, c, "hf://org/tiny-GGUF:Q8_0"); err != nil || sum(mustRead(t, p)) != sum(data) {
		t.Errorf("second pull: %v", err)
	}
}

// A regular (non-LFS) file is checked against its git blob sha1.
func TestPullChecksGitBlobSHA1(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	h.Commit("org/st", map[string][]byte{"config.json": []byte(`{"a":1}`), "tokenizer.json": []byte(`{}`), "model.safetensors": random(100, 3)})
	c, _ := newClient(t, h)
	p, err := pull(t, c, "hf://org/st")
	if err != nil {
		t.Fatal(err)
	}
	// git hash-object of {"a":1}, as git computes it.
	target, _ := os.Readlink(filepath.Join(p, "config.json"))
	g := sha1.New()
	fmt.Fprintf(g, "blob 7\x00{\"a\":1}")
	if want := hex.EncodeToString(g.Sum(nil)); filepath.Base(target) != want {
		t.Errorf("config.json blob %s is not named by its git sha1 %s", target, want)
	}
}

func TestPullErrors(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	ggufRepo(h)
	h.Commit("org/gated", map[string][]byte{"m-Q8_0.gguf": random(100, 1)})
	h.Gate("org/gated")
	c, _ := newClient(t, h)
	for ref, want := range map[string][]string{
		"hf://org/gated":             {"hf://org/gated: m-Q8_0.gguf: HTTP 401", "gated", "HF_TOKEN"},
		"hf://org/missing":           {"hf://org/missing: HTTP 401", "RepoNotFound"[:0] + "no such repository"},
		"hf://org/tiny-GGUF:Q8_0@v9": {"hf://org/tiny-GGUF: HTTP 404", "no such branch, tag or commit"},
	} {
		_, err := pull(t, c, ref)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want %q", ref, err, w)
			}
		}
	}
	c.Token = "hf_wrong"
	if _, err := pull(t, c, "hf://org/gated"); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Errorf("wrong token: %v", err)
	}
	c.Token = h.Token
	if _, err := pull(t, c, "hf://org/gated"); err != nil {
		t.Errorf("with the token: %v", err)
	}
	// A file the listing names but resolve does not have: 404 naming it.
	if _, err := c.head(context.Background(), "org/tiny-GGUF", "main", "nope.gguf"); err == nil ||
		!strings.Contains(err.Error(), "hf://org/tiny-GGUF: nope.gguf: HTTP 404") {
		t.Errorf("missing file: %v", err)
	}
	noPartialInSnapshots(t, c.Cache)
}

// Two pulls of one file at once: the second waits on the lock and finds
// the blob done; the CDN sends it once.
func TestConcurrentPullsDownloadOnce(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files, _ := ggufRepo(h)
	data := files["tiny-model-Q4_K_M.gguf"]
	h.Delay(300 * time.Millisecond)
	c, log := newClient(t, h)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = pull(t, c, "hf://org/tiny-GGUF:Q4_K_M") })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if gets := h.Gets(sum(data)); len(gets) != 1 {
		t.Errorf("downloaded %d times", len(gets))
	}
	if !strings.Contains(log.String(), "waiting for another download") {
		t.Errorf("the pulls did not overlap; log:\n%s", log)
	}
}

// With the Hub gone (or HF_HUB_OFFLINE), a cached revision resolves
// from the cache; an uncached one says why it cannot be fetched.
func TestResolveFromCacheOffline(t *testing.T) {
	h := fakehub.New()
	files, commit := ggufRepo(h)
	c, _ := newClient(t, h)
	ref, _ := ParseRef("hf://org/tiny-GGUF:Q8_0")
	if _, err := c.Resolve(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	h.Close()
	for _, r := range []string{"hf://org/tiny-GGUF:Q8_0", "hf://org/tiny-GGUF:q8_0@" + commit} {
		ref, _ := ParseRef(r)
		p, err := c.Resolve(context.Background(), ref)
		if err != nil || !bytes.Equal(mustRead(t, p), files["tiny-model-Q8_0.gguf"]) {
			t.Errorf("%s: %v", r, err)
		}
	}
	c.Offline = true
	ref, _ = ParseRef("hf://org/tiny-GGUF:Q4_K_M")
	if _, err := c.Resolve(context.Background(), ref); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("offline, uncached: %v", err)
	}
}

// A renamed repository answers with relative redirects; the files land
// under the name asked for, as huggingface_hub caches them.
func TestPullRenamedRepo(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files, commit := ggufRepo(h)
	h.Rename("org/tiny-GGUF", "neworg/tiny-GGUF")
	c, _ := newClient(t, h)
	p, err := pull(t, c, "hf://org/tiny-GGUF:Q8_0")
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(c.Cache, "models--org--tiny-GGUF", "snapshots", commit, "tiny-model-Q8_0.gguf") || !bytes.Equal(mustRead(t, p), files["tiny-model-Q8_0.gguf"]) {
		t.Errorf("got %s", p)
	}
}

func TestParseRef(t *testing.T) {
	for in, want := range map[string]Ref{
		"hf://Qwen/Qwen3-0.6B-GGUF:Q8_0": {Repo: "Qwen/Qwen3-0.6B-GGUF", Quant: "Q8_0"},
		"hf://a/b@refs/pr/1":             {Repo: "a/b", Revision: "refs/pr/1"},
		"hf://a/b.c_d:q4_k_m@v1.0":       {Repo: "a/b.c_d", Quant: "q4_k_m", Revision: "v1.0"},
		"org/repo":                       {Repo: "org/repo"},
	} {
		got, err := ParseRef(in)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"hf://", "hf://a/b/c", "hf://a/../b", "hf://a/b:", "hf://a/b@", "hf://a/b@../x", "hf://-a/b", "hf://a/b:Q4 K", "hf://a//b"} {
		if _, err := ParseRef(in); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestCacheDirFromEnv(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HUGGINGFACE_HUB_CACHE", "")
	t.Setenv("HF_HOME", "/x/hf")
	if d := CacheDir(); d != "/x/hf/hub" {
		t.Errorf("HF_HOME: %s", d)
	}
	t.Setenv("HF_HUB_CACHE", "/y")
	if d := CacheDir(); d != "/y" {
		t.Errorf("HF_HUB_CACHE: %s", d)
	}
	t.Setenv("HF_ENDPOINT", "https://mirror.example/")
	t.Setenv("HF_TOKEN", "hf_x")
	t.Setenv("HF_HUB_OFFLINE", "1")
	c := FromEnv()
	if c.Endpoint != "https://mirror.example" || c.Token != "hf_x" || !c.Offline {
		t.Errorf("FromEnv: %+v", c)
	}
}
