package device

import (
	"fmt"
	"syscall"
)

// Linux's arch_prctl request for an extended-state permission and the
// XSAVE feature number of the AMX tile data (asm/prctl.h).
const (
	archReqXCompPerm  = 0x1023
	xfeatureXTileData = 18
)

// probeAMX checks the three conditions for AMX. Linux (5.16 on) enables
// the tile state in XCR0 but traps its first use until the process asks
// for it with arch_prctl, because 8 KiB of tile data enlarge every
// signal frame; the grant is per process and permanent, and the AMX
// kernels need it anyway, so asking here costs nothing.
func probeAMX(cpuHas bool) AMX {
	a := AMX{CPUHas: cpuHas}
	if !cpuHas {
		return a
	}
	tiles, known := xcr0HasTiles()
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXCompPerm, xfeatureXTileData, 0)
	a.OSGrants = errno == 0
	switch {
	case known:
		a.XCR0Enabled = tiles
	default:
		// Without XGETBV (purego builds) the grant implies the state is
		// enabled: the kernel only grants features it enabled in XCR0.
		a.XCR0Enabled = a.OSGrants
		a.Detail = "XCR0 not read in this build; inferred from the kernel's grant"
	}
	if errno != 0 {
		a.Detail = fmt.Sprintf("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed: %v (kernel older than 5.16, or the state is hidden)", errno)
	} else if !a.XCR0Enabled {
		a.Detail = "the kernel granted the tile data but XCR0 bits 17-18 are clear"
	}
	return a
}
