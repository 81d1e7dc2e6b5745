package quantize

// makeQKX2x8 runs make_qkx2_quants on the eight 32-element sub-blocks of a
// K-quant super-block at once, one sub-block per lane b. Each lane's
// arithmetic is exactly the scalar algorithm's (makeQKX2 in the tests), in
// the same order: its sums still run over i = 0..31 in turn, so results
// are bit-identical. Running the lanes side by side lets the eight
// dependency chains of every sum overlap, and on amd64 one AVX2
// instruction does all eight: this search is nearly all the time a Q4_K or
// Q5_K file takes.
//
// xt and wt hold the values and weights transposed (xt[i][b] is element i
// of sub-block b). Quants go to L (transposed too), each sub-block's scale
// to scales and its -min to mins.
func makeQKX2x8(nmax int32, xt, wt *[32][8]float32, L *[32][8]uint8, scales, mins *[8]float32, rmin, rdelta float32, nstep int) {
	var lo, hi, sumW, sumX, iscale, scale, bestErr [8]float32
	var active [8]bool
	lo, hi, sumW = xt[0], xt[0], wt[0]
	for b := range 8 {
		sumX[b] = float32(sumW[b] * xt[0][b])
	}
	for i := 1; i < 32; i++ {
		x, w := &xt[i], &wt[i]
		for b := range 8 {
			if x[b] < lo[b] {
				lo[b] = x[b]
			}
			if x[b] > hi[b] {
				hi[b] = x[b]
			}
			sumW[b] += w[b]
			sumX[b] += float32(w[b] * x[b])
		}
	}
	fmax := float32(nmax)
	for b := range 8 {
		if lo[b] > 0 {
			lo[b] = 0
		}
		// A lane with max == min gets all-zero quants and scale 0 at the
		// end; its values in between are computed but never used.
		active[b] = hi[b] != lo[b]
		iscale[b] = fmax / (hi[b] - lo[b])
		scale[b] = 1 / iscale[b]
	}
	var laux [32][8]int32
	var sums [3][8]float32
	qkx2Sums(xt, wt, &lo, &iscale, nmax, &laux, &sums)
	qkx2Err(xt, wt, &laux, &scale, &lo, &bestErr)
	// The quants of each lane's best candidate are recomputed once at the
	// end from the iscale and lo that produced them (the same operations
	// give the same quants), instead of copied at every improvement.
	winIscale, winLo := iscale, lo
	for is := 0; is <= nstep; is++ {
		step := rmin + float32(rdelta*float32(is)) + fmax
		for b := range 8 {
			iscale[b] = step / (hi[b] - lo[b]) // lo moves when a candidate wins
		}
		qkx2Sums(xt, wt, &lo, &iscale, nmax, &laux, &sums)
		sumL, sumL2, sumXL := &sums[0], &sums[1], &sums[2]
		var thisScale, thisMin, cur [8]float32
		var take [8]bool
		any := false
		for b := range 8 {
			D := float32(sumW[b]*sumL2[b]) - float32(sumL[b]*sumL[b])
			take[b] = active[b] && D > 0
			thisScale[b] = (float32(sumW[b]*sumXL[b]) - float32(sumX[b]*sumL[b])) / D
			thisMin[b] = (float32(sumL2[b]*sumX[b]) - float32(sumL[b]*sumXL[b])) / D
			if thisMin[b] > 0 {
				thisMin[b] = 0
				thisScale[b] = sumXL[b] / sumL2[b]
			}
			any = any || take[b]
		}
		if !any {
			continue
		}
		qkx2Err(xt, wt, &laux, &thisScale, &thisMin, &cur)
		for b := range 8 {
			if take[b] && cur[b] < bestErr[b] {
				winIscale[b], winLo[b] = iscale[b], lo[b]
				bestErr[b], scale[b], lo[b] = cur[b], thisScale[b], thisMin[b]
			}
		}
	}
	qkx2Sums(xt, wt, &winLo, &winIscale, nmax, &laux, &sums)
	for i := range 32 {
		for b := range 8 {
			L[i][b] = uint8(laux[i][b])
		}
	}
	for b := range 8 {
		if !active[b] {
			for i := range 32 {
				L[i][b] = 0
			}
			scale[b] = 0
		}
		scales[b] = scale[b]
		mins[b] = -lo[b]
	}
}

// qkx2SumsGo quantizes every lane's elements against its iscale and lo and
// sums the weighted quants the way make_qkx2_quants does, per lane in
// element order.
func qkx2SumsGo(xt, wt *[32][8]float32, lo, iscale *[8]float32, nmax int32, laux *[32][8]int32, sums *[3][8]float32) {
	var sumL, sumL2, sumXL [8]float32
	for i := range 32 {
		x, w, la := &xt[i], &wt[i], &laux[i]
		for b := range 8 {
			l := max(0, min(nmax, nearestInt(float32(iscale[b]*(x[b]-lo[b])))))
			la[b] = l
			fl := float32(l)
			wl := float32(w[b] * fl)
			sumL[b] += wl
			sumL2[b] += float32(wl * fl)
			sumXL[b] += float32(wl * x[b])
		}
	}
	sums[0], sums[1], sums[2] = sumL, sumL2, sumXL
}

// qkx2ErrGo is the weighted squared error of quants laux under scale and
// min, per lane in element order.
func qkx2ErrGo(xt, wt *[32][8]float32, laux *[32][8]int32, scale, min, cur *[8]float32) {
	var e [8]float32
	for i := range 32 {
		x, w, la := &xt[i], &wt[i], &laux[i]
		for b := range 8 {
			diff := float32(scale[b]*float32(la[b])) + min[b] - x[b]
			diff = diff * diff
			e[b] += float32(w[b] * diff)
		}
	}
	*cur = e
}

// makeQX8 is make_qx_quants (rmse_type 1, no importance weights) for eight
// 16-element groups at once, one per lane, bit-identical to the scalar
// makeQX for each: Q6_K's sixteen groups take two calls. Quants (l + nmax)
// go to L, transposed; the scales are returned.
func makeQX8(nmax int32, xt *[16][8]float32, L *[16][8]int8, scales *[8]float32) {
	var mx, amax, iscale, sumlx, suml2, best, scale [8]float32
	var active [8]bool
	for i := range 16 {
		for b := range 8 {
			if ax := abs32(xt[i][b]); ax > amax[b] {
				amax[b], mx[b] = ax, xt[i][b]
			}
		}
	}
	fmax := float32(nmax)
	for b := range 8 {
		active[b] = amax[b] >= groupMaxEps
		iscale[b] = -fmax / mx[b]
	}
	var laux [16][8]int32
	var sums [2][8]float32
	qxSums(xt, &iscale, nmax, &laux, &sums)
	for i := range 16 {
		for b := range 8 {
			L[i][b] = int8(laux[i][b] + nmax)
		}
	}
	for b := range 8 {
		sumlx[b], suml2[b] = sums[0][b], sums[1][b]
		if suml2[b] != 0 {
			scale[b] = sumlx[b] / suml2[b]
		}
		best[b] = scale[b] * sumlx[b]
	}
	const tenth float32 = 0.1
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		step := -(fmax + float32(tenth*float32(is)))
		for b := range 8 {
			iscale[b] = step / mx[b]
		}
		qxSums(xt, &iscale, nmax, &laux, &sums)
		for b := range 8 {
			lx, l2 := sums[0][b], sums[1][b]
			if l2 > 0 && float32(lx*lx) > float32(best[b]*l2) {
				for i := range 16 {
					L[i][b] = int8(laux[i][b] + nmax)
				}
				scale[b] = lx / l2
				best[b] = scale[b] * lx
			}
		}
	}
	for b := range 8 {
		if !active[b] {
			for i := range 16 {
				L[i][b] = 0
			}
			scale[b] = 0
		}
		scales[b] = scale[b]
	}
}

// qxSumsGo is make_qx_quants' inner loop for eight lanes.
func qxSumsGo(xt *[16][8]float32, iscale *[8]float32, nmax int32, laux *[16][8]int32, sums *[2][8]float32) {
	var lx, l2 [8]float32
	for i := range 16 {
		for b := range 8 {
			x := xt[i][b]
			l := max(-nmax, min(nmax-1, nearestInt(float32(iscale[b]*x))))
			laux[i][b] = l
			w := x * x
			fl := float32(l)
			lx[b] += float32(float32(w*x) * fl)
			l2[b] += float32(float32(w*fl) * fl)
		}
	}
	sums[0], sums[1] = lx, l2
}
