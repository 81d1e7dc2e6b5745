package tokenizer

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/cputime"
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

// mixedText is a prompt-like mix of English prose, Go and Python code,
// Chinese, emoji, numbers and JSON, about 9 KB.
var mixedText = strings.Repeat(`The quick brown fox jumps over the lazy dog. It's 3:45 PM on 2024-03-15, and the
temperature is 23.5°C (74.3°F). We've shipped v1.12.0 with 1,234,567 downloads; that's
a 42% increase over last year's numbers! Don't forget: "measure twice, cut once."

func (s *Server) handle(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	for i := 0; i < len(s.workers); i++ {
		if err := s.workers[i].Do(ctx, r.URL.Query().Get("id")); err != nil {
			return fmt.Errorf("worker %d: %w", i, err)
		}
	}
	return nil
}

def fibonacci(n: int) -> list[int]:
    """Return the first n Fibonacci numbers."""
    a, b = 0, 1
    out = []
    for _ in range(n):
        out.append(a)
        a, b = b, a + b
    return out

人工智能正在改变我们的生活方式。今天天气很好，我们去公园散步吧！这个模型的参数量是七十亿，
上下文长度为三万二千个词元。东京、北京和上海都是人口超过一千万的大城市。
🚀 Launch day! 🎉🎉 Thanks to everyone 👏 who helped — we couldn't have done it without you ❤️.
Prices: $19.99, €24,50, ¥3000; call +1 (555) 012-3456 or email support@example.com.
{"model": "qwen3", "messages": [{"role": "user", "content": "Hello, 世界!"}], "max_tokens": 256}
    Indented   text    with   irregular     spacing		and tabs.
Ünïcödé façade naïve café résumé — Привет, как дела? Γειά σου κόσμε. مرحبا بالعالم
`, 4)

// BenchmarkEncodeQwen3Mixed reports Qwen3's encode throughput (MB/s) on
// mixed-language text with a cold word cache, so every word is split and
// merged: with the hand-written pre-tokenizer scanner and, for
// comparison in the same run, with the regexp2 engine it replaces.
func BenchmarkEncodeQwen3Mixed(b *testing.B) {
	tk := loadTokenizerDir(b, "qwen3")
	for _, c := range []struct {
		name string
		tk   *Tokenizer
	}{{"handwritten", tk}, {"regexp2", withoutScanners(tk)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(mixedText)))
			runtime.GC() // the loading's garbage is not encoding's cost
			cpu := cputime.Process()
			for b.Loop() {
				c.tk.cache = newWordCache()
				c.tk.Encode(mixedText, EncodeOptions{ParseSpecial: true})
			}
			// MB/s per CPU second as well: on a shared machine the
			// wall-clock figure mostly measures the neighbours.
			if cpu := cputime.Process() - cpu; cpu > 0 {
				b.ReportMetric(float64(b.N*len(mixedText))/cpu.Seconds()/1e6, "MB/cpu-s")
			}
		})
	}
}

// withoutScanners returns a copy of tk that splits with regexp2 only.
func withoutScanners(tk *Tokenizer) *Tokenizer {
	c := *tk
	c.pre = nil
	for _, p := range tk.pre {
		if rs, ok := p.(*regexSplit); ok {
			r := *rs
			r.scan = nil
			p = &r
		}
		c.pre = append(c.pre, p)
	}
	c.cache = newWordCache()
	return &c
}
