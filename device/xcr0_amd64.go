//go:build amd64 && gc && !purego

package device

import "golang.org/x/sys/cpu"

// xgetbv0 returns XCR0, the set of register states the OS saves on a
// context switch.
//
//go:noescape
func xgetbv0() (eax, edx uint32)

// readXCR0 returns XCR0 and true, or false where XGETBV would fault
// (the OS has not enabled XSAVE).
func readXCR0() (uint64, bool) {
	if !cpu.X86.HasOSXSAVE {
		return 0, false
	}
	eax, edx := xgetbv0()
	return uint64(edx)<<32 | uint64(eax), true
}
