package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is the Hub's address; HF_ENDPOINT replaces it (mirrors).
const DefaultEndpoint = "https://huggingface.co"

// Client talks to the Hub and keeps files in the Hugging Face cache.
type Client struct {
	// Endpoint is the Hub's base URL (HF_ENDPOINT).
	Endpoint string
	// Token authenticates gated and private repositories (HF_TOKEN).
	Token string
	// Cache is the Hugging Face cache folder (CacheDir()).
	Cache string
	// Offline forbids network calls (HF_HUB_OFFLINE=1).
	Offline bool
	// HTTP does the requests; its CheckRedirect is not used.
	HTTP *http.Client
	// Progress reports downloads (nil: none).
	Progress Progress
	// Log receives one line per file fetched and per retry (nil: none).
	Log io.Writer
	// Retries is how many times a 5xx, 429 or network error is retried,
	// waiting Backoff, then twice that, and so on.
	Retries int
	Backoff time.Duration
	// IdleTimeout aborts (and retries) a download that receives no byte
	// for this long.
	IdleTimeout time.Duration
}

// FromEnv returns a Client configured as huggingface_hub configures
// itself: HF_ENDPOINT, HF_TOKEN (else the token file the hf CLI writes),
// the cache folder of CacheDir, HF_HUB_OFFLINE.
func FromEnv() *Client {
	c := &Client{
		Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"),
		Token:    os.Getenv("HF_TOKEN"),
		Cache:    CacheDir(),
		Offline:  truthy(os.Getenv("HF_HUB_OFFLINE")),
		HTTP: &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   30 * time.Second,
			ResponseHeaderTimeout: time.Minute}},
		Retries:     5,
		Backoff:     time.Second,
		IdleTimeout: time.Minute,
	}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.Token == "" {
		p := os.Getenv("HF_TOKEN_PATH")
		if p == "" {
			p = filepath.Join(hfHome(), "token")
		}
		if raw, err := os.ReadFile(p); err == nil {
			c.Token = strings.TrimSpace(string(raw))
		}
	}
	return c
}

func truthy(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// HTTPError is a failed Hub request: the repository, the file ("" for an
// API call), the status and the Hub's own explanation.
type HTTPError struct {
	Repo, File, URL string
	Status          int
	Code, Message   string // X-Error-Code, X-Error-Message
}

func (e *HTTPError) Error() string {
	what := "hf://" + e.Repo
	if e.File != "" {
		what += ": " + e.File
	}
	msg := fmt.Sprintf("%s: HTTP %d %s", what, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	switch {
	case e.Code == "RepoNotFound":
		msg += " (no such repository, or it is private: check the name, or set HF_TOKEN)"
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Code == "GatedRepo":
		msg += fmt.Sprintf(" (the repository is gated or private: accept its terms at https://huggingface.co/%s and set HF_TOKEN to a token that has access)", e.Repo)
	case e.Code == "RevisionNotFound":
		msg += " (no such branch, tag or commit)"
	case e.Code == "EntryNotFound":
		msg += " (no such file at this revision)"
	}
	return msg
}

// retryable reports whether a failure may pass by itself.
func retryable(err error) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Status >= 500 || he.Status == http.StatusTooManyRequests || he.Status == http.StatusRequestTimeout
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, errVerify)
}

// retry runs f until it succeeds, fails for good, or Retries run out.
func (c *Client) retry(ctx context.Context, what string, f func() error) error {
	wait := c.Backoff
	for attempt := 0; ; attempt++ {
		err := f()
		if err == nil || !retryable(err) || attempt >= c.Retries || ctx.Err() != nil {
			return err
		}
		c.logf("%s: %v; retrying in %s (%d of %d)", what, err, wait, attempt+1, c.Retries)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait *= 2
	}
}

func (c *Client) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// request builds a request to the Hub (with the token) or to another host
// (without it: a CDN must not see the user's token).
func (c *Client) request(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "siskin")
	if c.Token != "" && sameHost(u, c.Endpoint) {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host
}

// do sends req without following redirects.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	hc := *c.HTTP
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return hc.Do(req)
}

func httpError(repo, file string, resp *http.Response) *HTTPError {
	return &HTTPError{Repo: repo, File: file, URL: resp.Request.URL.String(), Status: resp.StatusCode,
		Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message")}
}

// RepoInfo is the part of the Hub's model-info answer siskin reads.
type RepoInfo struct {
	ID       string    `json:"id"`
	SHA      string    `json:"sha"`
	Siblings []Sibling `json:"siblings"`
}

// Sibling is one file of a repository at the asked revision.
type Sibling struct {
	Name   string `json:"rfilename"`
	Size   int64  `json:"size"`
	BlobID string `json:"blobId"`
	LFS    *struct {
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	} `json:"lfs"`
}

// ParseRepoInfo decodes and checks the Hub's model-info JSON.
func ParseRepoInfo(raw []byte) (*RepoInfo, error) {
	var info RepoInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return nil, fmt.Errorf("model info: %w", err)
	}
	if !isCommit(info.SHA) {
		return nil, fmt.Errorf("model info: sha %q is not a commit hash", info.SHA)
	}
	for _, s := range info.Siblings {
		if err := checkFileName(s.Name); err != nil {
			return nil, fmt.Errorf("model info: %w", err)
		}
	}
	return &info, nil
}

// checkFileName refuses names that would leave the snapshot folder.
func checkFileName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsRune(name, 0) {
		return fmt.Errorf("file name %q is not a relative path", name)
	}
	for _, p := range strings.Split(name, "/") {
		if p == "" || p == "." || p == ".." {
			return fmt.Errorf("file name %q is not a clean relative path", name)
		}
	}
	return nil
}

// info asks the Hub for the repository at rev: its commit and files.
func (c *Client) info(ctx context.Context, repo, rev string) (*RepoInfo, error) {
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", c.Endpoint, repo, url.PathEscape(rev))
	var info *RepoInfo
	err := c.retry(ctx, "hf://"+repo, func() error {
		req, err := c.request(ctx, http.MethodGet, u)
		if err != nil {
			return err
		}
		// Redirects here are the Hub's own (a renamed repository).
		resp, err := c.HTTP.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return httpError(repo, "", resp)
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return err
		}
		info, err = ParseRepoInfo(raw)
		if err != nil {
			return fmt.Errorf("hf://%s: %w", repo, err)
		}
		return nil
	})
	return info, err
}

// fileMeta is what a HEAD of resolve/COMMIT/FILE says about a file.
type fileMeta struct {
	commit, etag string
	size         int64
	location     string // where to GET it (a CDN for LFS files)
}

// NormalizeETag strips the weak marker and quotes of an ETag.
func NormalizeETag(v string) string {
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(v), "W/"), `"`)
}

// head asks for a file's metadata the way huggingface_hub does: no
// automatic redirects, relative ones (renamed repositories) followed by
// hand, an absolute one naming the download host.
func (c *Client) head(ctx context.Context, repo, rev, file string) (fileMeta, error) {
	u := fmt.Sprintf("%s/%s/resolve/%s/%s", c.Endpoint, repo, url.PathEscape(rev), escapePath(file))
	var m fileMeta
	err := c.retry(ctx, "hf://"+repo+": "+file, func() error {
		var err error
		m, err = c.headOnce(ctx, repo, file, u)
		return err
	})
	return m, err
}

func (c *Client) headOnce(ctx context.Context, repo, file, u string) (fileMeta, error) {
	for hops := 0; hops < 10; hops++ {
		req, err := c.request(ctx, http.MethodHead, u)
		if err != nil {
			return fileMeta{}, err
		}
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := c.do(req)
		if err != nil {
			return fileMeta{}, err
		}
		resp.Body.Close()
		h := resp.Header
		loc := h.Get("Location")
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && isRelative(loc) {
			// A relative redirect: the repository was renamed.
			next, err := resp.Request.URL.Parse(loc)
			if err != nil {
				return fileMeta{}, err
			}
			u = next.String()
			continue
		}
		if resp.StatusCode >= 400 {
			return fileMeta{}, httpError(repo, file, resp)
		}
		m := fileMeta{commit: h.Get("X-Repo-Commit"), etag: NormalizeETag(h.Get("X-Linked-Etag")), location: u}
		if m.etag == "" {
			m.etag = NormalizeETag(h.Get("ETag"))
		}
		size := h.Get("X-Linked-Size")
		if size == "" {
			size = h.Get("Content-Length")
		}
		m.size, _ = strconv.ParseInt(size, 10, 64)
		if loc != "" {
			next, err := resp.Request.URL.Parse(loc)
			if err != nil {
				return fileMeta{}, err
			}
			m.location = next.String()
		}
		if m.etag == "" || strings.ContainsAny(m.etag, "/\\") || m.etag == "." || m.etag == ".." {
			return fileMeta{}, fmt.Errorf("hf://%s: %s: the Hub sent no usable ETag (%q)", repo, file, m.etag)
		}
		if !isCommit(m.commit) {
			return fileMeta{}, fmt.Errorf("hf://%s: %s: the Hub sent no commit hash (X-Repo-Commit %q)", repo, file, m.commit)
		}
		return m, nil
	}
	return fileMeta{}, fmt.Errorf("hf://%s: %s: too many redirects", repo, file)
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func isRelative(loc string) bool {
	u, err := url.Parse(loc)
	return loc != "" && err == nil && u.Host == ""
}
