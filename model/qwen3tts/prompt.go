package qwen3tts

import (
	"fmt"
	"strings"
)

// Prompt is a request's talker input as id tracks (TS §4): prefill row r
// is T(Text[r]) + C(Codec[r]), where -1 is a missing track; after the
// prefill, decode step f+1 adds T(Trailing[f]) (T(tts_pad) once they run
// out).
type Prompt struct {
	Text, Codec []int
	Trailing    []int
	// Cond is how many leading rows are the conditioning: the instruct
	// block, the role and the codec prefix, which depend on the voice,
	// language and instructions but not on the text (a cache of their
	// talker KV serves every request with the same conditioning).
	Cond int
}

// Voice is the part of a request that picks the prompt.
type Voice struct {
	// Speaker and Language are names from the config (case-insensitive);
	// Language "auto" (or empty) gives no language id.
	Speaker, Language string
	// NonStreaming feeds the whole text in the prefill (the official
	// generate_custom_voice default); otherwise one text token enters
	// with each frame.
	NonStreaming bool
	// Instruct is the tokenized instruct block,
	// "<|im_start|>user\n{instructions}<|im_end|>\n" (nil: none). It
	// enters as text-only rows before the role (TS §4 step 1); the
	// official code drops it for 0.6B models (Config.AcceptsInstruct).
	Instruct []int
}

// BuildPrompt lays out the tracks for ids, the tokenized
// "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n":
// ids[:3] is the role, ids[3:len-5] the text, the last 5 are not used.
func (c *Config) BuildPrompt(ids []int, v Voice) (*Prompt, error) {
	if len(ids) < 9 {
		return nil, fmt.Errorf("input has %d ids; the wrapped text needs 3 role ids, at least one text id and 5 closing ids", len(ids))
	}
	if err := c.checkIDs("input", ids); err != nil {
		return nil, err
	}
	if err := c.checkIDs("instruct", v.Instruct); err != nil {
		return nil, err
	}
	prefix, err := c.codecPrefix(v)
	if err != nil {
		return nil, err
	}
	p := &Prompt{}
	add := func(text, codec int) {
		p.Text = append(p.Text, text)
		p.Codec = append(p.Codec, codec)
	}
	for _, id := range v.Instruct {
		add(id, -1)
	}
	for _, id := range ids[:3] {
		add(id, -1)
	}
	for i, code := range prefix[:len(prefix)-1] {
		text := c.TTSPad
		if i == len(prefix)-2 {
			text = c.TTSBOS
		}
		add(text, code)
	}
	p.Cond = len(p.Text)
	content := ids[3 : len(ids)-5]
	if !v.NonStreaming {
		add(content[0], c.CodecBOS)
		p.Trailing = append(append(p.Trailing, content[1:]...), c.TTSEOS)
		return p, nil
	}
	for _, id := range content {
		add(id, c.CodecPad)
	}
	add(c.TTSEOS, c.CodecPad)
	add(c.TTSPad, c.CodecBOS)
	p.Trailing = []int{c.TTSPad}
	return p, nil
}

// checkIDs checks that ids are in the text vocabulary.
func (c *Config) checkIDs(what string, ids []int) error {
	for i, id := range ids {
		if id < 0 || id >= c.TextVocab {
			return fmt.Errorf("%s id %d at index %d is outside the text vocabulary [0, %d)", what, id, i, c.TextVocab)
		}
	}
	return nil
}

// AcceptsInstruct reports whether the official code passes an instruct
// block to this model: generate_custom_voice drops it when
// tts_model_size is "0b6" (Python's `in "0b6"`, so also a substring of
// it), I:799-800.
func (c *Config) AcceptsInstruct() bool { return !strings.Contains("0b6", c.ModelSize) }

// codecPrefix is [think, think_bos, lang, think_eos] (or [nothink,
// think_bos, think_eos] without a language id), the speaker, then [pad,
// bos] (M:2108-2172).
func (c *Config) codecPrefix(v Voice) ([]int, error) {
	spk := strings.ToLower(v.Speaker)
	spkID, ok := c.Speakers[spk]
	if !ok {
		return nil, fmt.Errorf("unknown voice %q; this model has: %s", v.Speaker, strings.Join(c.SupportedSpeakers(), ", "))
	}
	lang := strings.ToLower(v.Language)
	if lang == "" {
		lang = "auto"
	}
	langID := -1
	if lang != "auto" {
		id, ok := c.Languages[lang]
		if !ok || strings.HasSuffix(lang, "_dialect") {
			return nil, fmt.Errorf("unknown language %q; this model has: %s", v.Language, strings.Join(c.SupportedLanguages(), ", "))
		}
		langID = id
	}
	// A dialect speaker overrides Chinese and Auto with its dialect.
	if d := c.Dialects[spk]; d != "" && (lang == "chinese" || lang == "auto") {
		langID = c.Languages[d]
	}
	var p []int
	if langID < 0 {
		p = []int{c.CodecNoThink, c.ThinkBOS, c.ThinkEOS}
	} else {
		p = []int{c.CodecThink, c.ThinkBOS, langID, c.ThinkEOS}
	}
	return append(p, spkID, c.CodecPad, c.CodecBOS), nil
}

// Embed computes the prefill rows of a prompt ([len(p.Text)][H]) and the
// trailing text rows ([len(p.Trailing)][H]).
func (m *Model) Embed(p *Prompt) (prefill, trailing []float32, err error) {
	h := m.Cfg.Talker.Hidden
	text, err := m.TextRows(p.Text)
	if err != nil {
		return nil, nil, err
	}
	codec := m.CodecRows(clampIDs(p.Codec))
	for r := range p.Text {
		if p.Codec[r] >= 0 {
			row := text[r*h : (r+1)*h]
			for i, v := range codec[r*h : (r+1)*h] {
				row[i] += v
			}
		}
	}
	trailing, err = m.TextRows(p.Trailing)
	return text, trailing, err
}

// clampIDs maps the missing ids (-1) to 0 so a lookup can run over the
// whole track; Embed skips their rows.
func clampIDs(ids []int) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = max(id, 0)
	}
	return out
}
