//go:build !linux && !darwin

package device

// probeOS has no memory source on this OS: memory stays unknown (0) and
// callers fall back to their own defaults.
func probeOS(info *Info) {}
