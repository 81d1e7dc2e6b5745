package device

import "golang.org/x/sys/unix"

// probeOS reads the memory size from sysctl. macOS has no MemAvailable;
// kern.memorystatus_level, the percentage of memory the kernel considers
// free, is the closest figure.
func probeOS(info *Info) {
	if n, err := unix.SysctlUint64("hw.memsize"); err == nil {
		info.Memory.TotalBytes = int64(n)
		if pct, err := unix.SysctlUint32("kern.memorystatus_level"); err == nil && pct <= 100 {
			info.Memory.AvailableBytes = info.Memory.TotalBytes / 100 * int64(pct)
		}
	}
}
