//go:build purego

package engine

// Under -tags purego the kernels are the slow Go ones; the structured-output
// compliance test (kernel-independent) then runs on one model only.
const pureGo = true
