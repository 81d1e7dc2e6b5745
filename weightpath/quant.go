package weightpath

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/siskin-ml/siskin/tensor"
)

// Quantization of weight rows to the weight-path types (tensor.W4A8,
// W4A16: int4 with zero point 8; W8A8: int8), one fp16 scale per group of
// tensor.WeightGroup elements.
//
// W4 scale search: for a symmetric 4-bit grid q in [-8, 7] the error of a
// group depends only on its scale d. Candidates put the group's largest
// magnitude at w4Steps grid steps, from both signs (the grid is one step
// longer on the negative side); for each candidate the rounding is fixed,
// the least-squares scale for that rounding (d = Σxq / Σq²) is taken, and
// the candidate with the smallest squared error wins; its scale is then
// rounded to fp16. Unweighted error is what a matrix product with
// isotropic activations feels; there is no calibration data at load time.

// w4Steps are the grid positions (in steps) tried for the largest
// magnitude: 7 and 8 clip nothing (llama.cpp's Q4_0 takes 8); beyond 8
// the few largest weights are clipped, which a bell-shaped group of 128
// repays with a finer step for all the others.
var w4Steps = []float32{7, 7.5, 8, 8.5, 9, 9.5, 10}

// QuantizeRow quantizes x (a multiple of tensor.WeightGroup long, any
// length for W16A16) into dst, tensor.RowBytes(typ, len(x)) bytes of a
// weight-path type; W16A16 rounds to BF16 (nearest even).
func QuantizeRow(dst []byte, typ tensor.Type, x []float32) error {
	want, err := tensor.RowBytes(typ, len(x))
	if err != nil {
		return err
	}
	if !typ.IsWeightPath() {
		return fmt.Errorf("weightpath: %s is not a weight-path type", typ)
	}
	if len(dst) != want {
		return fmt.Errorf("weightpath: %d bytes for %d %s elements, want %d", len(dst), len(x), typ, want)
	}
	if typ == tensor.W16A16 {
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], tensor.Float32ToBF16(v))
		}
		return nil
	}
	g, bb := tensor.WeightGroup, typ.BlockBytes()
	for i := 0; i*g < len(x); i++ {
		block := dst[i*bb : (i+1)*bb]
		xs := (*[tensor.WeightGroup]float32)(x[i*g:])
		if typ == tensor.W8A8 {
			quantizeW8((*[130]byte)(block), xs)
		} else {
			quantizeW4((*[66]byte)(block), xs)
		}
	}
	return nil
}

func quantizeW4(b *[66]byte, x *[tensor.WeightGroup]float32) {
	var amax, maxv float32
	var sxx float64
	for _, v := range x {
		if a := abs(v); a > amax {
			amax, maxv = a, v
		}
		sxx += float64(v) * float64(v)
	}
	var q [tensor.WeightGroup]int8
	d := float32(0)
	if amax > 0 {
		// For a fixed rounding the best scale is Σxq/Σq² and the error
		// Σx² - (Σxq)²/Σq², so each candidate costs one pass.
		bestErr := math.Inf(1)
		bestID := float32(0)
		for _, sign := range []float32{-1, 1} {
			for _, st := range w4Steps {
				id := sign * st / maxv
				// Four independent sums: the float additions' latency, not
				// the arithmetic, bounds this loop.
				var sxq4, sqq4 [4]float32
				for j := 0; j < tensor.WeightGroup; j += 4 {
					for k := range 4 {
						v := x[j+k]
						c := float32(round4(v * id))
						sxq4[k] += v * c
						sqq4[k] += c * c
					}
				}
				sxq := (sxq4[0] + sxq4[1]) + (sxq4[2] + sxq4[3])
				sqq := (sqq4[0] + sqq4[1]) + (sqq4[2] + sqq4[3])
				if sqq == 0 || sxq <= 0 {
					continue
				}
				if e := sxx - float64(sxq)*float64(sxq)/float64(sqq); e < bestErr {
					bestErr, bestID, d = e, id, sxq/sqq
				}
			}
		}
		d = fp16Round(d)
		for j, v := range x {
			q[j] = int8(round4(v * bestID))
		}
	}
	binary.LittleEndian.PutUint16(b[0:], tensor.Float32ToFP16(d))
	for s := 0; s < 4; s++ {
		for j := 0; j < 16; j++ {
			lo, hi := uint8(q[32*s+j]+8), uint8(q[32*s+16+j]+8)
			b[2+16*s+j] = lo | hi<<4
		}
	}
}

func quantizeW8(b *[130]byte, x *[tensor.WeightGroup]float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs(v))
	}
	d := fp16Round(amax / 127)
	id := float32(0)
	if d > 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(b[0:], tensor.Float32ToFP16(d))
	for j, v := range x {
		b[2+j] = byte(int8(clamp(round(v*id), -127, 127)))
	}
}

// round4 rounds t to the nearest integer in [-8, 7] (halves up), with
// plain comparisons: the built-in float min/max handle NaN and cost more.
func round4(t float32) int32 {
	if t < -8 {
		t = -8
	} else if t > 7 {
		t = 7
	}
	return int32(t+8.5) - 8
}

func abs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

func round(v float32) float32 { return float32(math.RoundToEven(float64(v))) }

func clamp(v, lo, hi float32) float32 { return min(max(v, lo), hi) }

func fp16Round(v float32) float32 { return tensor.FP16ToFloat32(tensor.Float32ToFP16(v)) }
