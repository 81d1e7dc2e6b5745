// Package mmap maps model files read-only into memory so weights are paged
// in on demand and shared between processes instead of copied onto the heap.
package mmap

import (
	"fmt"
	"os"
	"unsafe"
)

// File is a read-only memory mapping of a whole file.
type File struct {
	path string
	data []byte
	f    *os.File
}

// Open maps the file at path read-only. An empty file maps to an empty slice.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	size := st.Size()
	if size != int64(int(size)) {
		f.Close()
		return nil, fmt.Errorf("%s: file too large to map (%d bytes)", path, size)
	}
	data, err := mapFile(f, int(size))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	return &File{path: path, data: data, f: f}, nil
}

// Release tells the OS the process no longer needs the pages wholly
// inside b, a range of the mapping (bytes read once, e.g. weights
// converted at load): they leave the resident set, the page cache keeps
// them, and a later read faults them back in. It does nothing for a b
// outside the mapping, or where the file was read onto the heap.
func (m *File) Release(b []byte) {
	if m == nil || len(b) == 0 || len(m.data) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - base)
	if off < 0 || off > len(m.data)-len(b) {
		return
	}
	page := os.Getpagesize()
	lo, hi := (off+page-1)/page*page, (off+len(b))/page*page
	if lo < hi {
		release(m.data[lo:hi])
	}
}

// Data returns the mapped bytes. They stay valid until Close.
func (m *File) Data() []byte { return m.data }

// Path returns the path the file was opened with.
func (m *File) Path() string { return m.path }

// Len returns the file size in bytes.
func (m *File) Len() int { return len(m.data) }

// Close unmaps the file. Slices obtained from Data must not be used afterwards.
func (m *File) Close() error {
	if m == nil || m.f == nil {
		return nil
	}
	err := unmap(m.data)
	m.data = nil
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	m.f = nil
	return err
}
