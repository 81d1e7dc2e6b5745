package kernels

// Bytes is the memory the table holds now: cos and sin for every position
// it covers, plus the frequencies. A table grows by doubling, so this is
// at most twice what the longest sequence seen needs; the table it
// replaced is garbage and not counted.
func (t *RoPETable) Bytes() int64 {
	tab := t.tab.Load()
	return int64(4*(cap(tab.cos)+cap(tab.sin)) + 8*cap(t.invFreq))
}
