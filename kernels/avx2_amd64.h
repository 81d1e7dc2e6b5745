// Shared macros of the AVX2 kernels.

// HSUM leaves in the low float of X the sum of the 8 floats of Y (the same
// register), added as ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)); T is scratch.
#define HSUM(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X; \
	VMOVHLPS     X, X, T; \
	VADDPS       T, X, X; \
	VMOVSHDUP    X, T; \
	VADDSS       T, X, X
