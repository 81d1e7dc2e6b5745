package tokenizer

import (
	"os"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// BenchmarkEncodeChat encodes the 2 KB Spark chat prompt (1756 ids). The
// word cache is reset each time to measure the cold cost.
func BenchmarkEncodeChat(b *testing.B) {
	tk := loadHF(b, "spark2_5-tiny")
	text, err := os.ReadFile(testdata.Path(b, "llm", "tiny", "hf", "spark2_5-tiny", "golden", "chat_verbatim.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tk.cache = newWordCache()
		tk.Encode(string(text), EncodeOptions{ParseSpecial: true})
	}
}
