package spark2_5

import "github.com/siskin-ml/siskin/model"

// Arch describes Spark-X2.5 to the rest of siskin.
var Arch = model.Arch{
	Name:            "spark2_5",
	Aliases:         []string{"spark2.5"},
	Config:          Config,
	Load:            func(s *model.Source) (model.Model, error) { return Load(s) },
	Tensors:         tensors,
	ToolParser:      "spark25",
	ReasoningParser: "deepseek_r1",
	PreTokenizer:    "spark2_5",
	Shapes: map[string]model.Shape{
		"tiny": {Vocab: 512, Hidden: 256, Layers: 8, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768, Context: 4096, Eps: 1e-6,
			Theta: 5e6, ThetaSWA: 1e4, RotFull: 0.25, Window: 16, Tied: true, Note: "the shared spark2_5-tiny test model"},
		"1.7b": {Vocab: 131072, Hidden: 2048, Layers: 28, Heads: 8, KVHeads: 2, HeadDim: 256, FFN: 6656, Context: 1048576, Eps: 1e-6,
			Theta: 5e6, ThetaSWA: 1e4, RotFull: 0.25, Window: 512, Tied: true, Note: "Spark-X2.5-1.7B (docs/spark2_5.md)"},
		"4b": {Vocab: 131072, Hidden: 2560, Layers: 36, Heads: 16, KVHeads: 4, HeadDim: 256, FFN: 10240, Context: 1048576, Eps: 1e-6,
			Theta: 5e6, ThetaSWA: 1e4, RotFull: 0.25, Window: 512, Tied: true, Note: "Spark-X2.5-4B (docs/spark2_5.md)"},
	},
	ShapeConfig: shapeConfig,
}

// shapeConfig lays out Spark's layers: three sliding layers rotating the
// whole head with ThetaSWA, then a full layer rotating RotFull of it.
func shapeConfig(s model.Shape) *model.Config {
	c := s.Config("spark2_5")
	c.SlidingWindow = s.Window
	for i := range c.LayerSpecs {
		if i%4 != 3 {
			c.LayerSpecs[i] = model.LayerSpec{Sliding: true, RopeDims: s.HeadDim, RopeTheta: s.ThetaSWA}
		} else {
			c.LayerSpecs[i] = model.LayerSpec{RopeDims: int(s.RotFull * float64(s.HeadDim)), RopeTheta: s.Theta}
		}
	}
	return c
}

// tensors lists the weights of a model of shape c (see model.Arch): the
// fused QKV projection, as the Hugging Face checkpoints hold it.
func tensors(c *model.Config) (global, layer []model.Tensor) {
	global = model.HeadTensors(c, nEmbed, nOutNorm, nOutput)
	qd, kvd := c.QDim(), c.KVDim()
	layer = []model.Tensor{
		{Names: nAttnNorm, Rows: c.Hidden},
		{Names: nQKV, Rows: qd + 2*kvd, Cols: c.Hidden},
		{Names: nGate, Rows: c.Heads, Cols: c.Hidden},
	}
	return global, append(layer, model.GatedFFNTensors(c, nAttnOut, nFFNNorm, nFFNGate, nFFNUp, nFFNDown)...)
}
