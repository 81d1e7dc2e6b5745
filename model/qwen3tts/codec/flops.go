package codec

import "github.com/siskin-ml/siskin/tensor"

// FLOPsPerFrame is the arithmetic of decoding one frame (multiply and add
// counted as two): every matrix product and convolution, the ConvNeXt
// depthwise convolutions included; attention scores, norms and
// activations (about 1 % at the released size) are left out. It is the
// numerator of the codec's FMA-throughput floor.
func (d *Decoder) FLOPsPerFrame() float64 {
	mm := func(m *tensor.Matrix, rows int) float64 { return 2 * float64(m.Rows) * float64(m.Cols) * float64(rows) }
	f := mm(d.outFirst, 1) + mm(d.outRest, 1) + mm(d.preConv.w, 1) + mm(d.inProj, 1) + mm(d.outProj, 1)
	for _, l := range d.layers {
		for _, m := range []*tensor.Matrix{l.q, l.k, l.v, l.o, l.gate, l.up, l.down} {
			f += mm(m, 1)
		}
	}
	R := 1
	for _, u := range d.ups {
		f += mm(u.tc.w, R)
		R *= u.tc.s
		f += 2*7*float64(len(u.cn.dwb))*float64(R) + mm(u.cn.pw1, R) + mm(u.cn.pw2, R)
	}
	f += mm(d.conv0.w, R)
	for _, b := range d.blocks {
		f += mm(b.up.w, R)
		R *= b.up.s
		for _, u := range b.units {
			f += mm(u.conv1.w, R) + mm(u.conv2.w, R)
		}
	}
	return f + mm(d.final.w, R)
}
