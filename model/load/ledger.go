package load

import (
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/ledger"
	"github.com/siskin-ml/siskin/model"
)

// RegisterMemory adds everything the loaded model holds to l: the mapped
// weights by layer, the model's heap buffers (norm vectors, RoPE tables)
// when its architecture names them, and the tokenizer.
func (l *Loaded) RegisterMemory(led *ledger.Ledger) {
	l.Source.RegisterMemory(led)
	// Weights repacked for the SIMD kernels live on the heap beside the
	// mapped file (process-wide: every loaded model's copies).
	led.AddFunc("weights repacked for the kernels", ledger.WeightsConverted, func() (int64, int64) {
		b := kernels.PreparedBytes()
		return b, b
	})
	if ws := l.Weights; ws != nil {
		if data := ws.MappedData(); data != nil {
			led.AddMapped("weights from the weight cache (mapped)", ledger.WeightsConverted, data...)
		}
		led.AddFunc("weights converted to "+string(ws.Path())+" (heap)", ledger.WeightsConverted, func() (int64, int64) {
			b := ws.ConvertedBytes()
			return b, b
		})
	}
	if r, ok := l.Model.(model.MemoryRegistrar); ok {
		r.RegisterMemory(led)
	}
	if tok := l.Tokenizer; tok != nil {
		// The word cache grows as text is encoded, so this is read at
		// every report.
		led.AddFunc("tokenizer", ledger.Tokenizer, func() (int64, int64) {
			b := tok.Bytes()
			return b, b
		})
	}
}
