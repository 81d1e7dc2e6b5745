//go:build !amd64 || purego

package quantize

var useAVX2 = false // no assembly here (other architecture, or the purego tag)

func qkx2Sums(xt, wt *[32][8]float32, lo, iscale *[8]float32, nmax int32, laux *[32][8]int32, sums *[3][8]float32) {
	qkx2SumsGo(xt, wt, lo, iscale, nmax, laux, sums)
}

func qkx2Err(xt, wt *[32][8]float32, laux *[32][8]int32, scale, min, cur *[8]float32) {
	qkx2ErrGo(xt, wt, laux, scale, min, cur)
}

func qxSums(xt *[16][8]float32, iscale *[8]float32, nmax int32, laux *[16][8]int32, sums *[2][8]float32) {
	qxSumsGo(xt, iscale, nmax, laux, sums)
}
