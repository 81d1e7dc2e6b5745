package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/siskin-ml/siskin/mmap"
)

// errVerify marks a download whose bytes do not match the Hub's ETag;
// retrying cannot help and the partial file is gone.
var errVerify = errors.New("checksum mismatch")

// fetch puts FILE of repo at commit into the cache: blob downloaded (or
// found), verified, then linked into snapshots/COMMIT. Two processes
// fetching one blob take turns on its lock; the second finds it done.
func (c *Client) fetch(ctx context.Context, ch cache, commit, file string) error {
	m, err := c.head(ctx, ch.repo, commit, file)
	if err != nil {
		return err
	}
	blob := ch.blob(m.etag)
	if !exists(blob) {
		unlock, err := lockFile(ctx, ch.lockFile(m.etag), func() {
			c.logf("hf://%s: %s: waiting for another download of this file to finish", ch.repo, file)
		})
		if err != nil {
			return fmt.Errorf("hf://%s: %s: lock: %w", ch.repo, file, err)
		}
		defer unlock()
		if !exists(blob) {
			err := c.retry(ctx, "hf://"+ch.repo+": "+file, func() error { return c.download(ctx, ch.repo, file, m, blob) })
			if err != nil {
				return err
			}
		}
	}
	if err := ch.link(commit, file, m.etag); err != nil {
		return fmt.Errorf("hf://%s: %s: %w", ch.repo, file, err)
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// newHasher returns the hash the Hub's ETag is: sha256 of an LFS file (64
// hex digits), git's blob sha1 of a regular file (40); nil if neither.
func newHasher(etag string, size int64) hash.Hash {
	switch {
	case isHex(etag, 64):
		return sha256.New()
	case isHex(etag, 40) && size >= 0:
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", size)
		return h
	}
	return nil
}

// download writes the file into blob+".incomplete", resuming from what
// is there with a Range request, verifies it and renames it into place.
func (c *Client) download(ctx context.Context, repo, file string, m fileMeta, blob string) error {
	part := blob + ".incomplete"
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		return fmt.Errorf("hf://%s: %s: %w", repo, file, err)
	}
	f, err := os.OpenFile(part, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("hf://%s: %s: %w", repo, file, err)
	}
	defer f.Close()
	h := newHasher(m.etag, m.size)
	have, err := c.resumeFrom(f, h, m.size)
	if err != nil {
		return fmt.Errorf("hf://%s: %s: reading the partial download %s: %w", repo, file, part, err)
	}
	if m.size <= 0 || have < m.size {
		if have, err = c.get(ctx, repo, file, m, f, h, have); err != nil {
			return err
		}
	}
	if m.size > 0 && have != m.size {
		return fmt.Errorf("hf://%s: %s: got %d of %d bytes", repo, file, have, m.size)
	}
	if h != nil {
		if got := hex.EncodeToString(h.Sum(nil)); got != m.etag {
			f.Close()
			os.Remove(part)
			kind := "sha256"
			if len(m.etag) == 40 {
				kind = "git sha1"
			}
			return fmt.Errorf("hf://%s: %s: %w: %s of the download is %s, the Hub's ETag says %s; deleted the partial file %s",
				repo, file, errVerify, kind, got, m.etag, part)
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(part, blob)
}

// resumeFrom hashes the partial file's bytes and leaves f at its end; a
// partial longer than the file is started over.
func (c *Client) resumeFrom(f *os.File, h hash.Hash, size int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	have := st.Size()
	if size > 0 && have > size {
		have = 0
	}
	if err := f.Truncate(have); err != nil {
		return 0, err
	}
	if have > 0 && h != nil {
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, have)); err != nil {
			return 0, err
		}
	}
	_, err = f.Seek(have, io.SeekStart)
	return have, err
}

// get appends the bytes after have to f, following redirects to the
// download host; it returns how many bytes f holds.
func (c *Client) get(ctx context.Context, repo, file string, m fileMeta, f *os.File, h hash.Hash, have int64) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := c.request(ctx, http.MethodGet, m.location)
	if err != nil {
		return have, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return have, fmt.Errorf("hf://%s: %s: %w", repo, file, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0 && strings.HasPrefix(resp.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-", have)):
		c.logf("hf://%s: %s: resuming at byte %d", repo, file, have)
	case resp.StatusCode == http.StatusOK:
		if have > 0 {
			c.logf("hf://%s: %s: the server ignored the range; starting over", repo, file)
		}
		if have, err = restart(f, h, m.size); err != nil {
			return 0, err
		}
	default:
		if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
			// The partial is not a prefix the server knows: start over.
			have, err = restart(f, h, m.size)
			if err == nil {
				err = fmt.Errorf("hf://%s: %s: HTTP 416 for the partial file; starting over", repo, file)
			}
			return have, err
		}
		return have, httpError(repo, file, resp)
	}
	var bar FileBar = nopBar{}
	if c.Progress != nil {
		bar = c.Progress.File(repo+"/"+file, m.size, have)
	}
	n, err := c.copyIdle(cancel, f, have, h, resp.Body, bar)
	have += n
	bar.Done(err == nil)
	if err != nil {
		return have, fmt.Errorf("hf://%s: %s: download interrupted after %d bytes: %w", repo, file, have, err)
	}
	return have, nil
}

func restart(f *os.File, h hash.Hash, size int64) (int64, error) {
	if h != nil {
		h.Reset()
		if h.Size() == sha1.Size {
			fmt.Fprintf(h, "blob %d\x00", size)
		}
	}
	if err := f.Truncate(0); err != nil {
		return 0, err
	}
	_, err := f.Seek(0, io.SeekStart)
	return 0, err
}

var errIdle = errors.New("no data received")

// copyIdle copies body to f (which holds have bytes) and h, cancelling
// the request when no byte arrives for IdleTimeout (a stalled connection
// is retried, not waited on forever). It writes f through an mmap.Writer,
// so that the model stays cached in 2 MiB folios for its mapping; a retry
// resumes from f's size, not from the count returned.
func (c *Client) copyIdle(cancel context.CancelFunc, f *os.File, have int64, h hash.Hash, body io.Reader, bar FileBar) (n int64, err error) {
	var idle atomic.Bool
	var timer *time.Timer
	if c.IdleTimeout > 0 {
		timer = time.AfterFunc(c.IdleTimeout, func() { idle.Store(true); cancel() })
		defer timer.Stop()
	}
	fw := mmap.NewWriter(f, have)
	defer func() {
		if ferr := fw.Flush(); err == nil {
			err = ferr
		}
	}()
	w := io.Writer(fw)
	if h != nil {
		w = io.MultiWriter(fw, h)
	}
	buf := make([]byte, 256<<10)
	for {
		k, rerr := body.Read(buf)
		if k > 0 {
			if timer != nil {
				timer.Reset(c.IdleTimeout)
			}
			if _, err := w.Write(buf[:k]); err != nil {
				return n, err
			}
			n += int64(k)
			bar.Add(k)
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			if idle.Load() {
				return n, fmt.Errorf("%w for %s", errIdle, c.IdleTimeout)
			}
			return n, rerr
		}
	}
}
