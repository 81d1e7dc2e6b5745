package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/quantize"
)

func synthCmd() *cobra.Command {
	var (
		arch, shape, typ, out, progress string
		seed                            uint64
		threads                         int
	)
	cmd := &cobra.Command{
		Use:   "synth --arch ARCH --shape SHAPE [--type T] -o FILE.gguf|DIR",
		Short: "Write a random-weight model with a real model's shapes (for benchmarks and tests)",
		Long: `Write a GGUF model with random weights and the shapes of a published model, straight in the
target type, one tensor at a time (a 4B F16 file needs no more than a few hundred MB of memory).
Weights are N(0,1)/sqrt(fan_in), the embedding N(0, 0.2^2), norm weights 1 + 0.1 N(0,1), as in the
shared tiny test models; the same seed gives the same file. The tokenizer is a synthetic byte-level
BPE vocabulary of exactly the model's vocab size. Where each shape comes from is noted beside it in
model/ARCH/arch.go (llama's 1.7b and 4b stand for Llama-3.2-1B and -3B, without Llama 3 RoPE
scaling). Architectures marked "folder" are written as a Hugging Face folder in their official
layout instead (-o DIR; --type does not apply). Shapes:
` + synthShapesHelp(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a, err := load.Archs.Lookup(arch); err == nil && a.Folder != nil {
				return synthFolder(cmd, a, shape, out, seed, progress)
			}
			if out == "" {
				return fmt.Errorf("-o FILE.gguf is required")
			}
			ft, err := quantize.ParseFileType(typ)
			if err != nil {
				return fmt.Errorf("--type: %w", err)
			}
			if _, _, _, err := quantize.LookupShape(load.Archs, arch, shape); err != nil {
				return err
			}
			update, finish, err := newProgress(cmd.ErrOrStderr(), progress, fmt.Sprintf("synth %s %s %s", arch, shape, ft.Name))
			if err != nil {
				return err
			}
			start := time.Now()
			rep, err := quantize.Synth(out, quantize.SynthOptions{Arch: arch, Shape: shape, Archs: load.Archs, Type: ft, Seed: seed, Threads: threads, Progress: update})
			finish(err == nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s %s, %.3fB parameters, %d tensors [%s], %s in %.1fs\n",
				out, arch, shape, ft.Name, float64(rep.Elements())/1e9, len(rep.Tensors), typeCounts(rep), human(rep.OutBytes), time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&arch, "arch", "spark2_5", "architecture: "+strings.Join(load.Names(), ", "))
	cmd.Flags().StringVar(&shape, "shape", "tiny", "shape (each architecture's are listed above)")
	cmd.Flags().StringVar(&typ, "type", "q4_k_m", "weight type: "+quantize.FileTypeNames())
	cmd.Flags().StringVarP(&out, "output", "o", "", "output .gguf file (a folder for the architectures marked folder)")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().IntVarP(&threads, "threads", "t", 0, "worker goroutines (default: all CPUs)")
	cmd.Flags().StringVar(&progress, "progress", "auto", "progress on stderr: auto, on or off")
	return cmd
}

// synthShapesHelp lists each architecture's synth shapes, one a line.
func synthShapesHelp() string {
	var b strings.Builder
	for _, name := range load.Names() {
		a, _ := load.Archs.Lookup(name)
		fmt.Fprintf(&b, "  %-10s %s", a.Name, strings.Join(a.ShapeNames(), "|"))
		if a.Folder != nil {
			b.WriteString(" (folder)")
		}
		b.WriteString("\n")
	}
	return b.String()
}
