package quantize

import (
	"math/rand/v2"
	"testing"
)

// makeQKX2 is ggml's make_qkx2_quants written plainly, the reference
// for makeQKX2x8 for the 32-element sub-blocks of
// Q4_K and Q5_K: quantize x to [0, nmax] with a scale and a non-positive
// offset, searching nstep+1 candidate scales for the lowest weighted
// squared error (use_mad is false for these types). It returns the scale
// and stores -min in *theMin. Fixed-size arrays let the compiler drop
// bounds checks: this loop is most of the time a K-quant file takes.
func makeQKX2(nmax int32, x, weights *[32]float32, L, laux *[32]uint8, theMin *float32, rmin, rdelta float32, nstep int) float32 {
	lo, hi := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < 32; i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		*L = [32]uint8{}
		*theMin = -lo
		return 0
	}
	fmax := float32(nmax)
	iscale := fmax / (hi - lo)
	scale := 1 / iscale
	var bestErr float32
	for i := range 32 {
		l := nearestInt(float32(iscale * (x[i] - lo)))
		L[i] = uint8(max(0, min(nmax, l)))
		diff := float32(scale*float32(L[i])) + lo - x[i]
		diff = diff * diff
		bestErr += float32(weights[i] * diff)
	}
	if nstep < 1 {
		*theMin = -lo
		return scale
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + fmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i := range 32 {
			l := max(0, min(nmax, nearestInt(float32(iscale*(x[i]-lo)))))
			laux[i] = uint8(l)
			fl := float32(l)
			wl := float32(weights[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var cur float32
			for i := range 32 {
				diff := float32(thisScale*float32(laux[i])) + thisMin - x[i]
				diff = diff * diff
				cur += float32(weights[i] * diff)
			}
			if cur < bestErr {
				*L = *laux
				bestErr = cur
				scale = thisScale
				lo = thisMin
			}
		}
	}
	*theMin = -lo
	return scale
}

// The eight-lane search gives exactly the plain one's results, on random,
// all-positive, constant, partly zero and all-zero sub-blocks, with the
// assembly kernels and without.
func TestMakeQKX2x8MatchesScalar(t *testing.T) {
	paths := []bool{false}
	if useAVX2 {
		paths = append(paths, true)
	}
	defer func(v bool) { useAVX2 = v }(useAVX2)
	for _, avx := range paths {
		useAVX2 = avx
		checkLanes(t)
	}
}

func checkLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		var xt, wt [32][8]float32
		var x [8][32]float32
		for b := range 8 {
			kind := r.IntN(6)
			for i := range 32 {
				v := float32(r.NormFloat64())
				switch kind {
				case 1:
					v = abs32(v) + 0.5
				case 2:
					v = 0.25
				case 3:
					if i%3 != 0 {
						v = 0
					}
				case 4:
					v = 0
				}
				x[b][i] = v
				xt[i][b] = v
				wt[i][b] = 0.3 + abs32(v)
			}
		}
		for _, p := range []struct {
			nmax  int32
			rmin  float32
			nstep int
		}{{15, -1, 20}, {31, -0.5, 15}} {
			var L [32][8]uint8
			var scales, mins [8]float32
			makeQKX2x8(p.nmax, &xt, &wt, &L, &scales, &mins, p.rmin, 0.1, p.nstep)
			for b := range 8 {
				var w [32]float32
				for i := range 32 {
					w[i] = wt[i][b]
				}
				var Ls, laux [32]uint8
				var mn float32
				sc := makeQKX2(p.nmax, &x[b], &w, &Ls, &laux, &mn, p.rmin, 0.1, p.nstep)
				if sc != scales[b] || mn != mins[b] {
					t.Fatalf("avx2 %v trial %d lane %d nmax %d: scale %v min %v, want %v %v", useAVX2, trial, b, p.nmax, scales[b], mins[b], sc, mn)
				}
				for i := range 32 {
					if L[i][b] != Ls[i] {
						t.Fatalf("trial %d lane %d nmax %d: L[%d] = %d, want %d", trial, b, p.nmax, i, L[i][b], Ls[i])
					}
				}
			}
		}
	}
}

// makeQX is ggml's make_qx_quants written plainly, the reference for
// makeQX8: with rmse_type 1 and no importance
// weights (weights x^2): signed quants in [-nmax, nmax) stored as l+nmax,
// trying 18 scales around nmax/max for the best weighted fit.
func makeQX(nmax int, x []float32, L []int8) float32 {
	var mx, amax float32
	for _, v := range x {
		if ax := abs32(v); ax > amax {
			amax = ax
			mx = v
		}
	}
	if amax < groupMaxEps {
		for i := range x {
			L[i] = 0
		}
		return 0
	}
	fmax := float32(nmax)
	lim := int32(nmax)
	iscale := -fmax / mx
	var sumlx, suml2 float32
	for i, v := range x {
		l := nearestInt(float32(iscale * v))
		l = max(-lim, min(lim-1, l))
		L[i] = int8(l + lim)
		w := v * v
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	const tenth float32 = 0.1
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fmax + float32(tenth*float32(is))) / mx
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := nearestInt(float32(iscale * v))
			l = max(-lim, min(lim-1, l))
			w := v * v
			fl := float32(l)
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				l := nearestInt(float32(iscale * v))
				L[i] = int8(lim + max(-lim, min(lim-1, l)))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// The eight-lane make_qx_quants matches the plain one, with and without
// the assembly kernel.
func TestMakeQX8MatchesScalar(t *testing.T) {
	paths := []bool{false}
	if useAVX2 {
		paths = append(paths, true)
	}
	defer func(v bool) { useAVX2 = v }(useAVX2)
	r := rand.New(rand.NewPCG(7, 8))
	for _, avx := range paths {
		useAVX2 = avx
		for trial := 0; trial < 500; trial++ {
			var xt [16][8]float32
			var x [8][16]float32
			for b := range 8 {
				kind := r.IntN(4)
				for i := range 16 {
					v := float32(r.NormFloat64())
					switch kind {
					case 1:
						v = 0
					case 2:
						v = float32(i%2) * 1e-3
					}
					x[b][i], xt[i][b] = v, v
				}
			}
			var L [16][8]int8
			var scales [8]float32
			makeQX8(32, &xt, &L, &scales)
			for b := range 8 {
				var Ls [16]int8
				sc := makeQX(32, x[b][:], Ls[:])
				if sc != scales[b] {
					t.Fatalf("avx2 %v trial %d lane %d: scale %v, want %v", avx, trial, b, scales[b], sc)
				}
				for i := range 16 {
					if L[i][b] != Ls[i] {
						t.Fatalf("avx2 %v trial %d lane %d: L[%d] = %d, want %d", avx, trial, b, i, L[i][b], Ls[i])
					}
				}
			}
		}
	}
}
