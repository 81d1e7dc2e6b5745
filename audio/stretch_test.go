package audio

import (
	"math"
	"testing"
)

// sine is amp*sin(2 pi f t) for n samples at rate.
func sine(f, amp float64, n, rate int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(amp * math.Sin(2*math.Pi*f*float64(i)/float64(rate)))
	}
	return x
}

// pitch estimates a tone's frequency from its rising zero crossings
// (linearly interpolated) between a and b.
func pitch(y []float32, a, b, rate int) float64 {
	var first, last float64
	cycles := -1
	for i := a; i < b-1; i++ {
		if y[i] < 0 && y[i+1] >= 0 {
			at := float64(i) + float64(-y[i]/(y[i+1]-y[i]))
			if cycles < 0 {
				first = at
			}
			last = at
			cycles++
		}
	}
	return float64(cycles) * float64(rate) / (last - first)
}

func rms(y []float32) float64 {
	var s float64
	for _, v := range y {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(y)))
}

// TestStretchKeepsPitch: a 1 s 220 Hz tone at every speed lasts
// round(1/speed) s to the sample, keeps its pitch within 0.5% and its
// level within 5% away from the edges (50 ms), and has no clicks: no step
// between samples above 1.2 times the tone's steepest. A resampler
// (which shifts pitch by the speed) fails the pitch check.
func TestStretchKeepsPitch(t *testing.T) {
	const rate, f, amp = 24000, 220.0, 0.5
	x := sine(f, amp, rate, rate)
	maxStep := 2 * math.Pi * f / rate * amp * 1.2
	for _, speed := range []float64{0.25, 0.5, 0.8, 1, 1.3, 2, 3, 4} {
		y, err := Stretch(x, speed, rate)
		if err != nil {
			t.Fatal(err)
		}
		if want := int(math.Round(rate / speed)); len(y) != want {
			t.Errorf("speed %v: %d samples, want %d", speed, len(y), want)
			continue
		}
		edge := rate / 20
		mid := y[edge : len(y)-edge]
		if p := pitch(y, edge, len(y)-edge, rate); math.Abs(p-f) > 0.005*f {
			t.Errorf("speed %v: pitch %.2f Hz, want %.0f", speed, p, f)
		}
		if r := rms(mid); math.Abs(r-amp/math.Sqrt2) > 0.05*amp/math.Sqrt2 {
			t.Errorf("speed %v: RMS %.4f, want %.4f", speed, r, amp/math.Sqrt2)
		}
		for i := 1; i < len(mid); i++ {
			if d := math.Abs(float64(mid[i] - mid[i-1])); d > maxStep {
				t.Errorf("speed %v: step %.4f at %d, above %.4f", speed, d, edge+i, maxStep)
				break
			}
		}
	}
}

// Two tones (a voice-like mix, whose common period is longer than the
// search reaches) keep both frequencies: in 50 ms Hann-windowed frames
// the mean amplitude at 180 and 530 Hz stays within 3% of the input's
// (measured: 0.6%), and at the resampled pitches (the tones times the
// speed) below 2% of it (measured: 0.4%).
func TestStretchTwoTones(t *testing.T) {
	const rate = 24000
	a, b := sine(180, 0.3, rate, rate), sine(530, 0.2, rate, rate)
	for i := range a {
		a[i] += b[i]
	}
	// probe is the mean amplitude at f over 50 ms windowed frames.
	probe := func(y []float32, f float64) float64 {
		n := rate / 20
		var sum float64
		frames := 0
		for at := 0; at+n <= len(y); at += n / 2 {
			var re, im, wsum float64
			for i := range n {
				w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n))
				ph := 2 * math.Pi * f * float64(i) / rate
				re += w * float64(y[at+i]) * math.Cos(ph)
				im += w * float64(y[at+i]) * math.Sin(ph)
				wsum += w
			}
			sum += 2 * math.Hypot(re, im) / wsum
			frames++
		}
		return sum / float64(frames)
	}
	for _, speed := range []float64{0.5, 1.5} {
		y, err := Stretch(a, speed, rate)
		if err != nil {
			t.Fatal(err)
		}
		mid := y[rate/20 : len(y)-rate/20]
		for _, c := range []struct{ f, amp float64 }{{180, 0.3}, {530, 0.2}} {
			if got := probe(mid, c.f); math.Abs(got-c.amp) > 0.03*c.amp {
				t.Errorf("speed %v: %v Hz at amplitude %.4f, want %.2f", speed, c.f, got, c.amp)
			}
			if off := probe(mid, c.f*speed); off > 0.02*c.amp {
				t.Errorf("speed %v: amplitude %.4f at the resampled pitch %v Hz", speed, off, c.f*speed)
			}
		}
	}
}

func TestStretchRefuses(t *testing.T) {
	for _, s := range []float64{0, -1, math.NaN(), 17} {
		if _, err := Stretch([]float32{1}, s, 24000); err == nil {
			t.Errorf("speed %v: no error", s)
		}
	}
	if y, _ := Stretch(nil, 2, 24000); len(y) != 0 {
		t.Errorf("empty input: %d samples", len(y))
	}
}
