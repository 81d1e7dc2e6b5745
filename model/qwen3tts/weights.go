package qwen3tts

import (
	"fmt"
	"math"
	"strings"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/qwen3"
	"github.com/siskin-ml/siskin/quantize"
	"github.com/siskin-ml/siskin/tensor"
	"github.com/siskin-ml/siskin/weightpath"
)

// Options are choices made at load.
type Options struct {
	// Predictor and Talker are the types the code predictor's linear
	// weights (layers and projection; its lm heads stay in the file's
	// type under the 8-bit types and become Q8_0 under the 4-bit ones)
	// and the talker's (layers, text projection, codec head) are
	// converted to at load: tensor.Q8_0 (siskin's int8: one fp16 scale per
	// 32 weights), tensor.Q4_K (4-bit, a scale and a min per 32), or the
	// weight paths tensor.W8A8 and tensor.W4A8 (int8 and 4-bit, one fp16
	// scale per 128 weights); all of them run with int8 activations. 0
	// keeps the file's type. Rows whose width is not a multiple of the
	// group stay in float.
	Predictor, Talker tensor.Type
	// PredictorW8A8 is Predictor: tensor.W8A8 (kept for callers of the
	// first int8 predictor).
	PredictorW8A8 bool
	// ParityCheck keeps a float32 copy of the code predictor beside a
	// quantized one and compares their logits in situ on every
	// ParityEvery-th frame of each utterance (default 8): see
	// Model.PredictorParityStats.
	ParityCheck bool
	ParityEvery int
	// RowInt8Baseline also loads the predictor as plain per-row absmax
	// int8 weights (one float32 scale per row, float32 activations), the
	// baseline Model.TeacherForcedParity compares against.
	RowInt8Baseline bool
}

func (o Options) predictorType() tensor.Type {
	if o.Predictor == 0 && o.PredictorW8A8 {
		return tensor.W8A8
	}
	return o.Predictor
}

func checkWeightType(side string, t tensor.Type) error {
	if t != 0 && t != tensor.W8A8 && t != tensor.W4A8 && t != tensor.Q8_0 && t != tensor.Q4_K {
		return fmt.Errorf("%s weights: %s is not a supported type (q8_0, w8a8, w4a8 or q4_k)", side, t)
	}
	return nil
}

// predictor is one copy of the code predictor's weights: the one a model
// runs, and for the parity checks a float32 reference and a baseline.
type predictor struct {
	dec      *qwen3.Decoder
	norm     []float32
	embed    []*tensor.Matrix // [g]: embeds codebook g+1, [predictor vocab, H]
	lmHead   []*tensor.Matrix // [g]: predicts codebook g+1, [predictor vocab, C]
	proj     *tensor.Matrix   // small_to_mtp_projection [C, H]; nil is the identity
	projBias []float32
	// Weight bytes of the decoder layers.
	decBytes int64
}

// loadPredictor reads the code predictor through w, whose Source's
// Weights store (if any) converts its matrices.
func loadPredictor(w *model.Loader, c *Config) *predictor {
	t, p := &c.Talker, &c.Predictor
	before := w.Bytes
	cp := &predictor{dec: qwen3.LoadDecoder(w, p, predictorPrefix)}
	cp.decBytes = w.Bytes - before
	cp.norm = w.Vector(nPredNorm, 0, p.Hidden)
	for g := 0; g < c.CodeGroups-1; g++ {
		cp.embed = append(cp.embed, w.Matrix(nPredEmbed, g, p.Vocab, t.Hidden))
		cp.lmHead = append(cp.lmHead, w.Matrix(nLMHead, g, p.Vocab, p.Hidden))
	}
	// The projection exists iff the widths differ (M:1171-1174).
	src := w.Source
	if p.Hidden != t.Hidden {
		cp.proj = w.Matrix(nProj, 0, p.Hidden, t.Hidden)
		cp.projBias = w.Vector(nProjBias, 0, p.Hidden)
	} else if w.Err == nil && (src.Has(nProj, 0) || src.Has(nProjBias, 0)) {
		w.Err = fmt.Errorf("%s: tensor %s is present but talker and code predictor are both %d wide (the official model has no projection then)", src.Path, nProj.HF, t.Hidden)
	}
	return cp
}

// withStore runs f with src.Weights set to ws (nil: the file's own).
func withStore(src *model.Source, ws model.WeightStore, f func()) error {
	if src.Weights != nil {
		return fmt.Errorf("%s: converting weights at load needs the file's own weights", src.Path)
	}
	src.Weights = ws
	defer func() { src.Weights = nil }()
	f()
	return nil
}

// storeFor is the conversion to typ (nil for 0: the file's type);
// predictor says the store converts the code predictor, whose lm heads
// (2.6% of its weight reads at the 0.6B size in BF16) are kept as they
// are for 8-bit types, their rounding going straight into the logits
// (keeping them cut the int8 predictors' KL against float32 by 11-13%
// there), and held as Q8_0 under the 4-bit ones, where they would be
// 6% of the reads and the 4-bit layers' error dwarfs theirs.
func storeFor(typ tensor.Type, predictor bool) model.WeightStore {
	if typ == 0 {
		return nil
	}
	s := quantStore{typ: typ, heads: typ}
	if predictor {
		s.heads = 0
		if typ == tensor.Q4_K || typ == tensor.W4A8 {
			s.heads = tensor.Q8_0
		}
	}
	return s
}

// project applies small_to_mtp_projection (or the identity) to n rows
// of talker width, giving rows of predictor width cw in dst's memory
// when it has room.
func (p *predictor) project(dst, x []float32, n, cw int) []float32 {
	if p.proj == nil {
		return append(dst[:0], x...)
	}
	dst = resize(dst, n*cw)
	linearBias(dst, p.proj, p.projBias, x, n)
	return dst
}

// quantStore converts each weight it is given to a weight-path type in
// memory (no cache file: the conversion takes seconds).
type quantStore struct {
	typ tensor.Type
	// heads is the lm heads' type (0: the file's).
	heads tensor.Type
}

func (s quantStore) Matrix(m *tensor.Matrix, r model.Role) (*tensor.Matrix, error) {
	if r.LookupOnly() {
		return m, nil
	}
	typ := s.typ
	if strings.Contains(m.Name, "lm_head") {
		typ = s.heads
	}
	if typ == 0 || m.Cols%typ.BlockSize() != 0 {
		kernels.Prepare(m)
		return m, nil
	}
	rb, err := tensor.RowBytes(typ, m.Cols)
	if err != nil {
		return nil, err
	}
	out := &tensor.Matrix{Name: m.Name, Type: typ, Rows: m.Rows, Cols: m.Cols, Data: make([]byte, rb*m.Rows)}
	err = eachRow(m, func(i int, row []float32) error {
		if typ.IsWeightPath() {
			return weightpath.QuantizeRow(out.Data[i*rb:(i+1)*rb], typ, row)
		}
		return quantize.QuantizeRow(out.Data[i*rb:(i+1)*rb], typ, row)
	})
	if err != nil {
		return nil, err
	}
	kernels.Prepare(out)
	return out, nil
}

func (quantStore) Close() error { return nil }

// eachRow hands f each row of m in float32.
func eachRow(m *tensor.Matrix, f func(i int, row []float32) error) error {
	row := make([]float32, m.Cols)
	for i := range m.Rows {
		if err := tensor.Dequantize(row, m.Type, m.Row(i)); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if err := f(i, row); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}

// rowInt8Store is the parity baseline: plain per-row absmax int8 weights
// (q = round(127 w / max|w|) with one float32 scale per row), held as the
// float32 values q*scale so that only the weights' rounding differs from
// float32.
type rowInt8Store struct{}

func (rowInt8Store) Matrix(m *tensor.Matrix, r model.Role) (*tensor.Matrix, error) {
	if r.LookupOnly() {
		return m, nil
	}
	out := &tensor.Matrix{Name: m.Name, Type: tensor.F32, Rows: m.Rows, Cols: m.Cols, Data: make([]byte, 4*m.Rows*m.Cols)}
	err := eachRow(m, func(i int, row []float32) error {
		roundRowInt8(row)
		for j, v := range row {
			putF32(out.Data[4*(i*m.Cols+j):], v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	kernels.Prepare(out)
	return out, nil
}

func (rowInt8Store) Close() error { return nil }

// roundRowInt8 replaces row by its per-row absmax int8 rounding.
func roundRowInt8(row []float32) {
	var amax float32
	for _, v := range row {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	if amax == 0 {
		return
	}
	d := amax / 127
	for j, v := range row {
		row[j] = float32(math.RoundToEven(float64(v/d))) * d
	}
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}
