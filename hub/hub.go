// Package hub fetches models from the Hugging Face Hub into the Hugging
// Face cache that transformers, vLLM and the hf CLI share
// (models--ORG--REPO/{blobs,snapshots,refs}), and finds models already
// there without a network call.
//
// References are hf://ORG/REPO[:QUANT][@REVISION]. A GGUF repository
// gives the one file whose name has QUANT as a part; a safetensors
// repository gives its config, tokenizer and (sharded) weights.
// Downloads resume from blobs/ETAG.incomplete with HTTP Range, are
// checked against the ETag (sha256 for LFS files, git's blob sha1 for
// the others) before they are linked into the snapshot, are retried with
// backoff on 5xx, 429 and network errors, and hold a file lock so two
// processes never download one blob twice.
package hub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Resolve returns the local path of ref (a GGUF file or a snapshot
// folder): from the cache with no network call when the revision and
// every needed file are there, else downloaded with Pull.
func (c *Client) Resolve(ctx context.Context, ref Ref) (string, error) {
	p, err := c.Local(ref)
	if err == nil {
		return p, nil
	}
	if c.Offline {
		return "", fmt.Errorf("%w (HF_HUB_OFFLINE is set, so siskin may not download it)", err)
	}
	return c.Pull(ctx, ref)
}

// Local resolves ref in the cache alone.
func (c *Client) Local(ref Ref) (string, error) {
	ch := cache{c.Cache, ref.Repo}
	commit, ok := ch.commitOf(ref.Rev())
	if !ok {
		return "", fmt.Errorf("%s: revision %s is not in the Hugging Face cache %s", ref, ref.Rev(), ch.dir())
	}
	names, err := ch.files(commit)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	p, err := choose(ref, names)
	if err != nil {
		return "", err
	}
	if p.index != "" {
		shards, err := c.localShards(ch, commit, p.index)
		if err != nil {
			return "", fmt.Errorf("%s: %w", ref, err)
		}
		p.files = append(p.files, shards...)
	}
	if p.model == "" && !slices.Contains(p.files, "tokenizer.json") && !slices.Contains(p.files, "tokenizer.model") {
		return "", fmt.Errorf("%s: the cached snapshot %s has no tokenizer", ref, commit)
	}
	for _, f := range p.files {
		if !ch.has(commit, f) {
			return "", fmt.Errorf("%s: %s is not in the cached snapshot %s", ref, f, commit)
		}
	}
	return filepath.Join(ch.snapshot(commit), filepath.FromSlash(p.model)), nil
}

func (c *Client) localShards(ch cache, commit, index string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(ch.snapshot(commit), index))
	if err != nil {
		return nil, err
	}
	shards, err := ParseIndex(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", index, err)
	}
	return append(shards, index), nil
}

// Pull asks the Hub for ref's revision and files and downloads what the
// cache lacks; it returns the local path as Resolve does.
func (c *Client) Pull(ctx context.Context, ref Ref) (string, error) {
	if c.Offline {
		return c.Local(ref)
	}
	info, err := c.info(ctx, ref.Repo, ref.Rev())
	if err != nil {
		return "", err
	}
	names := make([]string, len(info.Siblings))
	for i, s := range info.Siblings {
		names[i] = s.Name
	}
	p, err := choose(ref, names)
	if err != nil {
		return "", err
	}
	ch := cache{c.Cache, ref.Repo}
	if p.index != "" {
		if err := c.fetch(ctx, ch, info.SHA, p.index); err != nil {
			return "", err
		}
		shards, err := c.localShards(ch, info.SHA, p.index)
		if err != nil {
			return "", fmt.Errorf("%s: %w", ref, err)
		}
		for _, s := range shards[:len(shards)-1] {
			if !slices.Contains(names, s) {
				return "", fmt.Errorf("%s: %s names shard %s, which the repository does not have", ref, p.index, s)
			}
		}
		p.files = append(p.files, shards[:len(shards)-1]...)
	}
	for _, f := range p.files {
		if err := c.fetch(ctx, ch, info.SHA, f); err != nil {
			return "", err
		}
	}
	if err := ch.writeRef(ref.Rev(), info.SHA); err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	return filepath.Join(ch.snapshot(info.SHA), filepath.FromSlash(p.model)), nil
}
