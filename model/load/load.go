// Package load opens a model file or folder, picks the architecture and
// loads the matching tokenizer: the one place that knows every
// architecture siskin runs.
package load

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/llama"
	"github.com/siskin-ml/siskin/model/qwen3"
	"github.com/siskin-ml/siskin/model/spark2_5"
	"github.com/siskin-ml/siskin/tokenizer"
)

// Architectures maps an architecture name (GGUF general.architecture or
// config.json model_type) to its loader.
var Architectures = map[string]func(*model.Source) (model.Model, error){
	"llama":    func(s *model.Source) (model.Model, error) { return llama.Load(s) },
	"qwen3":    func(s *model.Source) (model.Model, error) { return qwen3.Load(s) },
	"spark2_5": func(s *model.Source) (model.Model, error) { return spark2_5.Load(s) },
}

// Configs maps an architecture to its hyper-parameter reader (no weights).
var Configs = map[string]func(*model.Source) (*model.Config, error){
	"llama":    llama.Config,
	"qwen3":    qwen3.Config,
	"spark2_5": spark2_5.Config,
}

// Names lists the supported architectures.
func Names() []string {
	var out []string
	for k := range Architectures {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
}

// Close releases the mapped weights.
func (l *Loaded) Close() error { return l.Source.Close() }

// Source opens path and checks that its architecture is supported.
func Source(path string) (*model.Source, error) {
	s, err := model.Open(path)
	if err != nil {
		return nil, err
	}
	if _, ok := Architectures[s.Arch()]; !ok {
		s.Close()
		return nil, fmt.Errorf("%s: architecture %q is not supported (supported: %v)", path, s.Arch(), Names())
	}
	return s, nil
}

// Open loads the model and tokenizer at path (a .gguf file or a Hugging
// Face folder).
func Open(path string) (*Loaded, error) {
	s, err := Source(path)
	if err != nil {
		return nil, err
	}
	l := &Loaded{Source: s}
	if l.Model, err = Architectures[s.Arch()](s); err != nil {
		s.Close()
		return nil, err
	}
	if s.Format == model.GGUF {
		l.Tokenizer, err = tokenizer.FromGGUF(s.GGUF)
	} else {
		l.Tokenizer, err = tokenizer.FromHFDir(path)
		if err == nil {
			err = readGeneration(path, &l.Generation)
		}
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: tokenizer: %w", path, err)
	}
	if v := l.Tokenizer.VocabSize(); v > l.Model.Config().Vocab {
		s.Close()
		return nil, fmt.Errorf("%s: tokenizer has %d tokens but the model only %d", path, v, l.Model.Config().Vocab)
	}
	return l, nil
}

func readGeneration(dir string, g *Generation) error {
	p := filepath.Join(dir, "generation_config.json")
	raw, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, g); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}
