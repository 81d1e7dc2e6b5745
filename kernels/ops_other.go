//go:build !amd64 || !gc || purego

package kernels

func sumSquares(x []float32) float64          { return sumSquaresGo(x) }
func scaleRow(out, x, w []float32, s float32) { scaleRowGo(out, x, w, s) }
func silu(x []float32)                        { siluGo(x) }
func sigmoid(x []float32)                     { sigmoidGo(x) }
func geluErf(x []float32)                     { geluErfGo(x) }
func add(dst, a []float32)                    { addGo(dst, a) }
func mulRow(dst, a []float32)                 { mulGo(dst, a) }

func siluMul(x, y []float32) {
	siluGo(x)
	mulGo(x, y)
}

func geluErfMul(x, y []float32) {
	geluErfGo(x)
	mulGo(x, y)
}

func expMax(x []float32) (float32, float64) { return expMaxGo(x) }
