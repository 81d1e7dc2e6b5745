// Command siskin runs small language models and speech synthesis on CPUs:
// generate text, serve an OpenAI-compatible API, convert, inspect and
// benchmark model files.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "siskin:", err)
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "siskin",
		Short:         "Fast CPU inference for small language models",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// -m hf://... and -m ollama://... become local paths first.
		PersistentPreRunE: resolveModelFlags,
	}
	root.AddCommand(runCmd(), infoCmd(), serveCmd(), quantizeCmd(), synthCmd(), benchCmd(), evalCmd(), probeCmd(), tokenizeCmd(), templateCmd(), ledgerCmd(), speakCmd())
	root.AddCommand(pullCmd(), lsCmd(), rmCmd())
	return root
}
