package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/hub"
	"github.com/siskin-ml/siskin/ollama"
)

func pullCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pull hf://ORG/REPO[:QUANT][@REVISION]...",
		Short: "Download models from the Hugging Face Hub into the Hugging Face cache",
		Long: `Download models from the Hugging Face Hub into the Hugging Face cache
($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub), where
transformers, vLLM and the hf CLI find them too. A GGUF repository gives the
file matching :QUANT (case-insensitive); a safetensors repository gives its
config, tokenizer and weights. pull always asks the Hub for the revision's
current files; -m hf://... uses the cache without a network call when it can.
Interrupted downloads resume. HF_TOKEN for gated repositories, HF_ENDPOINT
for a mirror. Prints the local path of each model.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			c := hub.FromEnv()
			if c.Offline {
				return fmt.Errorf("HF_HUB_OFFLINE is set: pull needs the network")
			}
			for _, a := range args {
				if ollama.IsRef(a) {
					return fmt.Errorf("%s: pull ollama models with ollama; siskin reads them from its store with -m %s", a, a)
				}
				r, err := hub.ParseRef(a)
				if err != nil {
					return err
				}
				p := hub.NewProgress(cmd.ErrOrStderr())
				c.Progress, c.Log = p, cmd.ErrOrStderr()
				path, err := c.Pull(ctx, r)
				p.Wait()
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), path)
			}
			return nil
		},
	}
}
