package load

import "testing"

func TestToolParserFor(t *testing.T) {
	for arch, want := range map[string]string{
		"spark2_5": "spark25", "qwen3": "hermes", "qwen2": "hermes", "qwen3_moe": "hermes",
		"Qwen3ForCausalLM": "hermes", "llama": "llama3_json", "LlamaForCausalLM": "llama3_json",
		"mistral": "mistral", "gemma3": "", "": "",
	} {
		if got := ToolParserFor(arch); got != want {
			t.Errorf("ToolParserFor(%q) = %q, want %q", arch, got, want)
		}
	}
}
