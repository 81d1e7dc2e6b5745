// Package load opens a model file or folder, picks the architecture and
// loads the matching tokenizer: the one place that knows every
// architecture siskin runs.
package load

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/llama"
	"github.com/siskin-ml/siskin/model/qwen3"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/spark2_5"
	"github.com/siskin-ml/siskin/tokenizer"
	"github.com/siskin-ml/siskin/weightpath"
)

// Archs lists every architecture siskin loads, text and speech. Adding one
// is a folder under model/ declaring its model.Arch, and a line here
// (model/README.md).
var Archs = model.Archs{
	&llama.Arch,
	&qwen3.Arch,
	&qwen3tts.Arch,
	&spark2_5.Arch,
}

// Names lists the supported architectures.
func Names() []string { return Archs.Names() }

// FolderArch is the architecture a Hugging Face folder's config.json
// names (model_type), read without opening the weights: nil if path is
// not such a folder or siskin has no architecture of that name.
func FolderArch(path string) *model.Arch {
	raw, err := os.ReadFile(filepath.Join(path, "config.json"))
	if err != nil {
		return nil
	}
	var c struct {
		ModelType string `json:"model_type"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	a, _ := Archs.Lookup(c.ModelType)
	return a
}

// Generation holds sampling defaults from generation_config.json (HF).
type Generation struct {
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
	TopK        *int     `json:"top_k"`
}

// Loaded is a model ready to run.
type Loaded struct {
	Source     *model.Source
	Model      model.Model
	Tokenizer  *tokenizer.Tokenizer
	Generation Generation
	// Weights is the weight path's store (nil for Open), and WeightPathWhy
	// the reason for its path (Options.Why, or ForSource's adjustment).
	Weights       *weightpath.Store
	WeightPathWhy string
}

// Close releases the mapped weights.
func (l *Loaded) Close() error { return l.Source.Close() }

// Source opens path and checks that it holds a text model of a supported
// architecture.
func Source(path string) (*model.Source, error) {
	s, err := model.Open(path)
	if err != nil {
		return nil, err
	}
	if _, err := Archs.LookupKind(s.Arch(), model.Text); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Open loads the model and tokenizer at path (a .gguf file or a Hugging
// Face folder) with the file's own weight types, packed for the kernels
// at every start (no cache).
func Open(path string) (*Loaded, error) { return open(path, nil) }

// Options choose how OpenWith holds the weights.
type Options struct {
	// WeightPath is the layout of the linear weights (weightpath.GGUF,
	// W4A8, W4A16, W8A8, Q4KM; "" is GGUF), and Why the reason it was
	// chosen.
	WeightPath weightpath.Path
	Why        string
	// Auto marks WeightPath as an automatic choice, which
	// weightpath.ForSource adjusts for what the file holds.
	Auto bool
	// CacheDir is where converted and packed weights are cached ("" is
	// weightpath.DefaultCacheDir(), "off" disables the cache).
	CacheDir string
	// Log receives the weight cache's hit/miss/write lines.
	Log *slog.Logger
}

// OpenWith is Open with the weights converted to a weight path and
// cached on disk, so that the next start maps them.
func OpenWith(path string, opt Options) (*Loaded, error) { return open(path, &opt) }

func open(path string, opt *Options) (*Loaded, error) {
	s, err := Source(path)
	if err != nil {
		return nil, err
	}
	// The tokenizer (0.2 s for a 128k vocabulary) loads on another core
	// while the weights are checked and mapped.
	type tokResult struct {
		tok *tokenizer.Tokenizer
		gen Generation
		err error
	}
	tokc := make(chan tokResult, 1)
	go func() {
		var r tokResult
		if s.Format == model.GGUF {
			r.tok, r.err = tokenizer.FromGGUF(s.GGUF)
		} else if r.tok, r.err = tokenizer.FromHFDir(path); r.err == nil {
			r.gen, r.err = ReadGeneration(path)
		}
		tokc <- r
	}()
	fail := func(err error) (*Loaded, error) {
		<-tokc
		s.Close()
		return nil, err
	}
	l := &Loaded{Source: s}
	if opt != nil {
		wp, why := opt.WeightPath, opt.Why
		if opt.Auto {
			wp, why = weightpath.ForSource(s, wp, why)
		}
		l.WeightPathWhy = why
		ws, err := weightpath.Open(path, weightpath.Options{Path: wp, CacheDir: opt.CacheDir, Log: opt.Log})
		if err != nil {
			return fail(err)
		}
		l.Weights, s.Weights = ws, ws
	}
	arch, _ := Archs.LookupKind(s.Arch(), model.Text) // Source checked it
	if l.Model, err = arch.Load(s); err != nil {
		return fail(err)
	}
	if ws := l.Weights; ws != nil {
		// A cache that cannot be written costs the next start time, not
		// this one its weights; Finish logs why.
		ws.Finish()
	}
	r := <-tokc
	if r.err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: tokenizer: %w", path, r.err)
	}
	l.Tokenizer, l.Generation = r.tok, r.gen
	if v := l.Tokenizer.VocabSize(); v > l.Model.Config().Vocab {
		s.Close()
		return nil, fmt.Errorf("%s: tokenizer has %d tokens but the model only %d", path, v, l.Model.Config().Vocab)
	}
	return l, nil
}

// ReadGeneration reads the sampling defaults of a Hugging Face folder's
// generation_config.json (none for a GGUF file or a folder without one).
func ReadGeneration(path string) (Generation, error) {
	var g Generation
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return g, nil
	}
	p := filepath.Join(path, "generation_config.json")
	raw, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return g, nil
	}
	if err != nil {
		return g, err
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return g, fmt.Errorf("%s: %w", p, err)
	}
	return g, nil
}

// Config reads the hyper-parameters of a Source that Source opened.
func Config(s *model.Source) (*model.Config, error) {
	arch, err := Archs.LookupKind(s.Arch(), model.Text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path, err)
	}
	return arch.Config(s)
}
