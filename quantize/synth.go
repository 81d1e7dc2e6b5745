package quantize

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// SynthOptions controls Synth.
type SynthOptions struct {
	// Arch and Shape name the architecture and one of its shapes
	// (model.Arch.Shapes), found in Archs (model/load's list).
	Arch, Shape string
	Archs       model.Archs
	Type        FileType
	Seed        uint64
	Threads     int
	Progress    func(done, total int64)
}

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
	arch, c, s, err := LookupShape(opt.Archs, opt.Arch, opt.Shape)
	if err != nil {
		return nil, nil, nil, err
	}
	if opt.Type.Name == "" {
		return nil, nil, nil, fmt.Errorf("synth: no output type given")
	}
	// Shapes in GGML order (row length first), as llama.cpp lays them out.
	shapes := map[string][]uint64{}
	dims := func(t model.Tensor) []uint64 {
		if t.Cols == 0 {
			return []uint64{uint64(t.Rows)}
		}
		return []uint64{uint64(t.Cols), uint64(t.Rows)}
	}
	global, layer := arch.Tensors(c)
	for _, t := range global {
		shapes[t.GGUF] = dims(t)
	}
	for i := 0; i < c.Layers; i++ {
		for _, t := range layer {
			shapes[fmt.Sprintf(t.GGUF, i)] = dims(t)
		}
	}
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sortTensorNames(names)
	mix := newMixer(opt.Type, c.Layers, names)

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
	return synthMetadata(c, opt, s), outs, rep, nil
}

// LookupShape finds an architecture in archs and the Config of one of its
// shapes, with errors listing what exists.
func LookupShape(archs model.Archs, arch, shape string) (*model.Arch, *model.Config, model.Shape, error) {
	a, err := archs.Lookup(arch)
	if err != nil {
		return nil, nil, model.Shape{}, err
	}
	c, s, err := a.SynthConfig(shape)
	return a, c, s, err
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
func synthMetadata(c *model.Config, opt SynthOptions, s model.Shape) []gguf.KV {
	var kvs []gguf.KV
	add := func(k string, v any) {
		t, _ := valueType(v)
		kvs = append(kvs, gguf.KV{Key: k, Type: t, Value: v})
	}
	add("general.architecture", c.Arch)
	add("general.name", fmt.Sprintf("synth-%s-%s", c.Arch, strings.ToLower(opt.Shape)))
	add("general.description", fmt.Sprintf("random weights made by siskin synth (seed %d); shape of %s", opt.Seed, s.Note))
	kvs = append(kvs, configKVs(c)...)
	tokens, types, merges := synthVocab(c.Vocab)
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
