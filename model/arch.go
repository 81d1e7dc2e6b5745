package model

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Kind is what an architecture's models do.
type Kind int

const (
	// Text models are decoders over tokens: Config, Load and Tensors are
	// set, and run, info, quantize and serve's LLM routes take them.
	Text Kind = iota
	// Speech models turn text into audio with several networks read from
	// a Hugging Face folder. The speech pipeline that runs them loads them
	// itself (siskin serve, speak), so Config, Load and Tensors stay nil.
	Speech
)

func (k Kind) String() string {
	if k == Speech {
		return "speech"
	}
	return "text"
}

// Arch describes one architecture: everything siskin needs to know about
// it outside its forward pass. Each architecture declares its value in its
// own folder (model/<name>/arch.go) and model/load lists them; the loader,
// quantize, synth and serve read it from there. See model/README.md.
type Arch struct {
	// Name is the architecture as files spell it: GGUF
	// general.architecture and config.json model_type.
	Name string
	// Aliases are other spellings of Name in Hugging Face architectures
	// entries, lowercased and without "ForCausalLM" ("spark2.5").
	Aliases []string
	// Kind is what its models do (Text unless set).
	Kind Kind
	// Config reads the hyper-parameters (no weights); Load maps the
	// weights.
	Config func(*Source) (*Config, error)
	Load   func(*Source) (Model, error)
	// Tensors lists the weights a model of shape c holds, under their
	// names in each format: global ones, then those of every layer (%d in
	// the names). Converting a Hugging Face checkpoint to GGUF maps names
	// through it; synth writes these tensors.
	Tensors func(c *Config) (global, layer []Tensor)
	// GGUFPermutesQK says GGUF files hold each head's Q and K rows
	// interleaved for pairwise RoPE while Hugging Face checkpoints rotate
	// halves (llama.cpp's converter permutes them).
	GGUFPermutesQK bool
	// ToolParser and ReasoningParser are the chat/toolcall parsers the
	// family's chat templates need ("" for none).
	ToolParser, ReasoningParser string
	// PreTokenizer is llama.cpp's tokenizer.ggml.pre name for the
	// family's own vocabulary, written when a tokenizer.json's
	// pre-tokenizer is not one llama.cpp names otherwise.
	PreTokenizer string
	// Shapes are published sizes synth can write ("tiny" is the shared
	// test model's); ShapeConfig turns one into a Config (nil: every
	// layer alike, Shape.Config).
	Shapes      map[string]Shape
	ShapeConfig func(Shape) *Config
	// Folder, if set, is what synth writes instead of a GGUF file: a
	// random-weight Hugging Face folder (for models siskin reads only
	// from folders; Shapes is then empty).
	Folder *FolderSynth
}

// FolderSynth writes random-weight Hugging Face folders of an
// architecture.
type FolderSynth struct {
	// Shapes names the sizes it writes, smallest first.
	Shapes []string
	// Write writes a folder of a shape to dir, the same bytes for the same
	// seed, calling progress (if not nil) with the bytes written so far
	// and the total; it returns a line saying what it wrote.
	Write func(dir, shape string, seed uint64, progress func(done, total int64)) (string, error)
}

// Tensor is one weight: its names in each format and its shape, Rows x
// Cols (Cols 0 for a vector of Rows).
type Tensor struct {
	Names
	Rows, Cols int
}

// HeadTensors lists the token embedding, the final norm and, unless c
// ties it to the embedding, the output head.
func HeadTensors(c *Config, embed, outNorm, output Names) []Tensor {
	t := []Tensor{{Names: embed, Rows: c.Vocab, Cols: c.Hidden}, {Names: outNorm, Rows: c.Hidden}}
	if !c.Tied {
		t = append(t, Tensor{Names: output, Rows: c.Vocab, Cols: c.Hidden})
	}
	return t
}

// GatedFFNTensors lists a layer's attention output projection and its
// gated feed-forward block: the norm before it, gate, up and down.
func GatedFFNTensors(c *Config, attnOut, norm, gate, up, down Names) []Tensor {
	return []Tensor{
		{Names: attnOut, Rows: c.Hidden, Cols: c.QDim()},
		{Names: norm, Rows: c.Hidden},
		{Names: gate, Rows: c.FFN, Cols: c.Hidden},
		{Names: up, Rows: c.FFN, Cols: c.Hidden},
		{Names: down, Rows: c.Hidden, Cols: c.FFN},
	}
}

// Shape is a model size: enough to lay out every tensor and the metadata
// the loaders read.
type Shape struct {
	Vocab, Hidden, Layers, Heads, KVHeads, HeadDim, FFN int
	Context                                             int
	Eps                                                 float32
	Theta                                               float64
	Tied                                                bool
	// For architectures with sliding-window layers: the window, the full
	// layers' rotary fraction and the sliding layers' theta.
	Window   int
	RotFull  float64
	ThetaSWA float64
	// Note says where the numbers come from.
	Note string
}

// Config is the shape's hyper-parameters with every layer alike: full
// attention, the whole head rotated with Theta.
func (s Shape) Config(arch string) *Config {
	c := &Config{Arch: arch, Vocab: s.Vocab, Hidden: s.Hidden, Layers: s.Layers, Heads: s.Heads, KVHeads: s.KVHeads,
		HeadDim: s.HeadDim, FFN: s.FFN, Eps: s.Eps, ContextLength: s.Context, Tied: s.Tied}
	c.LayerSpecs = make([]LayerSpec, s.Layers)
	for i := range c.LayerSpecs {
		c.LayerSpecs[i] = LayerSpec{RopeDims: s.HeadDim, RopeTheta: s.Theta}
	}
	return c
}

// ShapeNames lists the shapes synth writes, smallest first.
func (a *Arch) ShapeNames() []string {
	if a.Folder != nil {
		return a.Folder.Shapes
	}
	names := slices.Collect(maps.Keys(a.Shapes))
	slices.SortFunc(names, func(x, y string) int {
		sx, sy := a.Shapes[x], a.Shapes[y]
		return cmp.Or(cmp.Compare(sx.Hidden, sy.Hidden), cmp.Compare(sx.Layers, sy.Layers), strings.Compare(x, y))
	})
	return names
}

// CheckShape reports whether synth writes a shape of that name, with an
// error listing the shapes there are.
func (a *Arch) CheckShape(shape string) error {
	if !slices.Contains(a.ShapeNames(), strings.ToLower(shape)) {
		return fmt.Errorf("%s has no shape %q (available: %s)", a.Name, shape, strings.Join(a.ShapeNames(), "|"))
	}
	return nil
}

// SynthConfig is the Config of one of the architecture's GGUF shapes,
// with an error listing the shapes there are.
func (a *Arch) SynthConfig(shape string) (*Config, Shape, error) {
	if a.Folder != nil {
		return nil, Shape{}, fmt.Errorf("%s is written as a Hugging Face folder, not a GGUF file", a.Name)
	}
	if err := a.CheckShape(shape); err != nil {
		return nil, Shape{}, err
	}
	s := a.Shapes[strings.ToLower(shape)]
	if a.ShapeConfig != nil {
		return a.ShapeConfig(s), s, nil
	}
	return s.Config(a.Name), s, nil
}

// Archs is a list of architectures (model/load holds siskin's).
type Archs []*Arch

// Lookup finds an architecture by name, with an error listing the
// supported ones.
func (l Archs) Lookup(name string) (*Arch, error) {
	for _, a := range l {
		if a.Name == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("architecture %q is not supported (supported: %s)", name, strings.Join(l.Names(), ", "))
}

// LookupKind is Lookup for an architecture of kind k: one of another
// kind is refused saying what it is, with the supported ones of kind k.
func (l Archs) LookupKind(name string, k Kind) (*Arch, error) {
	var ofKind Archs
	for _, a := range l {
		if a.Kind == k {
			ofKind = append(ofKind, a)
		}
	}
	supported := strings.Join(ofKind.Names(), ", ")
	a, err := l.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("architecture %q is not supported (supported %s models: %s)", name, k, supported)
	}
	if a.Kind != k {
		return nil, fmt.Errorf("architecture %q is a %s model, not a %s one (supported %s models: %s)", name, a.Kind, k, k, supported)
	}
	return a, nil
}

// Names lists the architectures' names, sorted.
func (l Archs) Names() []string {
	out := make([]string, len(l))
	for i, a := range l {
		out[i] = a.Name
	}
	sort.Strings(out)
	return out
}
