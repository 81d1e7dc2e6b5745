//go:build !purego

package engine

const pureGo = false
