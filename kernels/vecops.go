package kernels

// The vector, activation and attention operations of a tier. Like the
// matrix kernels (kernelSets), each tier has one table of them, filled in
// by its architecture's dispatch file; a tier without SIMD versions of
// these operations uses the generic table. The package functions below
// call the table of the tier in use, so pinning a tier (SISKIN_KERNELS,
// or a test's UseTier) switches them with the matrix kernels.
type vecKernels struct {
	silu, sigmoid, geluErf        func(x []float32)
	siluMul, geluErfMul, add, mul func(x, y []float32)
	sumSquares                    func(x []float32) float64
	scaleRow                      func(out, x, w []float32, s float32)
	expMax                        func(x []float32) (float32, float64)

	vecDot   func(a, b []float32) float32
	vecAxpy  func(y, x []float32, s float32)
	dotRows  func(out, q, k []float32, stride int, scale float32)
	axpyRows func(y, p, v []float32, stride int)

	dotRowsMulti     func(out []float32, ostride int, q []float32, qstride, m, width int, k []float32, kstride, n int, scale float32, next []float32)
	axpyRowsMulti    func(y []float32, ystride, m, width int, p []float32, pstride, n int, v []float32, vstride int, next []float32)
	dotRowsMultiF16  func(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32, next []uint16)
	axpyRowsMultiF16 func(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int, next []uint16)
	dotRowsMultiQ8   func(out []float32, ostride int, q []float32, qstride, m, width int, k []byte, kstride, n int, scale float32, next []byte)
	axpyRowsMultiQ8  func(y []float32, ystride, m, width int, p []float32, pstride, n int, v []byte, vstride int, next []byte)
	dequantQ8        func(dst []float32, src []byte) // DequantRowQ8 without its checks
	quantQ8          func(dst []byte, src []float32) // QuantizeRowQ8 without its checks
	// q8QueryInt8: dotRowsMultiQ8 quantizes the query and computes int8
	// dots (dotRowsMultiQ8Int8Go's numerics), not float32 ones.
	q8QueryInt8 bool
	// dotRowsMultiQ8Pre is that dot on query rows quantQueryQ8 laid out
	// (qstride bytes apart).
	dotRowsMultiQ8Pre func(out []float32, ostride int, qq []byte, qstride, m, width int, k []byte, kstride, n int, scale float32, next []byte)
	// dotRowsHeadsQ8Pre and axpyRowsHeadsQ8 (F16: dotRowsHeadsF16 and
	// axpyRowsHeadsF16), where a tier has them, are dotRowsMultiQ8Pre and
	// axpyRowsMultiQ8 over several KV heads of the same rows in one pass
	// (DotRowsHeadsQ8Query, AxpyRowsHeadsQ8); they report false for a
	// shape they do not take.
	dotRowsHeadsQ8Pre func(out []float32, ostride, hout int, qq []byte, qstride, hq, m, width int, k []byte, kstride, hk, n, heads int, scale float32) bool
	axpyRowsHeadsQ8   func(y []float32, ystride, hy, m, width int, p []float32, pstride, hp, n int, v []byte, vstride, hv, heads int) bool
	dotRowsHeadsF16   func(out []float32, ostride, hout int, q []float32, qstride, hq, m, width int, k []uint16, kstride, hk, n, heads int, scale float32) bool
	axpyRowsHeadsF16  func(y []float32, ystride, hy, m, width int, p []float32, pstride, hp, n int, v []uint16, vstride, hv, heads int) bool
	// dotRowsPairedF16: DotRowsPairedF16's kernel (false: none for
	// this width).
	dotRowsPairedF16 func(out []float32, ostride, ohead int, qx []float32, qxstride, qxhead, width int, k []uint16, kstride, n int, scale float32, next []uint16) bool
	// wideF16Attend: the f16 attention kernels take a head of up to
	// 128 columns in one pass over each row (F16AttendRows).
	wideF16Attend bool
	f32ToF16      func(dst []uint16, src []float32)
	f16ToF32      func(dst []float32, src []uint16)
}

// vecSets[t] holds tier t's vector operations (never nil once init ran).
var vecSets [numTiers]*vecKernels

// genericVecKernels is the pure-Go table: the reference of every tier.
func genericVecKernels() *vecKernels {
	return &vecKernels{
		silu: siluGo, sigmoid: sigmoidGo, geluErf: geluErfGo,
		siluMul:    func(x, y []float32) { siluGo(x); mulGo(x, y) },
		geluErfMul: func(x, y []float32) { geluErfGo(x); mulGo(x, y) },
		add:        addGo, mul: mulGo,
		sumSquares: sumSquaresGo, scaleRow: scaleRowGo, expMax: expMaxGo,
		vecDot: vecDotGo, vecAxpy: vecAxpyGo, dotRows: dotRowsGo, axpyRows: axpyRowsGo,
		dotRowsMulti: func(out []float32, ostride int, q []float32, qstride, m, width int, k []float32, kstride, n int, scale float32, _ []float32) {
			dotRowsMultiGo(out, ostride, q, qstride, m, width, k, kstride, n, scale)
		},
		axpyRowsMulti: func(y []float32, ystride, m, width int, p []float32, pstride, n int, v []float32, vstride int, _ []float32) {
			axpyRowsMultiGo(y, ystride, m, width, p, pstride, n, v, vstride)
		},
		dotRowsMultiF16: func(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32, _ []uint16) {
			dotRowsMultiF16Go(out, ostride, q, qstride, m, width, k, kstride, n, scale)
		},
		axpyRowsMultiF16: func(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int, _ []uint16) {
			axpyRowsMultiF16Go(y, ystride, m, width, p, pstride, n, v, vstride)
		},
		// A tier without q8_0 kernels dequantizes and runs its float32 ones.
		dotRowsMultiQ8: dotRowsMultiQ8Widen, axpyRowsMultiQ8: axpyRowsMultiQ8Widen, dequantQ8: dequantQ8Go, quantQ8: quantQ8Go,
		f32ToF16: f32ToF16Go, f16ToF32: f16ToF32Go,
	}
}

// vk returns the vector operations of the tier in use.
func vk() *vecKernels { return vecSets[current.Load()] }

func silu(x []float32)                        { vk().silu(x) }
func sigmoid(x []float32)                     { vk().sigmoid(x) }
func geluErf(x []float32)                     { vk().geluErf(x) }
func siluMul(x, y []float32)                  { vk().siluMul(x, y) }
func geluErfMul(x, y []float32)               { vk().geluErfMul(x, y) }
func add(dst, a []float32)                    { vk().add(dst, a) }
func mulRow(dst, a []float32)                 { vk().mul(dst, a) }
func sumSquares(x []float32) float64          { return vk().sumSquares(x) }
func scaleRow(out, x, w []float32, s float32) { vk().scaleRow(out, x, w, s) }
func expMax(x []float32) (float32, float64)   { return vk().expMax(x) }
func vecDot(a, b []float32) float32           { return vk().vecDot(a, b) }
func vecAxpy(y, x []float32, s float32)       { vk().vecAxpy(y, x, s) }
func f32ToF16(dst []uint16, src []float32)    { vk().f32ToF16(dst, src) }
func f16ToF32(dst []float32, src []uint16)    { vk().f16ToF32(dst, src) }

func dotRows(out, q, k []float32, stride int, scale float32) { vk().dotRows(out, q, k, stride, scale) }
func axpyRows(y, p, v []float32, stride int)                 { vk().axpyRows(y, p, v, stride) }

func dotRowsMulti(out []float32, ostride int, q []float32, qstride, m, width int, k []float32, kstride, n int, scale float32, next []float32) {
	vk().dotRowsMulti(out, ostride, q, qstride, m, width, k, kstride, n, scale, next)
}

func axpyRowsMulti(y []float32, ystride, m, width int, p []float32, pstride, n int, v []float32, vstride int, next []float32) {
	vk().axpyRowsMulti(y, ystride, m, width, p, pstride, n, v, vstride, next)
}

func dotRowsMultiF16(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32, next []uint16) {
	vk().dotRowsMultiF16(out, ostride, q, qstride, m, width, k, kstride, n, scale, next)
}

func axpyRowsMultiF16(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int, next []uint16) {
	vk().axpyRowsMultiF16(y, ystride, m, width, p, pstride, n, v, vstride, next)
}
