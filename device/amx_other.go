//go:build !linux || !amd64

package device

import "runtime"

// probeAMX outside Linux/amd64: the tile permission is a Linux
// arch_prctl, so AMX is never counted as usable here.
func probeAMX(cpuHas bool) AMX {
	a := AMX{CPUHas: cpuHas}
	if !cpuHas {
		return a
	}
	a.XCR0Enabled, _ = xcr0HasTiles()
	a.Detail = "AMX use is only enabled on Linux (arch_prctl tile permission); not on " + runtime.GOOS
	return a
}
