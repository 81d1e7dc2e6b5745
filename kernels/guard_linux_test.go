package kernels_test

import (
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// guarded returns n bytes that end exactly where an inaccessible page
// begins, so a kernel reading past the end faults instead of passing.
func guarded(t testing.TB, n int) []byte {
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

// threadCPU returns the CPU time consumed by the calling OS thread (lock
// the goroutine to it): a timer that a busy shared machine disturbs far
// less than wall time.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
