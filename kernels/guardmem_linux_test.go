package kernels

import (
	"syscall"
	"testing"
)

// GuardedBytes returns n bytes that end exactly where an inaccessible
// page begins, so a kernel reading past the end faults instead of
// passing (this package's tests and the external ones share it).
func GuardedBytes(t testing.TB, n int) []byte {
	page := syscall.Getpagesize()
	size := (n + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, size+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[size:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	return mem[size-n : size : size]
}
