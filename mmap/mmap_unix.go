//go:build unix

package mmap

import (
	"os"

	"golang.org/x/sys/unix"
)

func mapFile(f *os.File, size int) ([]byte, error) {
	if size == 0 {
		return []byte{}, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	// Weights are read front to back layer by layer; tell the kernel so it
	// reads ahead, in 2 MiB folios where it can. Failure only costs speed.
	adviseHuge(data)
	_ = unix.Madvise(data, unix.MADV_WILLNEED)
	return data, nil
}

// release drops page-aligned mapped bytes from the resident set (a
// shared read-only mapping: nothing is lost).
func release(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }

func unmap(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	return unix.Munmap(data)
}
