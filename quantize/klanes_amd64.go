//go:build amd64 && !purego

package quantize

import "golang.org/x/sys/cpu"

// The AVX2 kernels run the eight lanes of makeQKX2x8 in one register each
// step; they do the same float32 operations per lane in the same order,
// so results do not depend on which path runs.
var useAVX2 = cpu.X86.HasAVX2

//go:noescape
func qkx2SumsAVX2(xt, wt *[32][8]float32, lo, iscale *[8]float32, nmax int32, laux *[32][8]int32, sums *[3][8]float32)

//go:noescape
func qkx2ErrAVX2(xt, wt *[32][8]float32, laux *[32][8]int32, scale, min, cur *[8]float32)

func qkx2Sums(xt, wt *[32][8]float32, lo, iscale *[8]float32, nmax int32, laux *[32][8]int32, sums *[3][8]float32) {
	if useAVX2 {
		qkx2SumsAVX2(xt, wt, lo, iscale, nmax, laux, sums)
		return
	}
	qkx2SumsGo(xt, wt, lo, iscale, nmax, laux, sums)
}

func qkx2Err(xt, wt *[32][8]float32, laux *[32][8]int32, scale, min, cur *[8]float32) {
	if useAVX2 {
		qkx2ErrAVX2(xt, wt, laux, scale, min, cur)
		return
	}
	qkx2ErrGo(xt, wt, laux, scale, min, cur)
}

//go:noescape
func qxSumsAVX2(xt *[16][8]float32, iscale *[8]float32, nmax int32, laux *[16][8]int32, sums *[2][8]float32)

func qxSums(xt *[16][8]float32, iscale *[8]float32, nmax int32, laux *[16][8]int32, sums *[2][8]float32) {
	if useAVX2 {
		qxSumsAVX2(xt, iscale, nmax, laux, sums)
		return
	}
	qxSumsGo(xt, iscale, nmax, laux, sums)
}
