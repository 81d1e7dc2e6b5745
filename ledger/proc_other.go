//go:build !linux

package ledger

import (
	"errors"
	"runtime"
)

// residency is unknown without Linux's mincore semantics: mapped lines
// count as resident in full.
func residency(addr, n uintptr) ([]byte, error) {
	return nil, errors.New("ledger: mincore is only used on Linux")
}

// readProc has no smaps to read: the report carries the lines but no RSS.
func readProc() *procInfo {
	return &procInfo{source: "unavailable: no /proc/self/smaps_rollup on " + runtime.GOOS}
}
