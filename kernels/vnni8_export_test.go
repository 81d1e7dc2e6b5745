package kernels

// SetPadRows sets the fewest rows of a batch's last incomplete eight
// that run through the eight-row kernel padded, for every kernel (8:
// never; 0: each kernel's own), and returns the previous value.
func SetPadRows(n int) int {
	old := padRows
	padRows = n
	return old
}

// SetQuadVec8 turns the four-group eight-row kernels on or off and
// returns the previous setting.
func SetQuadVec8(on bool) bool {
	old := quadVec8
	quadVec8 = on
	return old
}

// SetNTAStream turns the AVX-512 decode kernels that prefetch with
// PREFETCHNTA on or off and returns the previous setting.
func SetNTAStream(on bool) bool {
	old := ntaStream
	ntaStream = on
	return old
}

// SetAVX2OneRow makes the AVX-512 tier's one-row products run the AVX2
// kernels, or its own, and returns the previous setting.
func SetAVX2OneRow(on bool) bool {
	old := avx2OneRow
	avx2OneRow = on
	return old
}
