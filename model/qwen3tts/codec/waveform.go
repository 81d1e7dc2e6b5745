package codec

import (
	"math"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// upsample runs upsampler j (transposed conv k=s, then a ConvNeXt block)
// on R rows of x, writing R*s rows to y; it returns R*s.
func (s *Stream) upsample(j int, x, y []float32, R int) int {
	u, ws, C := &s.d.ups[j], &s.ws, s.d.cfg.LatentDim
	u.tc.run(y, x, R, nil, ws.m0)
	R *= u.tc.s
	cn := &u.cn
	all, room := window(ws.cat, s.state.dw[j], R, C)
	copy(room, y[:R*C])
	z := ws.m0[:R*C]
	for t := range R {
		zr := z[t*C : (t+1)*C]
		for ch := range C {
			w := cn.dw[ch*7 : ch*7+7]
			var acc float32
			for k, wk := range w {
				acc += wk * all[(t+k)*C+ch]
			}
			zr[ch] = acc + cn.dwb[ch]
		}
		layerNorm(zr, cn.lnw, cn.lnb)
	}
	slide(s.state.dw[j], all)
	hdn := ws.m1[:R*4*C]
	linear(hdn, cn.pw1, cn.pw1p, cn.pw1b, z, R)
	for t := range R {
		kernels.GELUErf(hdn[t*4*C : (t+1)*4*C])
	}
	m := ws.m0[:R*C]
	linear(m, cn.pw2, cn.pw2p, cn.pw2b, hdn, R)
	addScaled(y[:R*C], m, cn.gamma)
	return R
}

// layerNorm normalizes x over its channels (biased variance, eps 1e-6),
// with the statistics in float64.
func layerNorm(x, w, b []float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := sum / float64(len(x))
	var ss float64
	for _, v := range x {
		d := float64(v) - mean
		ss += d * d
	}
	rstd := 1 / math.Sqrt(ss/float64(len(x))+1e-6)
	for i, v := range x {
		x[i] = float32((float64(v)-mean)*rstd)*w[i] + b[i]
	}
}

// block runs DecoderBlock b (SnakeBeta, transposed conv, three residual
// units) on R rows of x (x is overwritten), writing R*r rows to y; it
// returns R*r.
func (s *Stream) block(b int, x, y []float32, R int) int {
	bl, ws := &s.d.blocks[b], &s.ws
	cin, cout := bl.up.in, bl.up.out
	if bl.up.p != nil { // SnakeBeta straight into the conv's window
		all, room := window(ws.m0, s.state.carry[b], R, cin)
		bl.act.apply(room, x[:R*cin], cin)
		bl.up.runPacked(y, all, R, s.state.carry[b])
	} else {
		bl.act.apply(x[:R*cin], x[:R*cin], cin)
		bl.up.run(y, x, R, s.state.carry[b], ws.m0)
	}
	R *= bl.up.s
	ys := y[:R*cout]
	for i := range bl.units {
		u := &bl.units[i]
		hist := s.state.unit[b][i]
		all, room := window(ws.cat, hist, R, cout)
		u.act1.apply(room, ys, cout)
		c1 := ws.m0[:R*cout]
		u.conv1.run(c1, all, R, ws.col)
		slide(hist, all)
		u.act2.apply(c1, c1, cout)
		c2 := ws.m1[:R*cout]
		u.conv2.run(c2, c1, R, nil)
		kernels.Add(ys, c2)
	}
	return R
}

// linear writes the R rows of w·x + b to dst, through the packed p when
// there is one.
func linear(dst []float32, w *tensor.Matrix, p *kernels.ConvWeights, b, x []float32, R int) {
	if p != nil {
		kernels.Conv(dst, p, x, R, 1)
		return
	}
	kernels.MatMul(dst, w, x, R)
	addBias(dst, b)
}
