package audio

import (
	"fmt"
	"math"

	"github.com/siskin-ml/siskin/kernels"
)

// Stretch returns x played speed times as fast with its pitch kept, by
// WSOLA (waveform-similarity overlap-add): 40 ms Hann-windowed frames
// are laid down every 20 ms of output, each taken from near where the
// input is at that time, shifted by up to 6 ms so that it lines up with
// the natural continuation of the frame before (the shift with the
// largest cross-correlation). Periodic Hann windows at half overlap sum
// to one, so a steady tone keeps its level. The result has
// round(len(x)/speed) samples. speed must be in (0, 16].
func Stretch(x []float32, speed float64, rate int) ([]float32, error) {
	if !(speed > 0 && speed <= 16) {
		return nil, fmt.Errorf("audio: stretch speed %v outside (0, 16]", speed)
	}
	if rate < 100 {
		return nil, fmt.Errorf("audio: stretch sample rate %d too low", rate)
	}
	outLen := int(math.Round(float64(len(x)) / speed))
	if speed == 1 || len(x) == 0 {
		return append([]float32(nil), x...), nil
	}
	hop := rate / 50 // 20 ms
	n, tol := 2*hop, rate*6/1000
	win := make([]float32, n)
	for i := range win {
		win[i] = float32(0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n)))
	}
	// Padded input: hop zeros ahead (the first frame's rising half), and
	// room behind for the last frame's search.
	frames := outLen/hop + 2
	xp := make([]float32, hop+len(x)+n+2*tol+int(math.Ceil(float64(2*hop)*speed)))
	copy(xp[hop:], x)
	y := make([]float32, frames*hop+n)
	prev := 0 // where the last frame was taken from in xp
	for k := range frames {
		from := 0
		if k > 0 {
			from = bestShift(xp, prev+hop, int(math.Round(float64(k*hop)*speed)), tol, n)
		}
		seg, out := xp[from:from+n], y[k*hop:k*hop+n]
		for i, w := range win {
			out[i] += w * seg[i]
		}
		prev = from
	}
	return y[hop : hop+outLen], nil
}

// bestShift returns the start within [ideal-tol, ideal+tol] (and inside
// xp) whose n samples correlate most with those at natural.
func bestShift(xp []float32, natural, ideal, tol, n int) int {
	tmpl := xp[natural : natural+n]
	best, bestC := ideal, math.Inf(-1)
	for c := max(0, ideal-tol); c <= min(ideal+tol, len(xp)-n); c++ {
		if v := float64(kernels.VecDot(tmpl, xp[c:c+n])); v > bestC {
			best, bestC = c, v
		}
	}
	return best
}
