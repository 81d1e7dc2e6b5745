//go:build !amd64 || !gc || purego

package kernels

// archInit: only the generic tier outside amd64 assembly builds.
func archInit() {}

func spinPause() {}
