package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/safetensors"
	"github.com/siskin-ml/siskin/tensor"
)

// conv is a causal Conv1d with stride 1: left padding (k-1)*dil, output
// length = input length. Its weight is held as a matrix [out][k*in] with
// column j*in+i = W[o][i][j], so one output row is the product with the k
// input rows it reads laid end to end.
type conv struct {
	w               *tensor.Matrix
	b               []float32
	in, out, k, dil int
	p               *kernels.ConvWeights // w and b packed (see packConvs), or nil
	// row is w's one row when the conv has one output channel and
	// dilation 1 (the final conv): an output is then one dot product.
	row []float32
}

// hist is the number of past input rows the conv reads.
func (c *conv) hist() int { return (c.k - 1) * c.dil }

// transConv is a ConvTranspose1d with kernel k, stride s and the causal
// right trim k-s. Its weight is held as a matrix [k*out][in] with row
// j*out+o = W[i][o][j], so each input row gives k output taps of out.
type transConv struct {
	w             *tensor.Matrix
	b             []float32
	in, out, k, s int
	p             *kernels.ConvWeights // w packed without bias, or nil
}

// snake is SnakeBeta with its log-scale parameters resolved at load:
// x + inv[c]*sin(a[c]*x)^2, a = exp(alpha), inv = 1/(exp(beta)+1e-9).
type snake struct{ a, inv []float32 }

type convNeXt struct {
	dw, dwb    []float32 // depthwise k=7: dw[c*7+j]
	lnw, lnb   []float32
	pw1, pw2   *tensor.Matrix
	pw1b, pw2b []float32
	pw1p, pw2p *kernels.ConvWeights // pw1/pw2 with their biases packed, or nil
	gamma      []float32
}

type upsample struct {
	tc transConv
	cn convNeXt
}

type resUnit struct {
	act1, act2   snake
	conv1, conv2 conv
}

type block struct {
	act   snake
	up    transConv
	units [3]resUnit
}

type layer struct {
	inNorm, postNorm    []float32
	q, k, v, o          *tensor.Matrix
	attnScale, mlpScale []float32
	gate, up, down      *tensor.Matrix
}

// Decoder holds the weights of a speech tokenizer's decoder. It is
// immutable after Load, so any number of Streams may share it.
type Decoder struct {
	cfg               Config
	books             [][]float32 // per codebook: [codebook_size][codebook_dim/2], usage-clamped
	outFirst, outRest *tensor.Matrix
	preConv           conv
	inProj, outProj   *tensor.Matrix
	inProjB, outProjB []float32
	layers            []layer
	norm              []float32
	rope              *kernels.RoPETable
	ups               []upsample
	conv0             conv
	blocks            []block
	finalAct          snake
	final             conv
	// linears: the transformer's matrices packed for kernels.Conv (when
	// packConvs ran), used by matMul.
	linears map[*tensor.Matrix]*kernels.ConvWeights
	// Bytes is the heap held by the weights.
	Bytes int64
}

// Config returns the decoder's configuration.
func (d *Decoder) Config() Config { return d.cfg }

// Load reads a speech tokenizer folder: config.json and model.safetensors
// (only the decoder.* tensors are read).
func Load(dir string) (*Decoder, error) {
	cfg, err := ReadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return New(cfg, f)
}

// loader reads tensors by name, keeping the first error.
type loader struct {
	f     *safetensors.File
	err   error
	bytes int64
}

func (l *loader) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

// get returns tensor name as float32 after checking its shape.
func (l *loader) get(name string, shape ...int) []float32 {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.fail(fmt.Errorf("%s: missing tensor %q", l.f.Path, name))
		return nil
	}
	if !slices.Equal(t.Shape, shape) {
		l.fail(fmt.Errorf("%s: tensor %q has shape %v, want %v (from config.json)", l.f.Path, name, t.Shape, shape))
		return nil
	}
	out := make([]float32, t.Elements())
	if err := tensor.Dequantize(out, t.Type, t.Data); err != nil {
		l.fail(fmt.Errorf("%s: tensor %q: %v", l.f.Path, name, err))
		return nil
	}
	return out
}

// matrix builds an F32 matrix whose element (r, c) is at(r, c).
func (l *loader) matrix(name string, rows, cols int, at func(r, c int) float32) *tensor.Matrix {
	if l.err != nil {
		return nil
	}
	data := make([]byte, 4*rows*cols)
	for r := range rows {
		for c := range cols {
			binary.LittleEndian.PutUint32(data[4*(r*cols+c):], math.Float32bits(at(r, c)))
		}
	}
	l.bytes += int64(len(data))
	return &tensor.Matrix{Name: name, Type: tensor.F32, Rows: rows, Cols: cols, Data: data}
}

// linear reads an nn.Linear weight [out, in].
func (l *loader) linear(name string, out, in int) *tensor.Matrix {
	w := l.get(name, out, in)
	return l.matrix(name, out, in, func(r, c int) float32 { return w[r*in+c] })
}

func (l *loader) vec(name string, n int) []float32 {
	v := l.get(name, n)
	l.bytes += int64(4 * len(v))
	return v
}

// conv reads a causal Conv1d (prefix.weight [out, in, k], prefix.bias).
func (l *loader) conv(prefix string, in, out, k, dil int) conv {
	w := l.get(prefix+".weight", out, in, k)
	c := conv{b: l.vec(prefix+".bias", out), in: in, out: out, k: k, dil: dil}
	c.w = l.matrix(prefix+".weight", out, k*in, func(o, col int) float32 {
		j, i := col/in, col%in
		return w[(o*in+i)*k+j]
	})
	return c
}

// transConv reads a ConvTranspose1d (prefix.weight [in, out, k], prefix.bias).
func (l *loader) transConv(prefix string, in, out, k, s int) transConv {
	w := l.get(prefix+".weight", in, out, k)
	t := transConv{b: l.vec(prefix+".bias", out), in: in, out: out, k: k, s: s}
	t.w = l.matrix(prefix+".weight", k*out, in, func(row, i int) float32 {
		j, o := row/out, row%out
		return w[(i*out+o)*k+j]
	})
	return t
}

func (l *loader) snake(prefix string, c int) snake {
	alpha, beta := l.get(prefix+".alpha", c), l.get(prefix+".beta", c)
	if l.err != nil {
		return snake{}
	}
	s := snake{a: make([]float32, c), inv: make([]float32, c)}
	for i := range c {
		s.a[i] = float32(math.Exp(float64(alpha[i])))
		s.inv[i] = float32(1 / (math.Exp(float64(beta[i])) + 1e-9))
	}
	l.bytes += int64(8 * c)
	return s
}

// New builds a Decoder from a config and an open safetensors file; the
// weights are copied, so f may be closed afterwards.
func New(cfg *Config, f *safetensors.File) (*Decoder, error) {
	l := &loader{f: f}
	d := &Decoder{cfg: *cfg}
	d.loadQuantizer(l)
	d.loadTransformer(l)
	d.loadUpsampling(l)
	d.loadWaveform(l)
	if l.err != nil {
		return nil, l.err
	}
	if kernels.ConvAccelerated() {
		if err := d.packConvs(l); err != nil {
			return nil, err
		}
	}
	d.rope = kernels.NewRoPETable(cfg.HeadDim, cfg.RopeTheta)
	d.Bytes = l.bytes
	return d, nil
}

func (d *Decoder) loadQuantizer(l *loader) {
	c := &d.cfg
	dim := c.CodebookDim / 2
	d.books = make([][]float32, c.Quantizers)
	for q := range c.Quantizers {
		name := fmt.Sprintf("decoder.quantizer.rvq_rest.vq.layers.%d._codebook.", q-1)
		if q == 0 {
			name = "decoder.quantizer.rvq_first.vq.layers.0._codebook."
		}
		sum := l.get(name+"embedding_sum", c.CodebookSize, dim)
		usage := l.get(name+"cluster_usage", c.CodebookSize)
		if l.err != nil {
			return
		}
		for r := range c.CodebookSize {
			u := max(float64(usage[r]), 1e-5)
			for i := range dim {
				sum[r*dim+i] = float32(float64(sum[r*dim+i]) / u)
			}
		}
		d.books[q] = sum
		l.bytes += int64(4 * len(sum))
	}
	proj := func(name string) *tensor.Matrix {
		w := l.get(name, c.CodebookDim, dim, 1)
		return l.matrix(name, c.CodebookDim, dim, func(r, col int) float32 { return w[r*dim+col] })
	}
	d.outFirst = proj("decoder.quantizer.rvq_first.output_proj.weight")
	d.outRest = proj("decoder.quantizer.rvq_rest.output_proj.weight")
	d.preConv = l.conv("decoder.pre_conv.conv", c.CodebookDim, c.LatentDim, 3, 1)
}

func (d *Decoder) loadTransformer(l *loader) {
	c := &d.cfg
	p := "decoder.pre_transformer."
	d.inProj = l.linear(p+"input_proj.weight", c.HiddenSize, c.LatentDim)
	d.inProjB = l.vec(p+"input_proj.bias", c.HiddenSize)
	qw, kvw := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	d.layers = make([]layer, c.Layers)
	for i := range d.layers {
		lp := fmt.Sprintf("%slayers.%d.", p, i)
		d.layers[i] = layer{
			inNorm:    l.vec(lp+"input_layernorm.weight", c.HiddenSize),
			postNorm:  l.vec(lp+"post_attention_layernorm.weight", c.HiddenSize),
			q:         l.linear(lp+"self_attn.q_proj.weight", qw, c.HiddenSize),
			k:         l.linear(lp+"self_attn.k_proj.weight", kvw, c.HiddenSize),
			v:         l.linear(lp+"self_attn.v_proj.weight", kvw, c.HiddenSize),
			o:         l.linear(lp+"self_attn.o_proj.weight", c.HiddenSize, qw),
			attnScale: l.vec(lp+"self_attn_layer_scale.scale", c.HiddenSize),
			gate:      l.linear(lp+"mlp.gate_proj.weight", c.IntermediateSize, c.HiddenSize),
			up:        l.linear(lp+"mlp.up_proj.weight", c.IntermediateSize, c.HiddenSize),
			down:      l.linear(lp+"mlp.down_proj.weight", c.HiddenSize, c.IntermediateSize),
			mlpScale:  l.vec(lp+"mlp_layer_scale.scale", c.HiddenSize),
		}
	}
	d.norm = l.vec(p+"norm.weight", c.HiddenSize)
	d.outProj = l.linear(p+"output_proj.weight", c.LatentDim, c.HiddenSize)
	d.outProjB = l.vec(p+"output_proj.bias", c.LatentDim)
}

func (d *Decoder) loadUpsampling(l *loader) {
	c := d.cfg.LatentDim
	for j, f := range d.cfg.UpsamplingRatios {
		p := fmt.Sprintf("decoder.upsample.%d.", j)
		u := upsample{tc: l.transConv(p+"0.conv", c, c, f, f)}
		u.cn = convNeXt{
			dw:    l.get(p+"1.dwconv.conv.weight", c, 1, 7),
			dwb:   l.vec(p+"1.dwconv.conv.bias", c),
			lnw:   l.vec(p+"1.norm.weight", c),
			lnb:   l.vec(p+"1.norm.bias", c),
			pw1:   l.linear(p+"1.pwconv1.weight", 4*c, c),
			pw1b:  l.vec(p+"1.pwconv1.bias", 4*c),
			pw2:   l.linear(p+"1.pwconv2.weight", c, 4*c),
			pw2b:  l.vec(p+"1.pwconv2.bias", c),
			gamma: l.vec(p+"1.gamma", c),
		}
		l.bytes += int64(4 * len(u.cn.dw))
		d.ups = append(d.ups, u)
	}
}

func (d *Decoder) loadWaveform(l *loader) {
	c := &d.cfg
	d.conv0 = l.conv("decoder.decoder.0.conv", c.LatentDim, c.DecoderDim, 7, 1)
	cin := c.DecoderDim
	for i, r := range c.UpsampleRates {
		p := fmt.Sprintf("decoder.decoder.%d.block.", i+1)
		cout := cin / 2
		b := block{act: l.snake(p+"0", cin), up: l.transConv(p+"1.conv", cin, cout, 2*r, r)}
		for u, dil := range []int{1, 3, 9} {
			up := fmt.Sprintf("%s%d.", p, u+2)
			b.units[u] = resUnit{
				act1:  l.snake(up+"act1", cout),
				conv1: l.conv(up+"conv1.conv", cout, cout, 7, dil),
				act2:  l.snake(up+"act2", cout),
				conv2: l.conv(up+"conv2.conv", cout, cout, 1, 1),
			}
		}
		d.blocks = append(d.blocks, b)
		cin = cout
	}
	n := len(c.UpsampleRates)
	d.finalAct = l.snake(fmt.Sprintf("decoder.decoder.%d", n+1), cin)
	d.final = l.conv(fmt.Sprintf("decoder.decoder.%d.conv", n+2), cin, 1, 7, 1)
}

// packConvs packs the weights of every convolution and of the
// transformer's linears for kernels.Conv, the SIMD tiers' im2col-free GEMM, and
// drops the matrices' data (their shapes stay for FLOPsPerFrame). The
// final 1-channel conv is a dot product per output instead (a 16-wide
// block would be 15/16 padding).
func (d *Decoder) packConvs(l *loader) error {
	var err error
	pack := func(m *tensor.Matrix, taps int, bias []float32) *kernels.ConvWeights {
		if err != nil {
			return nil
		}
		var p *kernels.ConvWeights
		p, err = kernels.PackConv(m, taps, bias)
		if err == nil {
			l.bytes += p.Bytes() - int64(len(m.Data))
			m.Data = nil
		}
		return p
	}
	packConv := func(c *conv) { c.p = pack(c.w, c.k, c.b) }
	// A transposed conv with k = m*s is an m-tap conv over its input rows
	// giving s output rows per input row: row (j, o) tap q holds
	// W[i][o][j+(m-1-q)*s] (tap m-1 reads the current row).
	packTrans := func(t *transConv) *kernels.ConvWeights {
		if err != nil || t.k%t.s != 0 {
			if err == nil {
				err = fmt.Errorf("codec: transposed conv k=%d s=%d: k not a multiple of s", t.k, t.s)
			}
			return nil
		}
		m, so := t.k/t.s, t.s*t.out
		src := t.w.Data // [k*out][in], row j*out+o = W[·][o][j]
		bias := make([]float32, so)
		w := l.matrix(t.w.Name, so, m*t.in, func(row, col int) float32 {
			q, i := col/t.in, col%t.in
			r := (row/t.out+(m-1-q)*t.s)*t.out + row%t.out
			return math.Float32frombits(binary.LittleEndian.Uint32(src[4*(r*t.in+i):]))
		})
		for j := range so {
			bias[j] = t.b[j%t.out]
		}
		p := pack(w, m, bias) // w's bytes were counted, then replaced by p's
		l.bytes -= int64(len(t.w.Data))
		t.w.Data = nil
		return p
	}
	packConv(&d.preConv)
	packConv(&d.conv0)
	if f := &d.final; f.out == 1 && f.dil == 1 {
		f.row = make([]float32, f.k*f.in)
		for i := range f.row {
			f.row[i] = math.Float32frombits(binary.LittleEndian.Uint32(f.w.Data[4*i:]))
		}
	}
	for j := range d.ups {
		u := &d.ups[j]
		u.tc.p = packTrans(&u.tc)
		u.cn.pw1p = pack(u.cn.pw1, 1, u.cn.pw1b)
		u.cn.pw2p = pack(u.cn.pw2, 1, u.cn.pw2b)
	}
	d.linears = make(map[*tensor.Matrix]*kernels.ConvWeights)
	for _, L := range d.layers {
		for _, m := range []*tensor.Matrix{L.q, L.k, L.v, L.o, L.gate, L.up, L.down} {
			d.linears[m] = pack(m, 1, nil)
		}
	}
	d.linears[d.inProj] = pack(d.inProj, 1, nil)
	d.linears[d.outProj] = pack(d.outProj, 1, nil)
	for b := range d.blocks {
		bl := &d.blocks[b]
		bl.up.p = packTrans(&bl.up)
		for i := range bl.units {
			packConv(&bl.units[i].conv1)
			packConv(&bl.units[i].conv2)
		}
	}
	return err
}

// matMul is kernels.MatMul for the transformer's matrices, through
// their packed copy when there is one.
func (d *Decoder) matMul(dst []float32, m *tensor.Matrix, x []float32, n int) {
	if p := d.linears[m]; p != nil {
		kernels.Conv(dst[:n*m.Rows], p, x[:n*m.Cols], n, 1)
		return
	}
	kernels.MatMul(dst, m, x, n)
}
