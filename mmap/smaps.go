package mmap

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// FilePages is how a file's mapped bytes sit in this process's page
// tables.
type FilePages struct {
	Path     string
	Resident int64 // bytes mapped in (Rss)
	Huge     int64 // of those, the bytes mapped with 2 MiB entries (FilePmdMapped)
}

// MappedFiles returns each file mapped into this process with its
// resident bytes and the part of them mapped with 2 MiB page-table
// entries, summed over its mappings, from /proc/self/smaps; nil where
// there is no such file (not Linux). A mapping gets 2 MiB entries only
// where the page cache holds the file in 2 MiB folios (see Writer).
func MappedFiles() ([]FilePages, error) {
	f, err := os.Open("/proc/self/smaps")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseSmaps(f)
}

// parseSmaps reads smaps text: a line "start-end perms offset dev inode
// [path]" opens each mapping, then "Key: N kB" lines describe it.
func parseSmaps(r io.Reader) ([]FilePages, error) {
	var files []FilePages
	index := map[string]int{}
	cur := -1 // the file of the mapping being read, or -1
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.IndexByte(key, ' ') < 0 { // a header has spaces before its first ':' (in dev)
			if cur < 0 {
				continue
			}
			switch string(key) {
			case "Rss":
				files[cur].Resident += kB(rest)
			case "FilePmdMapped":
				files[cur].Huge += kB(rest)
			}
			continue
		}
		cur = -1
		fields := bytes.Fields(line)
		if len(fields) < 6 || fields[5][0] != '/' {
			continue // anonymous, or [heap], [stack], [vdso]
		}
		// The path is the rest of the line from its '/' (the fields before
		// it have none), spaces and all.
		path := string(bytes.TrimSpace(line[bytes.IndexByte(line, '/'):]))
		i, seen := index[path]
		if !seen {
			i = len(files)
			index[path] = i
			files = append(files, FilePages{Path: path})
		}
		cur = i
	}
	return files, sc.Err()
}

// kB parses " 1234 kB" into bytes; anything else is 0.
func kB(b []byte) int64 {
	f := bytes.Fields(b)
	if len(f) != 2 || string(f[1]) != "kB" {
		return 0
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n << 10
}
