//go:build amd64 && gc && !purego && !linux

package kernels

// amxPermit: the AMX kernels run on Linux only, where the process asks
// for the tile state (amx_linux_amd64.go).
func amxPermit() bool { return false }
