//go:build !amd64 || !gc || purego

package device

// readXCR0 cannot run XGETBV without assembly: XCR0 is unknown.
func readXCR0() (uint64, bool) { return 0, false }
