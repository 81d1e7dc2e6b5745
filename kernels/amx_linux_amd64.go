//go:build amd64 && gc && !purego

package kernels

import "syscall"

// amxPermit asks Linux for the tile data state (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): from 5.16 on the first use of
// a tile traps until the process has asked. The grant is per process and
// permanent; false means no AMX kernel runs.
func amxPermit() bool {
	const archReqXCompPerm, xfeatureXTileData = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXCompPerm, xfeatureXTileData, 0)
	return errno == 0
}
