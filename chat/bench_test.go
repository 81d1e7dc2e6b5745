package chat

import "testing"

func BenchmarkRenderQwen3(b *testing.B) {
	_, g := loadGoldenTB(b)
	tmpl := parseFile(b, "Qwen-Qwen3-0.6B.jinja")
	opt := g.options(b, g.Conversations["tool_call_roundtrip"], true)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(opt); err != nil {
			b.Fatal(err)
		}
	}
}
