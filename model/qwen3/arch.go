package qwen3

import "github.com/siskin-ml/siskin/model"

// Arch describes Qwen3 to the rest of siskin.
var Arch = model.Arch{
	Name:            "qwen3",
	Config:          Config,
	Load:            func(s *model.Source) (model.Model, error) { return Load(s) },
	Tensors:         tensors,
	ToolParser:      "hermes",
	ReasoningParser: "qwen3",
	PreTokenizer:    "qwen2",
	Shapes: map[string]model.Shape{
		"tiny": {Vocab: 512, Hidden: 256, Layers: 8, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768, Context: 4096, Eps: 1e-6,
			Theta: 1e6, Tied: true, Note: "the shared qwen3-tiny test model"},
		"0.6b": {Vocab: 151936, Hidden: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 3072, Context: 40960, Eps: 1e-6,
			Theta: 1e6, Tied: true, Note: "Qwen3-0.6B config.json"},
		"1.7b": {Vocab: 151936, Hidden: 2048, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 6144, Context: 40960, Eps: 1e-6,
			Theta: 1e6, Tied: true, Note: "Qwen3-1.7B config.json"},
		"4b": {Vocab: 151936, Hidden: 2560, Layers: 36, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 9728, Context: 40960, Eps: 1e-6,
			Theta: 1e6, Tied: true, Note: "Qwen3-4B config.json"},
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
		{Names: nQNorm, Rows: c.HeadDim},
		{Names: nKNorm, Rows: c.HeadDim},
	}
	return global, append(layer, model.GatedFFNTensors(c, nAttnOut, nFFNNorm, nFFNGate, nFFNUp, nFFNDown)...)
}
