package kernels

// Bytes is the memory the table holds now: float64 cos and sin for the
// coarse positions it covers and for the fine offsets (both empty until
// first used), plus the frequencies. The coarse part grows by doubling,
// so it is at most twice what the longest sequence seen needs; the table
// it replaced is garbage and not counted.
func (t *RoPETable) Bytes() int64 {
	t.mu.Lock()
	fine := cap(t.fineCos) + cap(t.fineSin)
	t.mu.Unlock()
	tab := t.tab.Load()
	return int64(8*(cap(tab.cos)+cap(tab.sin)+fine) + 8*cap(t.invFreq))
}
