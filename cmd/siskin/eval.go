package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/bench"
	"github.com/siskin-ml/siskin/eval"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/tensor"
	"github.com/siskin-ml/siskin/weightpath"
)

// openForEval loads the model under test with a weight path (converted
// weights are cached like serve's; the cache lines go to log).
func openForEval(path string, weightPath weightpath.Path, cacheDir string, log *slog.Logger) (*load.Loaded, error) {
	if err := weightpath.CheckPath(weightPath); weightPath != "" && err != nil {
		return nil, err
	}
	return load.OpenWith(path, load.Options{WeightPath: weightPath, CacheDir: cacheDir, Log: log})
}

// evalOutput is siskin eval --json: the summary with what was compared.
type evalOutput struct {
	Model         string `json:"model"`
	ModelType     string `json:"model_type"`
	Reference     string `json:"reference"`
	ReferenceType string `json:"reference_type"`
	WeightPath    string `json:"weight_path"`
	PositionsNote string `json:"positions_counted"`
	*eval.Report
}

const positionsNote = "per prompt, the n predictions of the reference's n greedy continuation tokens: the last prompt position and the first n-1 continuation positions"

func evalCmd() *cobra.Command {
	var (
		weightCache                                 string
		modelPath, refPath, weightPath, promptsPath string
		n, threads                                  int
		asJSON                                      bool
	)
	cmd := &cobra.Command{
		Use:   "eval -m MODEL --reference REF [--weight-path gguf] [-n 32] [--prompts FILE] [--json]",
		Short: "Measure how closely a model follows reference weights (top-1 agreement, KL, greedy divergence)",
		Long: `Measure how closely MODEL, loaded with a weight path, follows REF, the reference weights of
the same model (an F32, BF16 or F16 GGUF or a Hugging Face folder), on a prompt set.

For each prompt REF continues greedily for -n tokens and MODEL is fed the same tokens
(teacher forcing). Over those n positions (the predictions of the n continuation tokens:
the last prompt position and the first n-1 continuation positions) it reports:
  top-1   the share of positions where MODEL's argmax equals REF's
  KL      the mean KL(P_ref || P_model) of the softmax distributions (float64)
  div     greedy tokens MODEL produces identically to REF before the first that
          differs (n when the whole continuation matches)
End-of-sequence tokens do not stop a continuation. Prompts come from --prompts FILE, one
per line (blank lines skipped), or a built-in set of 12.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelPath == "" {
				return fmt.Errorf("-m MODEL is required (a .gguf file or a Hugging Face folder)")
			}
			if refPath == "" {
				return fmt.Errorf("--reference REF is required (the F32/BF16/F16 weights of the same model)")
			}
			if n < 1 {
				return fmt.Errorf("-n must be at least 1, got %d", n)
			}
			texts := eval.DefaultPrompts
			if promptsPath != "" {
				var err error
				if texts, err = readPrompts(promptsPath); err != nil {
					return err
				}
			}
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			ref, err := load.Open(refPath)
			if err != nil {
				return err
			}
			defer ref.Close()
			// Only cache problems are worth a line beside the report.
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			lm, err := openForEval(modelPath, weightpath.Path(weightPath), weightCache, log)
			if err != nil {
				return fmt.Errorf("%s: %w", modelPath, err)
			}
			defer lm.Close()
			if err := eval.Compatible(ref.Model, lm.Model, ref.Tokenizer, lm.Tokenizer); err != nil {
				return fmt.Errorf("cannot compare %s with reference %s: %w", modelPath, refPath, err)
			}
			if q := quantizedTypes(ref); q != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "siskin: warning: reference %s holds quantized tensors (%s); the figures measure against those\n", refPath, q)
			}
			ids := eval.Tokenize(ref.Tokenizer, texts)
			rep, err := eval.Run(ref.Model, lm.Model, texts, ids, eval.Options{NewTokens: n})
			if err != nil {
				return fmt.Errorf("%s vs %s: %w", modelPath, refPath, err)
			}
			wp := weightPath
			if wp == "" {
				wp = "gguf"
			}
			out := evalOutput{Model: modelPath, ModelType: bench.Describe(modelPath, lm).Desc,
				Reference: refPath, ReferenceType: bench.Describe(refPath, ref).Desc,
				WeightPath: wp, PositionsNote: positionsNote, Report: rep}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			return writeEvalTable(cmd.OutOrStdout(), &out)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&modelPath, "model", "m", "", "model under test: a .gguf file or a Hugging Face folder")
	f.StringVar(&refPath, "reference", "", "reference weights of the same model (F32/BF16/F16 GGUF or Hugging Face folder)")
	f.StringVar(&weightPath, "weight-path", "gguf", "how MODEL's weights are stored and computed: gguf (as in the file), w4a8, w4a16, w8a8, q4_k_m, w16a16")
	f.StringVar(&weightCache, "weight-cache", "", "directory of converted and packed weights, or off (default $SISKIN_CACHE_DIR, else the user cache directory)")
	f.IntVarP(&n, "n-predict", "n", 32, "greedy tokens per prompt (the positions measured)")
	f.StringVar(&promptsPath, "prompts", "", "file of prompts, one per line (default: a built-in set of 12)")
	f.IntVarP(&threads, "threads", "t", 0, "threads (default: all cores)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object: the summary and a per_prompt array")
	return cmd
}

func readPrompts(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--prompts: %w", err)
	}
	var out []string
	for line := range strings.Lines(string(raw)) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--prompts: %s holds no prompts (one per line)", path)
	}
	return out, nil
}

// quantizedTypes lists the tensor types of l other than F32, F16, BF16.
func quantizedTypes(l *load.Loaded) string {
	count, _ := l.Source.TensorStats()
	var q []string
	for t := range count {
		if t != tensor.F32 && t != tensor.F16 && t != tensor.BF16 {
			q = append(q, t.String())
		}
	}
	slices.Sort(q)
	return strings.Join(q, ", ")
}

func writeEvalTable(w io.Writer, o *evalOutput) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "model:     %s (%s), weight path %s\n", o.Model, o.ModelType, o.WeightPath)
	fmt.Fprintf(bw, "reference: %s (%s)\n", o.Reference, o.ReferenceType)
	fmt.Fprintf(bw, "%d prompts x %d greedy tokens; top-1 and KL over the %d predictions of the reference's continuation tokens\n\n",
		o.Prompts, o.NewTokens, o.Positions)
	fmt.Fprintf(bw, "| %3s | %-40s | %6s | %7s | %10s | %10s | %7s |\n", "#", "prompt", "tokens", "top-1", "mean KL", "max KL", "div")
	fmt.Fprintf(bw, "|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 5), strings.Repeat("-", 42), strings.Repeat("-", 8),
		strings.Repeat("-", 9), strings.Repeat("-", 12), strings.Repeat("-", 12), strings.Repeat("-", 9))
	for i, r := range o.PerPrompt {
		div := fmt.Sprintf("%d/%d", r.TokensToDivergence, r.Positions)
		fmt.Fprintf(bw, "| %3d | %-40s | %6d | %6.1f%% | %10.3g | %10.3g | %7s |\n", i+1, clip(r.Prompt, 40),
			r.PromptTokens, 100*r.Top1Agreement, r.MeanKL, r.MaxKL, div)
	}
	fmt.Fprintf(bw, "| %3s | %-40s | %6s | %6.1f%% | %10.3g | %10.3g | %7.2f |\n", "", "all", "",
		100*o.Top1Agreement, o.MeanKL, o.MaxKL, o.MeanTokensToDivergence)
	fmt.Fprintf(bw, "\ntop-1 agreement %.2f%% (%d/%d), mean KL %.4g, mean tokens to divergence %.2f of %d, %d/%d prompts match fully\n",
		100*o.Top1Agreement, o.Top1Matches, o.Positions, o.MeanKL, o.MeanTokensToDivergence, o.NewTokens, o.FullMatches, o.Prompts)
	return bw.Flush()
}

// clip shortens s to at most n runes on one line.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\t", " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
