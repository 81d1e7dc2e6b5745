package model

import (
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// Loader fetches weights from a Source, keeping the first error so that a
// model's Load reads as a plain list of tensors, and adds up their bytes.
type Loader struct {
	Source *Source
	// Layers is the model's layer count (a weight path keeps more bits in
	// some layers, as llama.cpp's _M mixes do).
	Layers int
	// Tied says the output head is the token embedding (a weight path
	// gives that matrix the output head's bits).
	Tied bool
	Err  error
	// Bytes is the size of every weight fetched, as held in memory; Read
	// is what one token's forward pass reads of them: all of it but a
	// lookup-only token embedding, of which a token reads one row.
	Bytes, Read int64
}

// Matrix fetches a [rows, cols] weight (nil after an error).
func (l *Loader) Matrix(n Names, layer, rows, cols int) *tensor.Matrix {
	if l.Err != nil {
		return nil
	}
	m, err := l.Source.Matrix(n, layer, rows, cols)
	if err != nil {
		l.Err = err
		return nil
	}
	r := Role{Name: n.GGUF, Layer: layer, Layers: l.Layers, Tied: l.Tied}
	if ws := l.Source.Weights; ws != nil {
		src := m
		if m, err = ws.Matrix(m, r); err != nil {
			l.Err = err
			return nil
		}
		if m != src {
			// Converted: the file's bytes were read once (on a miss) and
			// are not needed again; without this a cold start keeps the
			// whole source resident beside the converted weights.
			l.Source.Release(src.Data)
		}
	} else if !r.LookupOnly() {
		// The fast kernels stream a repacked copy.
		kernels.Prepare(m)
	}
	// What a product with m streams: the packed copy where there is one
	// (a W4A8 or W8A8 matrix's is larger than its rows).
	b := kernels.ReadBytes(m)
	l.Bytes += b
	if r.LookupOnly() && rows > 0 {
		b /= int64(rows)
	}
	l.Read += b
	if kernels.IsPrepared(m) {
		// The Source releases the packed copy on Close.
		l.Source.prepared = append(l.Source.prepared, m)
	}
	return m
}

// Vector fetches a 1-D weight as float32 (nil after an error).
func (l *Loader) Vector(n Names, layer, size int) []float32 {
	if l.Err != nil {
		return nil
	}
	v, err := l.Source.Vector(n, layer, size)
	if err != nil {
		l.Err = err
		return nil
	}
	l.Bytes += int64(4 * size)
	l.Read += int64(4 * size)
	return v
}
