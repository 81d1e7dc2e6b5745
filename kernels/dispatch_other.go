//go:build !(amd64 || arm64) || !gc || purego

package kernels

// archInit: only the generic tier outside amd64 and arm64 assembly builds.
func archInit() {}

func spinPause() {}
