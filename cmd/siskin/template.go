package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/tokenizer"
)

func templateCmd() *cobra.Command {
	var (
		modelPath, messagesFile, toolsFile, kwargsJSON string
		noGenPrompt                                    bool
	)
	cmd := &cobra.Command{
		Use:   "template -m PATH --messages FILE.json [--tools FILE.json] [--no-generation-prompt] [--kwargs JSON]",
		Short: "Print the prompt a model's chat template renders for a conversation",
		Long: `Render the chat template of PATH (a GGUF file with tokenizer.chat_template, or a
Hugging Face folder: chat_template.jinja, chat_template.json or
tokenizer_config.json) for the messages in FILE.json, exactly as siskin serve
renders a chat request, and print the prompt as it is (no newline added).

FILE.json holds a list of OpenAI-style messages, or a request object with
"messages" (and "tools", used unless --tools is given). --kwargs sets
template variables such as {"enable_thinking": false}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelPath == "" {
				return fmt.Errorf("-m PATH is required (a .gguf file or a Hugging Face folder)")
			}
			if messagesFile == "" {
				return fmt.Errorf("--messages FILE.json is required")
			}
			opts := chat.RenderOptions{AddGenerationPrompt: !noGenPrompt, Kwargs: map[string]any{}}
			if err := readMessages(messagesFile, &opts); err != nil {
				return err
			}
			if toolsFile != "" {
				raw, err := os.ReadFile(toolsFile)
				if err != nil {
					return err
				}
				if err := json.Unmarshal(raw, &opts.Tools); err != nil {
					return fmt.Errorf("--tools %s: want a JSON list of tool schemas: %w", toolsFile, err)
				}
			}
			tmpl, err := loadChatTemplate(modelPath, &opts)
			if err != nil {
				return err
			}
			if kwargsJSON != "" {
				var kw map[string]json.RawMessage
				if err := json.Unmarshal([]byte(kwargsJSON), &kw); err != nil {
					return fmt.Errorf("--kwargs: want a JSON object: %w", err)
				}
				for k, v := range kw {
					opts.Kwargs[k] = v
				}
			}
			out, err := tmpl.Render(opts)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), out)
			return err
		},
	}
	cmd.Flags().StringVarP(&modelPath, "model", "m", "", "GGUF file or Hugging Face folder")
	cmd.Flags().StringVar(&messagesFile, "messages", "", "JSON file: a list of messages, or a request with messages (and tools)")
	cmd.Flags().StringVar(&toolsFile, "tools", "", "JSON file: a list of tool schemas")
	cmd.Flags().BoolVar(&noGenPrompt, "no-generation-prompt", false, "do not open an assistant turn at the end")
	cmd.Flags().StringVar(&kwargsJSON, "kwargs", "", `extra template variables as a JSON object, e.g. '{"enable_thinking":false}'`)
	return cmd
}

// readMessages reads --messages: a list of messages, or an object with
// "messages" and optionally "tools".
func readMessages(path string, opts *chat.RenderOptions) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if b := bytes.TrimSpace(raw); len(b) > 0 && b[0] == '{' {
		var req struct {
			Messages []chat.Message    `json:"messages"`
			Tools    []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return fmt.Errorf("--messages %s: %w", path, err)
		}
		if req.Messages == nil {
			return fmt.Errorf("--messages %s: the object has no \"messages\" list", path)
		}
		opts.Messages, opts.Tools = req.Messages, req.Tools
		return nil
	}
	if err := json.Unmarshal(raw, &opts.Messages); err != nil {
		return fmt.Errorf("--messages %s: want a JSON list of messages: %w", path, err)
	}
	return nil
}

// loadChatTemplate reads the template at path and sets the special-token
// variables the template sees: bos_token and eos_token, and from a
// Hugging Face config the other *_token entries too, as transformers does.
func loadChatTemplate(path string, opts *chat.RenderOptions) (*chat.Template, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		t, err := chat.FromHFDir(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for k, v := range t.SpecialTokens {
			switch k {
			case "bos_token":
				opts.BOSToken = v
			case "eos_token":
				opts.EOSToken = v
			default:
				opts.Kwargs[k] = v
			}
		}
		return t, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: not a GGUF file or Hugging Face folder: %w", path, err)
	}
	defer f.Close()
	src, ok := f.String("tokenizer.chat_template")
	if !ok {
		return nil, fmt.Errorf("%s: no tokenizer.chat_template in this GGUF", path)
	}
	t, err := chat.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer.chat_template: %w", path, err)
	}
	if tk, err := tokenizer.FromGGUF(f); err == nil {
		if id := tk.BOS(); id >= 0 {
			opts.BOSToken = tk.Piece(id)
		}
		if id := tk.EOS(); id >= 0 {
			opts.EOSToken = tk.Piece(id)
		}
	}
	return t, nil
}
