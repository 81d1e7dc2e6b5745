package quantize

import (
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/llama"
	"github.com/siskin-ml/siskin/model/qwen3"
	"github.com/siskin-ml/siskin/model/spark2_5"
	"github.com/siskin-ml/siskin/tokenizer"
)

// testArchs is model/load's list of architectures, which the tests here
// cannot import.
var testArchs = model.Archs{&llama.Arch, &qwen3.Arch, &spark2_5.Arch}

// loadedModel is what the tests here need of a loaded GGUF file. They
// cannot use model/load: it imports weightpath, which imports this
// package.
type loadedModel struct {
	Model     model.Model
	Tokenizer *tokenizer.Tokenizer
	src       *model.Source
}

func (l *loadedModel) Close() error { return l.src.Close() }

// openModel loads a GGUF file written here, with its tokenizer.
func openModel(path string) (*loadedModel, error) {
	src, err := model.Open(path)
	if err != nil {
		return nil, err
	}
	l := &loadedModel{src: src}
	arch, err := testArchs.Lookup(src.Arch())
	if err == nil {
		l.Model, err = arch.Load(src)
	}
	if err == nil && src.GGUF != nil {
		l.Tokenizer, err = tokenizer.FromGGUF(src.GGUF)
	}
	if err != nil {
		src.Close()
		return nil, err
	}
	return l, nil
}
