package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/quantize"
)

func synthCmd() *cobra.Command {
	var (
		arch, shape, typ, out, progress string
		seed                            uint64
		threads                         int
	)
	cmd := &cobra.Command{
		Use:   "synth --arch spark2_5|qwen3|llama --shape tiny|0.6b|1.7b|4b --type T -o FILE.gguf",
		Short: "Write a random-weight model with a real model's shapes (for benchmarks and tests)",
		Long: `Write a GGUF model with random weights and the shapes of a published model, straight in the
target type, one tensor at a time (a 4B F16 file needs no more than a few hundred MB of memory).
Weights are N(0,1)/sqrt(fan_in), the embedding N(0, 0.2^2), norm weights 1 + 0.1 N(0,1), as in the
shared tiny test models; the same seed gives the same file. The tokenizer is a synthetic byte-level
BPE vocabulary of exactly the model's vocab size. Shapes: spark2_5 tiny|1.7b|4b (docs/spark2_5.md);
qwen3 tiny|0.6b|1.7b|4b (Qwen3 config.json files); llama tiny|1.7b|4b, where 1.7b and 4b stand for
Llama-3.2-1B and -3B (no Llama of those sizes exists; Llama 3 RoPE scaling is left out).
--arch qwen3_tts --shape tiny|0.6b|1.7b -o DIR writes a Qwen3-TTS CustomVoice folder instead
(safetensors, tokenizer files and speech_tokenizer/; --type does not apply).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if arch == "qwen3_tts" {
				return synthQwen3TTS(cmd, shape, out, seed, progress)
			}
			if out == "" {
				return fmt.Errorf("-o FILE.gguf is required")
			}
			ft, err := quantize.ParseFileType(typ)
			if err != nil {
				return fmt.Errorf("--type: %w", err)
			}
			if _, err := quantize.LookupShape(arch, shape); err != nil {
				return err
			}
			update, finish, err := newProgress(cmd.ErrOrStderr(), progress, fmt.Sprintf("synth %s %s %s", arch, shape, ft.Name))
			if err != nil {
				return err
			}
			start := time.Now()
			rep, err := quantize.Synth(out, quantize.SynthOptions{Arch: arch, Shape: shape, Type: ft, Seed: seed, Threads: threads, Progress: update})
			finish(err == nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s %s, %.3fB parameters, %d tensors [%s], %s in %.1fs\n",
				out, arch, shape, ft.Name, float64(rep.Elements())/1e9, len(rep.Tensors), typeCounts(rep), human(rep.OutBytes), time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&arch, "arch", "spark2_5", "architecture: spark2_5, qwen3, llama or qwen3_tts")
	cmd.Flags().StringVar(&shape, "shape", "tiny", "shape: tiny, 0.6b (qwen3), 1.7b or 4b")
	cmd.Flags().StringVar(&typ, "type", "q4_k_m", "weight type: "+quantize.FileTypeNames())
	cmd.Flags().StringVarP(&out, "output", "o", "", "output .gguf file")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().IntVarP(&threads, "threads", "t", 0, "worker goroutines (default: all CPUs)")
	cmd.Flags().StringVar(&progress, "progress", "auto", "progress on stderr: auto, on or off")
	return cmd
}
