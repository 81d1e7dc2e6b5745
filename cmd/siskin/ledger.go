package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/ledger"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/tokenizer"
)

func ledgerCmd() *cobra.Command {
	var (
		modelPath     string
		ctxLen, gen   int
		threads       int
		jsonOut, noGC bool
	)
	var wf weightFlags
	cmd := &cobra.Command{
		Use:   "ledger -m MODEL [--ctx N] [--json]",
		Short: "Load a model, run one request, and print where every resident byte is",
		Long: `Load a model, run one request that fills --ctx positions (a prompt of ctx - n tokens,
then n greedy tokens), and print the memory ledger: every mapped or allocated buffer by
name (weights per layer with their resident pages, KV per layer, RoPE tables, norm
vectors, tokenizer, Go runtime classes, the program itself) next to the process's RSS
and Pss summed from /proc/self/smaps, and the unattributed rest. --json prints the
same report as GET /debug/memory does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelPath == "" {
				return fmt.Errorf("-m MODEL is required (a .gguf file or a Hugging Face folder)")
			}
			if gen < 1 || ctxLen <= gen {
				return fmt.Errorf("--ctx (%d) must exceed -n (%d), and -n must be >= 1", ctxLen, gen)
			}
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			rep, run, err := measureLedger(&wf, cmd.ErrOrStderr(), modelPath, ctxLen, gen, !noGC)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if jsonOut {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			fmt.Fprintf(out, "%s: %d prompt + %d generated tokens in %.1fs\n\n", modelPath, run.prompt, run.generated, run.elapsed.Seconds())
			return rep.WriteTable(out)
		},
	}
	f := cmd.Flags()
	wf.register(f)
	f.StringVarP(&modelPath, "model", "m", "", "model: a .gguf file or a Hugging Face folder")
	f.IntVar(&ctxLen, "ctx", 256, "positions the request fills (prompt plus generated tokens)")
	f.IntVarP(&gen, "n-predict", "n", 8, "tokens to generate after the prompt")
	f.IntVarP(&threads, "threads", "t", 0, "threads (default: all cores)")
	f.BoolVar(&jsonOut, "json", false, "print the report as JSON")
	f.BoolVar(&noGC, "no-gc", false, "report without a garbage collection first (dead step buffers then count as heap objects)")
	return cmd
}

type ledgerRun struct {
	prompt, generated int
	elapsed           time.Duration
}

// prefillChunk bounds the tokens of one forward call, so the step's
// activation buffers stay small next to the model.
const prefillChunk = 256

// measureLedger loads the model with every buffer registered, runs one
// request straight through the model (so its KV cache is still held and
// listed per layer when the report is taken) and reports.
func measureLedger(wf *weightFlags, log io.Writer, path string, ctxLen, gen int, gc bool) (*ledger.Report, ledgerRun, error) {
	led := ledger.New()
	lm, err := wf.open(path, log)
	if err != nil {
		return nil, ledgerRun{}, err
	}
	defer lm.Close()
	lm.RegisterMemory(led)
	m := lm.Model
	if c := m.Config().ContextLength; c > 0 && ctxLen > c {
		return nil, ledgerRun{}, fmt.Errorf("--ctx %d exceeds the model's context length %d", ctxLen, c)
	}
	ids := ledgerPrompt(lm.Tokenizer, ctxLen-gen, m.Config().Vocab)
	cache := m.NewCache()
	cache.RegisterMemory(led, "KV")
	start := time.Now()
	var logits []float32
	for i := 0; i < len(ids); i += prefillChunk {
		if logits, err = m.Forward(cache, ids[i:min(i+prefillChunk, len(ids))], false); err != nil {
			return nil, ledgerRun{}, err
		}
	}
	run := ledgerRun{prompt: len(ids)}
	for ; run.generated < gen; run.generated++ {
		// Greedy, ignoring end-of-text: the point is to fill the context.
		if logits, err = m.Forward(cache, []int{sample.Argmax(logits)}, false); err != nil {
			return nil, ledgerRun{}, err
		}
	}
	run.elapsed = time.Since(start)
	if gc {
		// Step buffers of the run are garbage now; without a collection
		// they would still count as heap objects.
		runtime.GC()
	}
	rep := led.Report()
	runtime.KeepAlive(cache)
	return rep, run, nil
}

// ledgerPrompt is n tokens of ordinary English (repeated), so the
// tokenizer's word cache sees real use; a vocabulary that cannot encode it
// gets a sweep of ids instead.
func ledgerPrompt(tok *tokenizer.Tokenizer, n, vocab int) []int {
	const text = "The river runs past the old mill, where the miller keeps a ledger of every sack of grain he grinds. "
	ids := tok.Encode(strings.Repeat(text, 4), tokenizer.EncodeOptions{AddSpecial: true})
	for len(ids) > 0 && len(ids) < n {
		ids = append(ids, ids...)
	}
	if len(ids) == 0 {
		for i := range n {
			ids = append(ids, (i*7+1)%vocab)
		}
	}
	return ids[:n]
}
