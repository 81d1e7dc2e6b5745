// Package weightpath converts a model's linear weights to the layout the
// kernels on this device run best (a weight path: w4a8, w4a16, w8a8,
// llama.cpp's Q4_K_M mix made at load, or the GGUF types as they are) and caches the result on disk, packed as
// the kernels stream it (each matrix once), so that a second start only
// maps a file.
package weightpath
