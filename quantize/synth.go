package quantize

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/tensor"
)

// Shape is a decoder's size, enough to lay out every tensor and the
// metadata the loaders read.
type Shape struct {
	Vocab, Hidden, Layers, Heads, KVHeads, HeadDim, FFN int
	Context                                             int
	Eps                                                 float32
	Theta                                               float64
	Tied                                                bool
	// Spark only: sliding window, the full layers' rotary fraction and the
	// sliding layers' theta (sliding layers rotate the whole head).
	Window   int
	RotFull  float64
	ThetaSWA float64
	// Note says where the numbers come from.
	Note string
}

// Shapes are the model sizes synth knows, by architecture and name. The
// tiny ones are those of the shared test models (llm/tiny); the others
// are the published configurations.
var Shapes = map[string]map[string]Shape{
	"spark2_5": {
		"tiny": {Vocab: 512, Hidden: 256, Layers: 8, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768, Context: 4096, Eps: 1e-6,
			Theta: 5e6, ThetaSWA: 1e4, RotFull: 0.25, Window: 16, Tied: true, Note: "the shared spark2_5-tiny test model"},
		"1.7b": {Vocab: 131072, Hidden: 2048, Layers: 28, Heads: 8, KVHeads: 2, HeadDim: 256, FFN: 6656, Context: 1048576, Eps: 1e-6,
			Theta: 5e6, ThetaSWA: 1e4, RotFull: 0.25, Window: 512, Tied: true, Note: "Spark-X2.5-1.7B (docs/spark2_5.md)"},
		"4b": {Vocab: 131072, Hidden: 2560, Layers: 36, Heads: 16, KVHeads: 4, HeadDim: 256, FFN: 10240, Context: 1048576, Eps: 1e-6,
			Theta: 5e6, ThetaSWA: 1e4, RotFull: 0.25, Window: 512, Tied: true, Note: "Spark-X2.5-4B (docs/spark2_5.md)"},
	},
	"qwen3": {
		"tiny": {Vocab: 512, Hidden: 256, Layers: 8, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768, Context: 4096, Eps: 1e-6,
			Theta: 1e6, Tied: true, Note: "the shared qwen3-tiny test model"},
		"0.6b": {Vocab: 151936, Hidden: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 3072, Context: 40960, Eps: 1e-6,
			Theta: 1e6, Tied: true, Note: "Qwen3-0.6B config.json"},
		"1.7b": {Vocab: 151936, Hidden: 2048, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 6144, Context: 40960, Eps: 1e-6,
			Theta: 1e6, Tied: true, Note: "Qwen3-1.7B config.json"},
		"4b": {Vocab: 151936, Hidden: 2560, Layers: 36, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 9728, Context: 40960, Eps: 1e-6,
			Theta: 1e6, Tied: true, Note: "Qwen3-4B config.json"},
	},
	"llama": {
		"tiny": {Vocab: 512, Hidden: 256, Layers: 8, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768, Context: 4096, Eps: 1e-5,
			Theta: 1e4, Tied: false, Note: "the shared llama-tiny test model (untied head)"},
		// Llama has no 1.7B or 4B; the nearest published sizes stand in.
		// Their Llama 3 RoPE scaling is left out (random weights do not
		// care, and siskin does not run rope_freqs yet).
		"1.7b": {Vocab: 128256, Hidden: 2048, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, FFN: 8192, Context: 131072, Eps: 1e-5,
			Theta: 500000, Tied: true, Note: "Llama-3.2-1B config.json (1.24B parameters)"},
		"4b": {Vocab: 128256, Hidden: 3072, Layers: 28, Heads: 24, KVHeads: 8, HeadDim: 128, FFN: 8192, Context: 131072, Eps: 1e-5,
			Theta: 500000, Tied: true, Note: "Llama-3.2-3B config.json (3.21B parameters)"},
	},
}

// LookupShape finds a shape, with an error listing what exists.
func LookupShape(arch, shape string) (Shape, error) {
	byName, ok := Shapes[arch]
	if !ok {
		var archs []string
		for a := range Shapes {
			archs = append(archs, a)
		}
		sort.Strings(archs)
		return Shape{}, fmt.Errorf("unknown architecture %q (want one of %s)", arch, strings.Join(archs, "|"))
	}
	s, ok := byName[strings.ToLower(shape)]
	if !ok {
		var names []string
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		return Shape{}, fmt.Errorf("%s has no shape %q (available: %s)", arch, shape, strings.Join(names, "|"))
	}
	return s, nil
}

// SynthOptions controls Synth.
type SynthOptions struct {
	Arch, Shape string
	Type        FileType
	Seed        uint64
	Threads     int
	Progress    func(done, total int64)
}

// sliding is Spark's layer pattern: three sliding layers, then a full one.
func sliding(i int) bool { return i%4 != 3 }

// Synth writes a random-weight model with a real shape straight in the
// target type, tensor by tensor. Weights are N(0,1)/sqrt(fan_in) like the
// shared tiny models (embedding N(0, 0.2^2), norm weights 1 + 0.1 N(0,1)).
// Each row has its own generator seeded from (seed, tensor name, row), so
// the file is the same whatever the thread count.
func Synth(out string, opt SynthOptions) (*Report, error) {
	kvs, outs, rep, err := planSynth(opt)
	if err != nil {
		return nil, err
	}
	if err := writeGGUF(out, kvs, outs, writeOptions{threads: opt.Threads, progress: opt.Progress}); err != nil {
		return nil, err
	}
	return rep, nil
}

// planSynth lays out a synthetic model's metadata and tensors.
func planSynth(opt SynthOptions) ([]gguf.KV, []outTensor, *Report, error) {
	s, err := LookupShape(opt.Arch, opt.Shape)
	if err != nil {
		return nil, nil, nil, err
	}
	if opt.Type.Name == "" {
		return nil, nil, nil, fmt.Errorf("synth: no output type given")
	}
	arch := opt.Arch
	h, qd, kvd := uint64(s.Hidden), uint64(s.Heads*s.HeadDim), uint64(s.KVHeads*s.HeadDim)
	f, v := uint64(s.FFN), uint64(s.Vocab)
	// Shapes in GGML order (row length first), as llama.cpp lays them out.
	shapes := map[string][]uint64{
		"token_embd.weight":  {h, v},
		"output_norm.weight": {h},
	}
	if !s.Tied {
		shapes["output.weight"] = []uint64{h, v}
	}
	for i := 0; i < s.Layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		shapes[p+"attn_norm.weight"] = []uint64{h}
		shapes[p+"attn_output.weight"] = []uint64{qd, h}
		shapes[p+"ffn_norm.weight"] = []uint64{h}
		shapes[p+"ffn_gate.weight"] = []uint64{h, f}
		shapes[p+"ffn_up.weight"] = []uint64{h, f}
		shapes[p+"ffn_down.weight"] = []uint64{f, h}
		switch arch {
		case "spark2_5":
			shapes[p+"attn_qkv.weight"] = []uint64{h, qd + 2*kvd}
			shapes[p+"attn_gate.weight"] = []uint64{h, uint64(s.Heads)}
		default:
			shapes[p+"attn_q.weight"] = []uint64{h, qd}
			shapes[p+"attn_k.weight"] = []uint64{h, kvd}
			shapes[p+"attn_v.weight"] = []uint64{h, kvd}
			if arch == "qwen3" {
				shapes[p+"attn_q_norm.weight"] = []uint64{uint64(s.HeadDim)}
				shapes[p+"attn_k_norm.weight"] = []uint64{uint64(s.HeadDim)}
			}
		}
	}
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sortTensorNames(names)
	mix := newMixer(opt.Type, s.Layers, names)

	rep := &Report{}
	outs := make([]outTensor, 0, len(names))
	for _, name := range names {
		dims := shapes[name]
		typ := tensor.F32
		if quantizable(name, dims) {
			typ = mix.typeFor(name, dims)
		}
		ot := outTensor{name: name, typ: typ, dims: dims, srcType: tensor.F32, fill: randomRows(opt.Seed, name, dims)}
		outs = append(outs, ot)
		rep.OutBytes += ot.bytes()
		rep.Tensors = append(rep.Tensors, TensorReport{Name: name, Dims: dims, From: tensor.F32, To: typ, Bytes: ot.bytes()})
	}
	return synthMetadata(arch, opt, s), outs, rep, nil
}

// randomRows returns the fill function of one synthetic tensor.
func randomRows(seed uint64, name string, dims []uint64) func([]float32, int, int) error {
	hs := fnv.New64a()
	hs.Write([]byte(name))
	key := splitmix(seed ^ hs.Sum64())
	rowLen := int(dims[0])
	var scale, offset float64
	switch {
	case len(dims) == 1: // norm weights
		scale, offset = 0.1, 1
	case name == "token_embd.weight":
		scale = 0.2
	default:
		scale = 1 / math.Sqrt(float64(rowLen))
	}
	return func(dst []float32, r0, n int) error {
		pcg := rand.NewPCG(0, 0)
		rng := rand.New(pcg)
		for r := 0; r < n; r++ {
			pcg.Seed(key, uint64(r0+r))
			row := dst[r*rowLen : (r+1)*rowLen]
			for i := range row {
				row[i] = float32(offset + scale*rng.NormFloat64())
			}
		}
		return nil
	}
}

// splitmix is SplitMix64's finalizer: it spreads a seed's bits.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// synthMetadata writes the keys the loaders read, in llama.cpp's order,
// and a synthetic tokenizer.
func synthMetadata(arch string, opt SynthOptions, s Shape) []gguf.KV {
	var kvs []gguf.KV
	add := func(k string, v any) {
		t, _ := valueType(v)
		kvs = append(kvs, gguf.KV{Key: k, Type: t, Value: v})
	}
	add("general.architecture", arch)
	add("general.name", fmt.Sprintf("synth-%s-%s", arch, strings.ToLower(opt.Shape)))
	add("general.description", fmt.Sprintf("random weights made by siskin synth (seed %d); shape of %s", opt.Seed, s.Note))
	a := arch + "."
	add(a+"context_length", uint32(s.Context))
	add(a+"embedding_length", uint32(s.Hidden))
	add(a+"feed_forward_length", uint32(s.FFN))
	add(a+"block_count", uint32(s.Layers))
	add(a+"attention.head_count", uint32(s.Heads))
	add(a+"attention.head_count_kv", uint32(s.KVHeads))
	add(a+"attention.key_length", uint32(s.HeadDim))
	add(a+"attention.value_length", uint32(s.HeadDim))
	add(a+"attention.layer_norm_rms_epsilon", s.Eps)
	add(a+"vocab_size", uint32(s.Vocab))
	add(a+"rope.freq_base", float32(s.Theta))
	if arch == "spark2_5" {
		pattern := make([]bool, s.Layers)
		for i := range pattern {
			pattern[i] = sliding(i)
		}
		add(a+"rope.freq_base_swa", float32(s.ThetaSWA))
		add(a+"rope.dimension_count", uint32(s.RotFull*float64(s.HeadDim)))
		add(a+"rope.dimension_count_swa", uint32(s.HeadDim))
		add(a+"attention.sliding_window", uint32(s.Window))
		add(a+"attention.sliding_window_pattern", pattern)
	} else {
		add(a+"rope.dimension_count", uint32(s.HeadDim))
	}
	tokens, types, merges := synthVocab(s.Vocab)
	add("tokenizer.ggml.model", "gpt2")
	add("tokenizer.ggml.pre", "default")
	add("tokenizer.ggml.tokens", tokens)
	add("tokenizer.ggml.token_type", types)
	add("tokenizer.ggml.merges", merges)
	add("tokenizer.ggml.bos_token_id", uint32(0))
	add("tokenizer.ggml.eos_token_id", uint32(1))
	add("tokenizer.ggml.padding_token_id", uint32(2))
	add("tokenizer.ggml.add_bos_token", false)
	add("tokenizer.ggml.add_eos_token", false)
	add("general.quantization_version", uint32(qntVersion))
	add("general.file_type", opt.Type.ID)
	return kvs
}

// byteRunes is GPT-2's byte-to-character map of byte-level BPE:
// printable Latin-1 bytes stand for themselves, the others for U+0100 on.
func byteRunes() [256]rune {
	var m [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// synthVocab builds a byte-level BPE vocabulary of exactly n tokens (n >=
// 259): <|bos|>, <|eos|>, <|pad|> (ids 0-2, as in the tiny models), the 256
// byte tokens, then merged tokens made breadth-first from a space and
// letters ("Ġt", "Ġth", ...), each with the merge "prefix letter" that
// forms it, so every merge's parts exist before it.
func synthVocab(n int) (tokens []string, types []int32, merges []string) {
	br := byteRunes()
	tokens = []string{"<|bos|>", "<|eos|>", "<|pad|>"}
	types = []int32{tokControl, tokControl, tokControl}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, string(br[b]))
		types = append(types, tokNormal)
	}
	if n < len(tokens) {
		return tokens[:n], types[:n], nil
	}
	letters := "etaoinshrdlcumwfgypbvkjxqz"
	starts := []string{string(br[' '])}
	for _, c := range letters {
		starts = append(starts, string(c))
	}
	queue := append([]string(nil), starts...)
	for q := 0; len(tokens) < n; q++ {
		prefix := queue[q]
		for _, c := range letters {
			if len(tokens) == n {
				break
			}
			tok := prefix + string(c)
			tokens = append(tokens, tok)
			types = append(types, tokNormal)
			merges = append(merges, prefix+" "+string(c))
			queue = append(queue, tok)
		}
	}
	return tokens, types, merges
}
