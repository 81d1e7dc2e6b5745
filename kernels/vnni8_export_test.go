package kernels

// SetPadRows sets the fewest rows of a batch's last incomplete eight
// that run through the eight-row kernel padded, for every kernel (8:
// never; 0: each kernel's own), and returns the previous value.
func SetPadRows(n int) int {
	old := padRows
	padRows = n
	return old
}
