package load

import "strings"

// otherToolParsers maps architectures siskin does not load to the tool
// parser their chat templates need: a server may still be given their
// templates, or a GGUF of a loaded architecture may hold such a model.
var otherToolParsers = map[string]string{
	"qwen2": "hermes", "qwen2_moe": "hermes", "qwen2moe": "hermes",
	"qwen3_moe": "hermes", "qwen3moe": "hermes", "qwen3_next": "hermes", "qwen3next": "hermes",
	"mistral": "mistral", "mistral3": "mistral", "ministral": "mistral",
}

// lookupName finds the architecture an architecture string names (a
// config.json model_type, a GGUF general.architecture or a Hugging Face
// architectures entry such as "Qwen3ForCausalLM"), with the string
// normalized as the parser tables hold it.
func lookupName(arch string) (string, bool) {
	a := strings.ToLower(arch)
	a = strings.TrimSuffix(a, "forcausallm")
	a = strings.TrimSuffix(a, "forconditionalgeneration")
	for _, d := range Archs {
		if a == d.Name {
			return d.Name, true
		}
		for _, alias := range d.Aliases {
			if a == alias {
				return d.Name, true
			}
		}
	}
	return a, false
}

// ToolParserFor returns the chat/toolcall tool parser for an architecture
// string (see lookupName), or "" if none is known. GGUF files of Mistral
// models often say "llama"; pass the parser explicitly for those.
func ToolParserFor(arch string) string {
	name, ok := lookupName(arch)
	if !ok {
		return otherToolParsers[name]
	}
	d, _ := Archs.Lookup(name)
	return d.ToolParser
}

// ReasoningParserFor returns the chat/toolcall reasoning parser of an
// architecture whose templates open a <think> block, or "".
func ReasoningParserFor(arch string) string {
	name, ok := lookupName(arch)
	if !ok {
		return ""
	}
	d, _ := Archs.Lookup(name)
	return d.ReasoningParser
}
