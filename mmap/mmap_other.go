//go:build !unix

package mmap

import (
	"io"
	"os"
)

// Without mmap the file is read onto the heap: correct, just not shared.
func mapFile(f *os.File, size int) ([]byte, error) {
	data := make([]byte, size)
	_, err := io.ReadFull(f, data)
	return data, err
}

func unmap([]byte) error { return nil }

// release does nothing: the bytes are the heap's.
func release([]byte) {}
