package llama

import "github.com/siskin-ml/siskin/model"

// Arch describes Llama to the rest of siskin.
var Arch = model.Arch{
	Name:           "llama",
	Config:         Config,
	Load:           func(s *model.Source) (model.Model, error) { return Load(s) },
	Tensors:        tensors,
	GGUFPermutesQK: true,
	ToolParser:     "llama3_json",
	PreTokenizer:   "llama-bpe",
	Shapes: map[string]model.Shape{
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

// tensors lists the weights of a model of shape c (see model.Arch).
func tensors(c *model.Config) (global, layer []model.Tensor) {
	global = model.HeadTensors(c, nEmbed, nOutNorm, nOutput)
	qd, kvd := c.QDim(), c.KVDim()
	layer = []model.Tensor{
		{Names: nAttnNorm, Rows: c.Hidden},
		{Names: nQ, Rows: qd, Cols: c.Hidden},
		{Names: nK, Rows: kvd, Cols: c.Hidden},
		{Names: nV, Rows: kvd, Cols: c.Hidden},
	}
	return global, append(layer, model.GatedFFNTensors(c, nAttnOut, nFFNNorm, nFFNGate, nFFNUp, nFFNDown)...)
}
