package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FromTokenizerConfig loads the chat template of a Hugging Face
// tokenizer_config.json. "chat_template" is either a string or a list of
// {"name", "template"}; of a list, "default" renders plain requests and
// "tool_use", if present, requests with tools, as in transformers.
func FromTokenizerConfig(raw []byte) (*Template, error) {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("chat: tokenizer config: %w", err)
	}
	ct, ok := cfg["chat_template"]
	if !ok || string(ct) == "null" {
		return nil, errors.New("chat: tokenizer config has no chat_template")
	}
	t, err := fromTemplateField(ct)
	if err != nil {
		return nil, err
	}
	t.SpecialTokens = specialTokens(cfg)
	return t, nil
}

// fromTemplateField parses a "chat_template" value.
func fromTemplateField(ct json.RawMessage) (*Template, error) {
	var src string
	if err := json.Unmarshal(ct, &src); err == nil {
		return Parse(src)
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(ct, &named); err != nil {
		return nil, errors.New("chat: chat_template must be a string or a list of {name, template}")
	}
	t := &Template{}
	for _, n := range named {
		switch n.Name {
		case "default":
			p, err := Parse(n.Template)
			if err != nil {
				return nil, fmt.Errorf("chat: template %q: %w", n.Name, err)
			}
			t.tmpl, t.globals = p.tmpl, p.globals
		case "tool_use":
			p, err := Parse(n.Template)
			if err != nil {
				return nil, fmt.Errorf("chat: template %q: %w", n.Name, err)
			}
			t.toolUse = p
		}
	}
	if t.tmpl == nil && t.toolUse == nil {
		return nil, errors.New("chat: chat_template lists neither a \"default\" nor a \"tool_use\" template")
	}
	return t, nil
}

// specialTokens reads the *_token entries, each a string or an AddedToken
// object {"content": ...}.
func specialTokens(cfg map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		if len(k) < 7 || k[len(k)-6:] != "_token" {
			continue
		}
		var s string
		if string(v) == "null" {
			continue
		}
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
			continue
		}
		var tok struct {
			Content *string `json:"content"`
		}
		if json.Unmarshal(v, &tok) == nil && tok.Content != nil {
			out[k] = *tok.Content
		}
	}
	return out
}

// ErrNoTemplate reports a model folder without a chat template: such a
// model still serves completions.
var ErrNoTemplate = errors.New("chat: no chat template")

// FromHFDir loads the chat template of a Hugging Face model folder:
// chat_template.jinja (newer transformers save it there, and it wins over
// the config, with additional_chat_templates/tool_use.jinja as the tool
// variant), else chat_template.json, else tokenizer_config.json. Special
// tokens come from tokenizer_config.json when it exists.
func FromHFDir(dir string) (*Template, error) {
	var cfg map[string]json.RawMessage
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, fmt.Errorf("chat: %s: %w", filepath.Join(dir, "tokenizer_config.json"), err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}

	var t *Template
	if src, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
		if t, err = Parse(string(src)); err != nil {
			return nil, err
		}
		if src, err := os.ReadFile(filepath.Join(dir, "additional_chat_templates", "tool_use.jinja")); err == nil {
			if t.toolUse, err = Parse(string(src)); err != nil {
				return nil, fmt.Errorf("chat: tool_use template: %w", err)
			}
		}
	} else if raw, err := os.ReadFile(filepath.Join(dir, "chat_template.json")); err == nil {
		var f struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(raw, &f); err != nil || f.ChatTemplate == nil {
			return nil, fmt.Errorf("chat: %s: no chat_template", filepath.Join(dir, "chat_template.json"))
		}
		if t, err = fromTemplateField(f.ChatTemplate); err != nil {
			return nil, err
		}
	} else if ct, ok := cfg["chat_template"]; ok && string(ct) != "null" {
		if t, err = fromTemplateField(ct); err != nil {
			return nil, err
		}
	} else {
		return nil, fmt.Errorf("%w in %s", ErrNoTemplate, dir)
	}
	t.SpecialTokens = specialTokens(cfg)
	return t, nil
}
