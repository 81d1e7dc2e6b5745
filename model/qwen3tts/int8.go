package qwen3tts

import (
	"fmt"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
	"github.com/siskin-ml/siskin/weightpath"
)

// Options are choices made at load.
type Options struct {
	// PredictorW8A8 holds the code predictor's linear weights (layers,
	// projection, lm heads) as int8 with one fp16 scale per 128 weights
	// (weight path w8a8: int8 activations), converted at load. Rows whose
	// width is not a multiple of 128 stay in float.
	PredictorW8A8 bool
}

// w8Store converts each weight it is given to W8A8 in memory (no cache
// file: the predictor's weights take about a second to convert).
type w8Store struct{}

func (w8Store) Matrix(m *tensor.Matrix, r model.Role) (*tensor.Matrix, error) {
	if r.LookupOnly() {
		return m, nil
	}
	if m.Cols%tensor.WeightGroup != 0 {
		kernels.Prepare(m)
		return m, nil
	}
	rb, err := tensor.RowBytes(tensor.W8A8, m.Cols)
	if err != nil {
		return nil, err
	}
	out := &tensor.Matrix{Name: m.Name, Type: tensor.W8A8, Rows: m.Rows, Cols: m.Cols, Data: make([]byte, rb*m.Rows)}
	row := make([]float32, m.Cols)
	for i := range m.Rows {
		if err := tensor.Dequantize(row, m.Type, m.Row(i)); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		if err := weightpath.QuantizeRow(out.Data[i*rb:(i+1)*rb], tensor.W8A8, row); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	kernels.Prepare(out)
	return out, nil
}

func (w8Store) Close() error { return nil }
