package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/quantize"
	"github.com/siskin-ml/siskin/tensor"
)

func quantizeCmd() *cobra.Command {
	var (
		typ             string
		threads         int
		allowRequantize bool
		progress        string
	)
	cmd := &cobra.Command{
		Use:   "quantize IN OUT --type " + quantize.FileTypeNames(),
		Short: "Convert a GGUF file or Hugging Face folder to a GGUF file of another weight type",
		Long: `Convert a model (a GGUF file with F32/F16/BF16 weights, or a Hugging Face folder with
config.json, tokenizer.json and safetensors) to a GGUF v3 file that llama.cpp and siskin load.
Quantization uses ggml's reference quantizers and llama-quantize's type mix (q4_k_m puts Q6_K on
the output head and on attn_v/ffn_down of some layers), so from the same F32 weights the file has
the same bytes as llama-quantize's. Norms and other vectors stay F32.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ft, err := quantize.ParseFileType(typ)
			if err != nil {
				return fmt.Errorf("--type: %w", err)
			}
			update, finish, err := newProgress(cmd.ErrOrStderr(), progress, "quantize "+ft.Name)
			if err != nil {
				return err
			}
			start := time.Now()
			rep, err := quantize.File(args[0], args[1], quantize.Options{Type: ft, Threads: threads, AllowRequantize: allowRequantize, Progress: update, Archs: load.Archs})
			finish(err == nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s (%s): %d tensors [%s], %s -> %s in %.1fs\n",
				args[0], args[1], ft.Name, len(rep.Tensors), typeCounts(rep), human(rep.InBytes), human(rep.OutBytes), time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&typ, "type", "", "output type: "+quantize.FileTypeNames())
	cmd.Flags().IntVarP(&threads, "threads", "t", 0, "worker goroutines (default: all CPUs)")
	cmd.Flags().BoolVar(&allowRequantize, "allow-requantize", false, "accept already quantized input tensors (dequantized first; compounds the error)")
	cmd.Flags().StringVar(&progress, "progress", "auto", "progress on stderr: auto (a bar on a terminal, else a line per 10% on runs over 5s), on, off")
	cmd.MarkFlagRequired("type")
	return cmd
}

// typeCounts renders "Q4_K x 169, Q6_K x 29, F32 x 57".
func typeCounts(rep *quantize.Report) string {
	counts := rep.Count()
	var types []tensor.Type
	for t := range counts {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool {
		return counts[types[i]] > counts[types[j]] || counts[types[i]] == counts[types[j]] && types[i] < types[j]
	})
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s x %d", t, counts[t])
	}
	return strings.Join(parts, ", ")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress returns a progress callback (elements done of total) and a
// function to call at the end. On a terminal it draws an mpb bar; else,
// so that logs of long runs still show progress without escape codes, it
// prints a plain line at every 10% once the run has taken 5 seconds.
func newProgress(w io.Writer, mode, label string) (func(done, total int64), func(ok bool), error) {
	switch mode {
	case "off":
		return nil, func(bool) {}, nil
	case "auto", "on":
	default:
		return nil, nil, fmt.Errorf("--progress %q: want auto, on or off", mode)
	}
	if isTerminal(w) {
		p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond))
		var bar *mpb.Bar
		update := func(done, total int64) {
			if bar == nil {
				bar = p.AddBar(total,
					mpb.PrependDecorators(decor.Name(label+" "), decor.Percentage(decor.WCSyncSpace)),
					mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO), decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)))
			}
			bar.SetCurrent(done)
		}
		finish := func(ok bool) {
			if bar != nil && !bar.Completed() {
				bar.Abort(!ok)
			}
			p.Wait()
		}
		return update, finish, nil
	}
	start := time.Now()
	lastTenth := int64(-1)
	update := func(done, total int64) {
		if total <= 0 {
			return
		}
		tenth := done * 10 / total
		el := time.Since(start)
		if tenth == lastTenth || (mode == "auto" && el < 5*time.Second) {
			return
		}
		lastTenth = tenth
		eta := ""
		if done > 0 && done < total {
			eta = fmt.Sprintf(", about %s left", (time.Duration(float64(el) * float64(total-done) / float64(done))).Round(time.Second))
		}
		fmt.Fprintf(w, "%s: %d%% after %s%s\n", label, done*100/total, el.Round(time.Second), eta)
	}
	return update, func(bool) {}, nil
}
