//go:build unix && !linux

package mmap

// adviseHuge: 2 MiB page-cache folios are Linux's (huge_linux.go).
func adviseHuge([]byte) {}
