package synth

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/siskin-ml/siskin/tensor"
)

// dist says how a tensor's values are drawn: offset + std*N(0,1), or
// lo + (hi-lo)*U(0,1) when uniform.
type dist struct {
	std, offset float64
	uniform     bool
	lo, hi      float64
}

// spec is one tensor to write.
type spec struct {
	name  string
	shape []int
	init  dist
}

func (s *spec) elements() int {
	n := 1
	for _, d := range s.shape {
		n *= d
	}
	return n
}

// fan returns N(0, 1/fanIn), the scale of every projection.
func fan(fanIn int) dist { return dist{std: 1 / math.Sqrt(float64(fanIn))} }

var (
	normInit = dist{std: 0.1, offset: 1}
	biasInit = dist{std: 0.05}
)

// talkerSpecs lists the talker and code-predictor tensors of
// model.safetensors in the official names (../shared/docs/qwen3_tts_talker.md §3).
func talkerSpecs(s Shape) []spec {
	const codecVocab, codeVocab, groups = 3072, 2048, 16
	H, C := s.Talker.Hidden, s.Predictor.Hidden
	out := []spec{
		{"talker.model.codec_embedding.weight", []int{codecVocab, H}, dist{std: 1}},
		{"talker.model.text_embedding.weight", []int{s.TextVocab, s.TextHidden}, dist{std: 1}},
	}
	out = append(out, layerSpecs("talker.model.", s.Talker)...)
	out = append(out,
		spec{"talker.model.norm.weight", []int{H}, normInit},
		spec{"talker.text_projection.linear_fc1.weight", []int{s.TextHidden, s.TextHidden}, fan(s.TextHidden)},
		spec{"talker.text_projection.linear_fc1.bias", []int{s.TextHidden}, biasInit},
		spec{"talker.text_projection.linear_fc2.weight", []int{H, s.TextHidden}, fan(s.TextHidden)},
		spec{"talker.text_projection.linear_fc2.bias", []int{H}, biasInit},
		spec{"talker.codec_head.weight", []int{codecVocab, H}, dist{std: 3 / math.Sqrt(float64(H))}},
	)
	out = append(out, layerSpecs("talker.code_predictor.model.", s.Predictor)...)
	out = append(out, spec{"talker.code_predictor.model.norm.weight", []int{C}, normInit})
	for g := range groups - 1 {
		out = append(out, spec{fmt.Sprintf("talker.code_predictor.model.codec_embedding.%d.weight", g), []int{codeVocab, H}, dist{std: 1}})
	}
	for g := range groups - 1 {
		out = append(out, spec{fmt.Sprintf("talker.code_predictor.lm_head.%d.weight", g), []int{codeVocab, C}, dist{std: 3 / math.Sqrt(float64(C))}})
	}
	if C != H {
		out = append(out,
			spec{"talker.code_predictor.small_to_mtp_projection.weight", []int{C, H}, fan(H)},
			spec{"talker.code_predictor.small_to_mtp_projection.bias", []int{C}, biasInit})
	}
	return out
}

// layerSpecs lists one Qwen3 decoder stack's tensors under prefix.
func layerSpecs(prefix string, m lm) []spec {
	var out []spec
	q, kv := m.Heads*m.HeadDim, m.KVHeads*m.HeadDim
	for i := range m.Layers {
		p := fmt.Sprintf("%slayers.%d.", prefix, i)
		out = append(out,
			spec{p + "input_layernorm.weight", []int{m.Hidden}, normInit},
			spec{p + "self_attn.q_proj.weight", []int{q, m.Hidden}, fan(m.Hidden)},
			spec{p + "self_attn.k_proj.weight", []int{kv, m.Hidden}, fan(m.Hidden)},
			spec{p + "self_attn.v_proj.weight", []int{kv, m.Hidden}, fan(m.Hidden)},
			spec{p + "self_attn.o_proj.weight", []int{m.Hidden, q}, fan(q)},
			spec{p + "self_attn.q_norm.weight", []int{m.HeadDim}, normInit},
			spec{p + "self_attn.k_norm.weight", []int{m.HeadDim}, normInit},
			spec{p + "post_attention_layernorm.weight", []int{m.Hidden}, normInit},
			spec{p + "mlp.gate_proj.weight", []int{m.FFN, m.Hidden}, fan(m.Hidden)},
			spec{p + "mlp.up_proj.weight", []int{m.FFN, m.Hidden}, fan(m.Hidden)},
			spec{p + "mlp.down_proj.weight", []int{m.Hidden, m.FFN}, fan(m.FFN)},
		)
	}
	return out
}

// codecSpecs lists the speech tokenizer's decoder.* tensors
// (../shared/docs/qwen3_tts_codec.md §2), scaled so that random weights
// give a bounded waveform: residual branches and the final conv are
// damped, LayerScale and ConvNeXt gamma start near 0.25.
func codecSpecs(c codecShape) []spec {
	dim, cd, L := c.CodebookDim/2, c.CodebookDim, c.Latent
	var out []spec
	add := func(name string, in dist, shape ...int) { out = append(out, spec{name, shape, in}) }
	usage := dist{uniform: true, lo: 0.5, hi: 2.5}
	scale := dist{uniform: true, lo: 0.05, hi: 0.45}
	snake := dist{std: 0.5}
	for _, half := range []string{"rvq_first", "rvq_rest"} {
		p := "decoder.quantizer." + half + "."
		add(p+"input_proj.weight", fan(cd), dim, cd, 1)
		add(p+"output_proj.weight", fan(dim), cd, dim, 1)
		books := 1
		if half == "rvq_rest" {
			books = 15
		}
		for q := range books {
			b := fmt.Sprintf("%svq.layers.%d._codebook.", p, q)
			add(b+"cluster_usage", usage, c.CodebookSize)
			add(b+"embedding_sum", dist{std: 1.5}, c.CodebookSize, dim)
		}
	}
	add("decoder.pre_conv.conv.weight", fan(3*cd), L, cd, 3)
	add("decoder.pre_conv.conv.bias", biasInit, L)
	t := "decoder.pre_transformer."
	add(t+"input_proj.weight", fan(L), c.Hidden, L)
	add(t+"input_proj.bias", biasInit, c.Hidden)
	q := c.Heads * c.HeadDim
	for i := range c.Layers {
		p := fmt.Sprintf("%slayers.%d.", t, i)
		add(p+"input_layernorm.weight", normInit, c.Hidden)
		add(p+"self_attn.q_proj.weight", fan(c.Hidden), q, c.Hidden)
		add(p+"self_attn.k_proj.weight", fan(c.Hidden), q, c.Hidden)
		add(p+"self_attn.v_proj.weight", fan(c.Hidden), q, c.Hidden)
		add(p+"self_attn.o_proj.weight", fan(q), c.Hidden, q)
		add(p+"self_attn_layer_scale.scale", scale, c.Hidden)
		add(p+"post_attention_layernorm.weight", normInit, c.Hidden)
		add(p+"mlp.gate_proj.weight", fan(c.Hidden), c.FFN, c.Hidden)
		add(p+"mlp.up_proj.weight", fan(c.Hidden), c.FFN, c.Hidden)
		add(p+"mlp.down_proj.weight", fan(c.FFN), c.Hidden, c.FFN)
		add(p+"mlp_layer_scale.scale", scale, c.Hidden)
	}
	add(t+"norm.weight", normInit, c.Hidden)
	add(t+"output_proj.weight", fan(c.Hidden), L, c.Hidden)
	add(t+"output_proj.bias", biasInit, L)
	for j := range 2 {
		p := fmt.Sprintf("decoder.upsample.%d.", j)
		add(p+"0.conv.weight", fan(L), L, L, 2)
		add(p+"0.conv.bias", biasInit, L)
		add(p+"1.dwconv.conv.weight", fan(7), L, 1, 7)
		add(p+"1.dwconv.conv.bias", biasInit, L)
		add(p+"1.norm.weight", normInit, L)
		add(p+"1.norm.bias", dist{std: 0.1}, L)
		add(p+"1.pwconv1.weight", fan(L), 4*L, L)
		add(p+"1.pwconv1.bias", biasInit, 4*L)
		add(p+"1.pwconv2.weight", fan(4*L), L, 4*L)
		add(p+"1.pwconv2.bias", biasInit, L)
		add(p+"1.gamma", scale, L)
	}
	add("decoder.decoder.0.conv.weight", fan(7*L), c.DecoderDim, L, 7)
	add("decoder.decoder.0.conv.bias", biasInit, c.DecoderDim)
	cin := c.DecoderDim
	for b, r := range []int{8, 5, 4, 3} {
		p := fmt.Sprintf("decoder.decoder.%d.block.", b+1)
		cout := cin / 2
		add(p+"0.alpha", snake, cin)
		add(p+"0.beta", snake, cin)
		add(p+"1.conv.weight", fan(2*cin), cin, cout, 2*r)
		add(p+"1.conv.bias", biasInit, cout)
		for u := 2; u <= 4; u++ {
			up := fmt.Sprintf("%s%d.", p, u)
			add(up+"act1.alpha", snake, cout)
			add(up+"act1.beta", snake, cout)
			add(up+"conv1.conv.weight", fan(7*cout), cout, cout, 7)
			add(up+"conv1.conv.bias", biasInit, cout)
			add(up+"act2.alpha", snake, cout)
			add(up+"act2.beta", snake, cout)
			add(up+"conv2.conv.weight", dist{std: 0.3 / math.Sqrt(float64(cout))}, cout, cout, 1)
			add(up+"conv2.conv.bias", biasInit, cout)
		}
		cin = cout
	}
	add("decoder.decoder.5.alpha", snake, cin)
	add("decoder.decoder.5.beta", snake, cin)
	add("decoder.decoder.6.conv.weight", dist{std: 0.1 / math.Sqrt(float64(7*cin))}, 1, cin, 7)
	add("decoder.decoder.6.conv.bias", dist{std: 0.01}, 1)
	return out
}

// values returns the generator of a tensor's values: its own PCG stream
// keyed by the seed and the tensor's name, so each tensor is independent
// of the others and of their order.
func values(seed uint64, sp *spec) func() float32 {
	h := fnv.New64a()
	h.Write([]byte(sp.name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	in := sp.init
	if in.uniform {
		return func() float32 { return float32(in.lo + (in.hi-in.lo)*rng.Float64()) }
	}
	return func() float32 { return float32(in.offset + in.std*rng.NormFloat64()) }
}

// writeSafetensors writes specs to path as dtype (BF16 or F32) tensors in
// the given order, streaming: no tensor is held whole in memory.
func writeSafetensors(path string, specs []spec, dtype tensor.Type, seed uint64, meta map[string]string, progress func(int64)) error {
	width, name := 4, "F32"
	if dtype == tensor.BF16 {
		width, name = 2, "BF16"
	}
	var hb strings.Builder
	metaJSON, _ := json.Marshal(meta)
	hb.WriteString(`{"__metadata__":`)
	hb.Write(metaJSON)
	off := 0
	for i := range specs {
		sp := &specs[i]
		shape, _ := json.Marshal(sp.shape)
		n := sp.elements() * width
		fmt.Fprintf(&hb, `,%s:{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}`, strconv.Quote(sp.name), name, shape, off, off+n)
		off += n
	}
	hb.WriteString("}")
	header := hb.String()
	for len(header)%8 != 0 {
		header += " "
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(header)))
	w.Write(lenBuf[:])
	w.WriteString(header)
	buf := make([]byte, 0, 1<<16)
	for i := range specs {
		sp := &specs[i]
		next := values(seed, sp)
		for left := sp.elements(); left > 0; {
			n := min(left, cap(buf)/4)
			buf = buf[:0]
			for range n {
				v := next()
				if dtype == tensor.BF16 {
					buf = binary.LittleEndian.AppendUint16(buf, tensor.Float32ToBF16(v))
				} else {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
				}
			}
			if _, err := w.Write(buf); err != nil {
				f.Close()
				return fmt.Errorf("%s: %w", path, err)
			}
			left -= n
			if progress != nil {
				progress(int64(n * width))
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
