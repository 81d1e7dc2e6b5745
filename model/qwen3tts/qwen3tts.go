// Package qwen3tts implements the half of Qwen3-TTS (12 Hz) that chooses
// the audio codes: the talker, a Qwen3 decoder over rows that add a text
// track (text embedding through a projection MLP) and a codec track, and
// the code predictor, a smaller Qwen3 decoder that fills codebooks 1..15
// of each frame from the talker's hidden state and codebook 0. Both run
// the qwen3 package's decoder layers in float32 with float32 KV caches.
//
// Spec: ../shared/docs/qwen3_tts_talker.md (TS). Prompt rows: prompt.go;
// the frame loop and token rules: generate.go.
package qwen3tts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/qwen3"
	"github.com/siskin-ml/siskin/tensor"
)

// Model is a loaded Qwen3-TTS talker and code predictor.
type Model struct {
	Cfg *Config
	src *model.Source

	// Talker.
	talker     *qwen3.Decoder
	talkerNorm []float32
	codecEmbed *tensor.Matrix // [codec vocab, H], codebook 0 and control ids
	codecHead  *tensor.Matrix // [codec vocab, H]
	textEmbed  *tensor.Matrix // [text vocab, HT]
	fc1, fc2   *tensor.Matrix // text projection: HT -> HT -> H
	b1, b2     []float32

	// Code predictor: the one that runs; for the parity checks a float32
	// reference (pred itself when that is float) and a per-row int8
	// baseline (nil unless loaded).
	pred, ref, baseline *predictor
	parity              *paritySink // nil without the in-situ check

	padOnce sync.Once
	pad     []float32

	weightBytes int64
	// Weight bytes read per frame at batch 1 (embedding rows aside).
	talkerRead, predRead int64
}

// Tensor names (TS §3); %d is the layer or codebook group.
const (
	talkerPrefix    = "talker."
	predictorPrefix = "talker.code_predictor."
)

// The embedding tables carry llama.cpp's token-embedding role so a
// weight store treats them as read by rows only.
var (
	nCodecEmbed = model.Names{GGUF: "token_embd.weight", HF: "talker.model.codec_embedding.weight"}
	nTextEmbed  = model.Names{GGUF: "token_embd.weight", HF: "talker.model.text_embedding.weight"}
	nTalkerNorm = model.Names{HF: "talker.model.norm.weight"}
	nFC1        = model.Names{HF: "talker.text_projection.linear_fc1.weight"}
	nFC1Bias    = model.Names{HF: "talker.text_projection.linear_fc1.bias"}
	nFC2        = model.Names{HF: "talker.text_projection.linear_fc2.weight"}
	nFC2Bias    = model.Names{HF: "talker.text_projection.linear_fc2.bias"}
	nCodecHead  = model.Names{HF: "talker.codec_head.weight"}
	nPredNorm   = model.Names{HF: "talker.code_predictor.model.norm.weight"}
	nPredEmbed  = model.Names{GGUF: "token_embd.weight", HF: "talker.code_predictor.model.codec_embedding.%d.weight"}
	nLMHead     = model.Names{HF: "talker.code_predictor.lm_head.%d.weight"}
	nProj       = model.Names{HF: "talker.code_predictor.small_to_mtp_projection.weight"}
	nProjBias   = model.Names{HF: "talker.code_predictor.small_to_mtp_projection.bias"}
)

// Load reads a Qwen3-TTS Hugging Face folder: config.json,
// generation_config.json (optional) and model.safetensors. BF16 and F32
// weights are computed in float32. A missing or misshaped tensor is
// refused by name; so is a speaker encoder (Base checkpoints' voice
// cloning, not supported yet).
func Load(dir string) (*Model, error) { return LoadWith(dir, Options{}) }

// LoadWith is Load with load-time options.
func LoadWith(dir string, o Options) (*Model, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	gen, err := os.ReadFile(filepath.Join(dir, "generation_config.json"))
	if os.IsNotExist(err) {
		gen, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(raw, gen)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	src, err := model.Open(dir)
	if err != nil {
		return nil, err
	}
	m, err := load(src, cfg, o)
	if err != nil {
		src.Close()
		return nil, err
	}
	return m, nil
}

func load(src *model.Source, c *Config, o Options) (*Model, error) {
	if src.Format != model.HF {
		return nil, fmt.Errorf("%s: Qwen3-TTS is read from a Hugging Face folder", src.Path)
	}
	for _, name := range src.HF.Names() {
		if strings.HasPrefix(name, "speaker_encoder.") {
			return nil, fmt.Errorf("%s: tensor %s: this checkpoint has a speaker encoder (a Base model for voice cloning), which siskin does not support yet; use a CustomVoice checkpoint", src.Path, name)
		}
	}
	if c.ModelType != "custom_voice" {
		return nil, fmt.Errorf("%s: tts_model_type %q is not supported yet (only custom_voice; Base voice cloning and VoiceDesign are not)", src.Path, c.ModelType)
	}
	m := &Model{Cfg: c, src: src}
	pt := o.predictorType()
	if err := checkWeightType("predictor", pt); err != nil {
		return nil, err
	}
	if err := checkWeightType("talker", o.Talker); err != nil {
		return nil, err
	}
	t := &c.Talker
	w := &model.Loader{Source: src, Layers: t.Layers}
	var talkerDec int64
	err := withStore(src, storeFor(o.Talker, false), func() {
		m.talker = qwen3.LoadDecoder(w, t, talkerPrefix)
		talkerDec = w.Bytes
		m.talkerNorm = w.Vector(nTalkerNorm, 0, t.Hidden)
		m.codecEmbed = w.Matrix(nCodecEmbed, 0, t.Vocab, t.Hidden)
		m.codecHead = w.Matrix(nCodecHead, 0, t.Vocab, t.Hidden)
		m.textEmbed = w.Matrix(nTextEmbed, 0, c.TextVocab, c.TextHidden)
		m.fc1 = w.Matrix(nFC1, 0, c.TextHidden, c.TextHidden)
		m.b1 = w.Vector(nFC1Bias, 0, c.TextHidden)
		m.fc2 = w.Matrix(nFC2, 0, t.Hidden, c.TextHidden)
		m.b2 = w.Vector(nFC2Bias, 0, t.Hidden)
	})
	if err != nil {
		return nil, err
	}
	if err := withStore(src, storeFor(pt, true), func() { m.pred = loadPredictor(w, c) }); err != nil {
		return nil, err
	}
	if w.Err != nil {
		return nil, w.Err
	}
	if err := m.loadChecks(src, o, pt); err != nil {
		return nil, err
	}
	m.weightBytes = w.Bytes
	m.talkerRead = talkerDec + matrixBytes(m.codecHead)
	m.predRead = int64(c.CodeGroups-1) * (m.pred.decBytes + matrixBytes(m.pred.proj))
	for _, h := range m.pred.lmHead {
		m.predRead += matrixBytes(h)
	}
	return m, nil
}

func matrixBytes(m *tensor.Matrix) int64 {
	if m == nil {
		return 0
	}
	return int64(m.RowStride()) * int64(m.Rows)
}

// ReadBytesPerFrame is what one frame reads from the weights at batch 1:
// the talker's layers and codec head once, the code predictor's layers
// and projection once per sub-step and each lm head once (embedding rows,
// a few KiB, left out). It sets the memory-bandwidth floor of a frame.
func (m *Model) ReadBytesPerFrame() (talker, predictor int64) {
	return m.talkerRead, m.predRead
}

// Close releases the mapped weights.
func (m *Model) Close() error { return m.src.Close() }

// WeightBytes is the size of the weights.
func (m *Model) WeightBytes() int64 { return m.weightBytes }

// NewTalkerCache and NewPredictorCache return empty float32 caches.
func (m *Model) NewTalkerCache() *kv.Cache { return m.Cfg.Talker.NewCache() }

// NewPredictorCache: see NewTalkerCache.
func (m *Model) NewPredictorCache() *kv.Cache { return m.Cfg.Predictor.NewCache() }

// rowBatch lays out counts[i] rows of embeddings per cache as a batch
// (the rows carry no token ids: Tokens only sizes the batch).
func rowBatch(caches []*kv.Cache, counts []int) *model.Batch {
	b := &model.Batch{}
	for i, c := range caches {
		start, row0 := c.Len(), len(b.Tokens)
		for j := 0; j < counts[i]; j++ {
			b.Tokens = append(b.Tokens, 0)
			b.Pos = append(b.Pos, start+j)
			b.Cache = append(b.Cache, c)
			b.Row0 = append(b.Row0, row0)
		}
		b.MaxLen = max(b.MaxLen, start+counts[i])
	}
	return b
}

// linearBias sets out = w x + bias for n rows.
func linearBias(out []float32, w *tensor.Matrix, bias, x []float32, n int) {
	model.Linear(out, w, x, n)
	for r := 0; r < n; r++ {
		kernels.Add(out[r*w.Rows:(r+1)*w.Rows], bias)
	}
}

// TextRows returns T(ids) = fc2(silu(fc1(text_embedding(ids)))), one row
// of talker width per id (TS §4).
func (m *Model) TextRows(ids []int) ([]float32, error) {
	c := m.Cfg
	for i, id := range ids {
		if id < 0 || id >= c.TextVocab {
			return nil, fmt.Errorf("text id %d at index %d is outside the text vocabulary [0, %d)", id, i, c.TextVocab)
		}
	}
	n, ht := len(ids), c.TextHidden
	buf := model.GetScratch(2 * n * ht) // the embedding rows and fc1's
	defer model.PutScratch(buf)
	e, h := (*buf)[:n*ht], (*buf)[n*ht:]
	model.Embed(e, m.textEmbed, ids)
	linearBias(h, m.fc1, m.b1, e, n)
	kernels.SiLU(h)
	out := make([]float32, n*c.Talker.Hidden)
	linearBias(out, m.fc2, m.b2, h, n)
	return out, nil
}

// CodecRows returns the talker's codec embedding of ids.
func (m *Model) CodecRows(ids []int) []float32 {
	out := make([]float32, len(ids)*m.Cfg.Talker.Hidden)
	model.Embed(out, m.codecEmbed, ids)
	return out
}
