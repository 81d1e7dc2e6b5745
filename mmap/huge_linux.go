package mmap

import "golang.org/x/sys/unix"

// adviseHuge asks for 2 MiB page-cache folios wherever a fault of the
// mapping reads the file in. Without it, faults that do not run in file
// order (two threads, each on its own rows) read around in small folios
// and the file stays mapped in 4 KiB pages: a 1.1 GB model first touched
// every 3 MiB came in with none of it in 2 MiB pages, and with this with
// all of it, 4x faster (README, Page cache).
func adviseHuge(data []byte) { _ = unix.Madvise(data, unix.MADV_HUGEPAGE) }
