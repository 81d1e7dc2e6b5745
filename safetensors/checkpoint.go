package safetensors

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File names Hugging Face uses for a checkpoint folder.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// maxIndexSize bounds the index JSON read onto the heap; real ones are
// tens of kilobytes.
const maxIndexSize = 100 << 20

// Checkpoint is a folder holding one model.safetensors or shards listed
// by model.safetensors.index.json.
type Checkpoint struct {
	Dir string

	files   []*File // each shard once
	tensors map[string]*TensorInfo
	names   []string
}

// OpenDir opens the checkpoint in dir. Like transformers, it prefers
// model.safetensors when both it and an index are present. With an
// index, only the tensors its weight_map names are visible.
func OpenDir(dir string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir, tensors: make(map[string]*TensorInfo)}
	single := filepath.Join(dir, SingleFile)
	if _, err := os.Stat(single); err == nil {
		f, err := Open(single)
		if err != nil {
			return nil, err
		}
		c.files = []*File{f}
		for i := range f.Tensors {
			t := &f.Tensors[i]
			c.tensors[t.Name] = t
			c.names = append(c.names, t.Name)
		}
		sort.Strings(c.names)
		return c, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}

	index := filepath.Join(dir, IndexFile)
	weightMap, err := readIndex(index)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no %s or %s", dir, SingleFile, IndexFile)
	}
	if err != nil {
		return nil, err
	}
	if err := c.openShards(index, weightMap); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// openShards opens every shard weightMap names, once each, and resolves
// each tensor in its shard.
func (c *Checkpoint) openShards(index string, weightMap []field) error {
	byShard := make(map[string][]string)
	for _, fd := range weightMap {
		shard, err := jsonString(fd.value)
		if err != nil {
			return fmt.Errorf("%s: weight_map: tensor %q: %v", index, fd.key, err)
		}
		// The index is data, not trusted: a name that leaves the folder
		// could map any file on the machine.
		if shard == "" || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`+"\x00") || !filepath.IsLocal(shard) {
			return fmt.Errorf("%s: weight_map: tensor %q: shard %q is not a plain file name in the folder", index, fd.key, shard)
		}
		byShard[shard] = append(byShard[shard], fd.key)
	}
	shards := make([]string, 0, len(byShard))
	for s := range byShard {
		shards = append(shards, s)
	}
	sort.Strings(shards)
	for _, s := range shards {
		f, err := Open(filepath.Join(c.Dir, s))
		if err != nil {
			return fmt.Errorf("%s: shard %q (holding tensor %q): %w", index, s, byShard[s][0], err)
		}
		c.files = append(c.files, f)
		for _, name := range byShard[s] {
			t, ok := f.Tensor(name)
			if !ok {
				return fmt.Errorf("%s: weight_map puts tensor %q in %s, which lacks it", index, name, f.Path)
			}
			c.tensors[name] = t
			c.names = append(c.names, name)
		}
	}
	sort.Strings(c.names)
	return nil
}

// readIndex returns the weight_map fields of an index file.
func readIndex(path string) ([]field, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxIndexSize {
		return nil, fmt.Errorf("%s: %d bytes exceeds the %d-byte limit for an index", path, st.Size(), maxIndexSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	top, err := objectFields(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for _, fd := range top {
		if fd.key != "weight_map" {
			continue
		}
		wm, err := objectFields(fd.value)
		if err != nil {
			return nil, fmt.Errorf("%s: weight_map: %v", path, err)
		}
		if len(wm) == 0 {
			return nil, fmt.Errorf("%s: weight_map is empty", path)
		}
		return wm, nil
	}
	return nil, fmt.Errorf("%s: missing \"weight_map\"", path)
}

// Tensor returns the tensor called name.
func (c *Checkpoint) Tensor(name string) (*TensorInfo, bool) {
	t, ok := c.tensors[name]
	return t, ok
}

// Names returns the tensor names, sorted.
func (c *Checkpoint) Names() []string {
	return append([]string(nil), c.names...)
}

// Files returns the opened files, one per shard, for their metadata.
func (c *Checkpoint) Files() []*File {
	return append([]*File(nil), c.files...)
}

// Release lets the OS drop the mapped pages wholly inside b, bytes of
// one shard (see mmap.File.Release).
func (c *Checkpoint) Release(b []byte) {
	for _, f := range c.files {
		f.m.Release(b)
	}
}

// Close unmaps every shard; tensor data becomes invalid.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.Close())
	}
	c.files = nil
	return errors.Join(errs...)
}
