// Command siskin runs small language models on CPUs: generate text, inspect
// model files, and (in later issues) serve an OpenAI-compatible API.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "siskin",
		Short:         "Fast CPU inference for small language models",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(runCmd(), infoCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "siskin:", err)
		os.Exit(1)
	}
}
