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

// pagemap is Linux's /proc/self/pagemap; elsewhere there is none.
type pagemap struct{}

func openPagemap() (*pagemap, error) {
	return nil, errors.New("ledger: /proc/self/pagemap is only read on Linux")
}

func (m *pagemap) close() {}

func (m *pagemap) present(addr, n uintptr) ([]byte, error) {
	return nil, errors.New("ledger: /proc/self/pagemap is only read on Linux")
}

// readProc has no smaps to read: the report carries the lines but no RSS.
func readProc() *procInfo {
	return &procInfo{source: "unavailable: no /proc/self/smaps on " + runtime.GOOS}
}
