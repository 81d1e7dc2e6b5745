package ledger

import "math/bits"

// MapBytes estimates the memory of a Go map holding n entries of kv bytes
// (key plus value) each, for size estimates of structures the runtime
// cannot measure: the runtime keeps a map at most 7/8 full in a power of
// two of slots, with one control byte per slot.
func MapBytes(n, kv int) int64 {
	if n <= 0 {
		return 0
	}
	slots := (uint64(n)*8 + 6) / 7
	slots = max(uint64(1)<<bits.Len64(slots-1), 8) // the next power of two
	return int64(slots) * int64(kv+1)
}
