package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/hub"
	"github.com/siskin-ml/siskin/ollama"
)

// resolveModel turns a model reference into a local path: hf://ORG/REPO
// [:QUANT][@REVISION] from the Hugging Face cache (downloaded when it is
// not there), ollama://NAME[:TAG] to the GGUF blob in ollama's store.
// Anything else is a path and comes back unchanged.
func resolveModel(ctx context.Context, ref string, log io.Writer) (string, error) {
	switch {
	case hub.IsRef(ref):
		r, err := hub.ParseRef(ref)
		if err != nil {
			return "", err
		}
		c := hub.FromEnv()
		p := hub.NewProgress(log)
		c.Progress, c.Log = p, log
		defer p.Wait()
		return c.Resolve(ctx, r)
	case ollama.IsRef(ref):
		r, err := ollama.ParseRef(ref)
		if err != nil {
			return "", err
		}
		m, err := ollama.Open(ollama.Dir(), r)
		if err != nil {
			return "", err
		}
		noteOllamaLayers(m, log)
		return m.GGUF, nil
	}
	return ref, nil
}

// noteOllamaLayers says what becomes of the manifest's other layers:
// siskin reads the chat template and settings from the GGUF, flags and
// requests, and cannot render ollama's Go-template syntax.
func noteOllamaLayers(m *ollama.Model, log io.Writer) {
	if m.Template != "" {
		hasOwn := false
		if f, err := gguf.Open(m.GGUF); err == nil {
			_, hasOwn = f.String("tokenizer.chat_template")
			f.Close()
		}
		if hasOwn {
			fmt.Fprintf(log, "%s: using the GGUF's own chat template; the manifest's template layer is ignored\n", m.Ref)
		} else {
			fmt.Fprintf(log, "%s: the GGUF has no chat template and the manifest's template layer is in ollama's Go-template syntax, which siskin does not render: ignored (give serve --chat-template FILE.jinja for chat)\n", m.Ref)
		}
	}
	if p := strings.TrimSpace(m.Params); p != "" {
		fmt.Fprintf(log, "%s: the manifest's parameters %s are ignored: siskin takes sampling settings and stop strings from its flags and each request\n", m.Ref, oneLine(p))
	}
	if m.System != "" {
		fmt.Fprintf(log, "%s: the manifest's system prompt is ignored: send it as a system message\n", m.Ref)
	}
	for _, o := range m.Others {
		fmt.Fprintf(log, "%s: layer %s is ignored\n", m.Ref, o)
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// modelFlags are the flags that name a model; quantize takes its input
// as the first argument instead.
var modelFlags = []string{"model", "reference"}

// resolveModelFlags runs before every command: each model flag (and
// quantize's input) given as hf:// or ollama:// is replaced by the local
// path, so commands only ever see paths. serve names the model after
// the reference unless --served-model-name says otherwise.
func resolveModelFlags(cmd *cobra.Command, args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for _, name := range modelFlags {
		fl := cmd.Flags().Lookup(name)
		if fl == nil || !isModelRef(fl.Value.String()) {
			continue
		}
		ref := fl.Value.String()
		p, err := resolveModel(ctx, ref, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		if err := cmd.Flags().Set(name, p); err != nil {
			return err
		}
		if sn := cmd.Flags().Lookup("served-model-name"); name == "model" && sn != nil && !sn.Changed {
			cmd.Flags().Set("served-model-name", servedName(ref))
		}
	}
	if cmd.Name() == "quantize" && len(args) > 0 && isModelRef(args[0]) {
		// cobra hands RunE this same slice.
		p, err := resolveModel(ctx, args[0], cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		args[0] = p
	}
	return nil
}

func isModelRef(s string) bool { return hub.IsRef(s) || ollama.IsRef(s) }

// servedName is the model name clients use for a reference: ORG/REPO
// (with :QUANT) as vLLM and llama-server name Hub models, NAME:TAG as
// ollama does.
func servedName(ref string) string {
	if r, err := hub.ParseRef(ref); err == nil && hub.IsRef(ref) {
		if r.Quant != "" {
			return r.Repo + ":" + r.Quant
		}
		return r.Repo
	}
	return strings.TrimPrefix(ref, ollama.Scheme)
}
