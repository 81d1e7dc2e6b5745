package weightpath

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"time"
)

// A seal lets a start skip reading every byte of a cache file that was
// fully checked (or written) before and has not changed since. Reading a
// 2.5 GB file costs more CPU time (0.4 s) than a warm start should take
// in all, so the full check runs once per file version, not per start.
//
// The seal is a small file beside the cache (name + sealSuffix) holding
// the cache file's identity as the file system reports it: device,
// inode, size, modification and status-change (ctime) times, and the
// CRC-32C of its checksum table. Any write to the cache, a truncation, a
// copy or a rename over it changes its ctime or inode, and no user can
// set a ctime. A seal is trusted only if its own ctime is later than the
// cache's: the file system's clock had moved on when the seal was made,
// so a later write to the cache would give it a ctime different from the
// recorded one, whatever the file system's time-stamp granularity. What a
// seal cannot see is damage below the file system (a failing disk); the
// header and the layout are still checked at every start.

const sealSuffix = ".seal"

// fileID is what the file system says about a file; ok is false where
// the platform gives no inode or ctime (then nothing is sealed).
type fileID struct {
	dev, ino, size uint64
	mtime, ctime   int64 // Unix nanoseconds
	ok             bool
}

func (id fileID) String() string {
	return fmt.Sprintf("dev %d ino %d size %d mtime %d ctime %d", id.dev, id.ino, id.size, id.mtime, id.ctime)
}

const sealHeader = "siskin weight cache seal 1\n"

// sealed reports whether file carries a trusted seal for a checksum table
// whose CRC-32C is tableCRC.
func sealed(file string, tableCRC uint32) bool {
	id, seal := statID(file), statID(file+sealSuffix)
	if !id.ok || !seal.ok || seal.ctime <= id.ctime {
		return false
	}
	b, err := os.ReadFile(file + sealSuffix)
	return err == nil && string(b) == sealText(id, tableCRC)
}

func sealText(id fileID, tableCRC uint32) string {
	return fmt.Sprintf("%s%s table %08x\n", sealHeader, id, tableCRC)
}

// seal records that file, whose checksum table has CRC-32C tableCRC, has
// just been checked or written in full. If the file system's clock does
// not move past the cache's ctime within about a second, no seal is left
// and the next start checks every byte again.
func seal(file string, tableCRC uint32) error {
	id := statID(file)
	if !id.ok {
		return nil
	}
	text := sealText(id, tableCRC)
	deadline := time.Now().Add(1500 * time.Millisecond)
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		if err := writeAtomic(file+sealSuffix, text); err != nil {
			return err
		}
		if s := statID(file + sealSuffix); s.ok && s.ctime > id.ctime {
			return nil
		}
		if time.Now().After(deadline) {
			os.Remove(file + sealSuffix)
			return nil
		}
		time.Sleep(delay)
	}
}

// unseal removes file's seal (a file that fails a check, or is rebuilt).
func unseal(file string) { os.Remove(file + sealSuffix) }

func writeAtomic(name, text string) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+"-*.tmp")
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func tableCRC(table []byte) uint32 { return crc32.Checksum(table, castagnoli) }
