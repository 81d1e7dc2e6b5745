//go:build linux || darwin

package weightpath

import "golang.org/x/sys/unix"

func statID(name string) fileID {
	var st unix.Stat_t
	if unix.Stat(name, &st) != nil {
		return fileID{}
	}
	return fileID{
		dev: uint64(st.Dev), ino: uint64(st.Ino), size: uint64(st.Size),
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ok: true,
	}
}
