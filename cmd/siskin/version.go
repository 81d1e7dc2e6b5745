package main

import (
	"runtime/debug"
	"strings"
)

// version is this binary's version as the Go toolchain recorded it: the
// module version (a tag for `go install ...@vX`, "(devel)" for a build in
// the source tree), then the commit it was built from, marked when the
// tree had changes.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := []string{bi.Main.Version}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		rev = rev[:min(12, len(rev))]
		if settings["vcs.modified"] == "true" {
			rev += "-dirty"
		}
		v = append(v, rev)
	}
	return strings.Join(v, " ")
}
