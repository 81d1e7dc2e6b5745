package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/tokenizer"
)

func runCmd() *cobra.Command {
	var (
		modelPath, prompt, promptIDs string
		n, threads                   int
		temp, topP                   float64
		seed                         uint64
		printIDs, ignoreEOS          bool
	)
	var wf weightFlags
	cmd := &cobra.Command{
		Use:   "run -m MODEL [-p TEXT | --prompt-ids 0,48,...]",
		Short: "Generate text from a prompt, streaming it as it is produced",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelPath == "" {
				return fmt.Errorf("-m MODEL is required (a .gguf file or a Hugging Face folder)")
			}
			if prompt != "" && promptIDs != "" {
				return fmt.Errorf("give either -p or --prompt-ids, not both")
			}
			if n < 0 {
				return fmt.Errorf("-n must be >= 0, got %d", n)
			}
			if temp < 0 {
				return fmt.Errorf("--temp must be >= 0, got %g", temp)
			}
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			lm, err := wf.open(modelPath, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer lm.Close()
			tok := lm.Tokenizer
			var ids []int
			if promptIDs != "" {
				if ids, err = parseIDs(promptIDs); err != nil {
					return err
				}
			} else {
				ids = tok.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
			}
			if len(ids) == 0 {
				return fmt.Errorf("the prompt is empty after tokenization; give -p TEXT or --prompt-ids")
			}
			if !cmd.Flags().Changed("top-p") && lm.Generation.TopP != nil {
				topP = *lm.Generation.TopP
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			dec := tok.NewStreamDecoder()
			if !printIDs {
				// Echo the prompt the way llama.cpp's examples do.
				for _, id := range ids {
					w.WriteString(dec.Add(id))
				}
				w.Flush()
			}
			if n == 0 {
				w.WriteByte('\n')
				return nil
			}
			if ctxLen := lm.Model.Config().ContextLength; ctxLen > 0 && len(ids)+n > ctxLen {
				return fmt.Errorf("prompt of %d tokens plus %d new tokens exceeds the context length %d", len(ids), n, ctxLen)
			}
			sp := sample.Defaults()
			sp.Temperature, sp.TopP, sp.Seed, sp.Seeded = temp, topP, seed, true
			seq, err := sample.NewSequence(sp, ids)
			if err != nil {
				return err
			}
			req := engine.Request{Prompt: ids, MaxTokens: n, Sampler: seq}
			if !ignoreEOS {
				req.Stop = tok.IsEOG
			}
			first := true
			_, _, err = engine.Generate(ctx, lm.Model, req, func(id int) error {
				if printIDs {
					if !first {
						w.WriteByte(' ')
					}
					first = false
					w.WriteString(strconv.Itoa(id))
				} else {
					w.WriteString(dec.Add(id))
				}
				return w.Flush()
			})
			if !printIDs {
				w.WriteString(dec.Flush())
			}
			w.WriteByte('\n')
			return err
		},
	}
	f := cmd.Flags()
	wf.register(f)
	f.StringVarP(&modelPath, "model", "m", "", "model: a .gguf file or a Hugging Face folder")
	f.StringVarP(&prompt, "prompt", "p", "", "prompt text")
	f.StringVar(&promptIDs, "prompt-ids", "", "prompt as comma-separated token ids")
	f.IntVarP(&n, "n-predict", "n", 128, "number of tokens to generate")
	f.IntVarP(&threads, "threads", "t", 0, "threads (default: all cores)")
	f.Float64Var(&temp, "temp", 0, "temperature; 0 is greedy")
	f.Float64Var(&topP, "top-p", 1, "nucleus sampling threshold")
	f.Uint64Var(&seed, "seed", 0, "random seed for sampling")
	f.BoolVar(&printIDs, "print-ids", false, "print generated token ids instead of text")
	f.BoolVar(&ignoreEOS, "ignore-eos", false, "keep generating past end-of-sequence tokens")
	return cmd
}

func parseIDs(s string) ([]int, error) {
	var ids []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, err := strconv.Atoi(part)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("--prompt-ids: %q is not a token id", part)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
