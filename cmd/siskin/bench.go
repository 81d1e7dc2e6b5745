package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/bench"
	"github.com/siskin-ml/siskin/mmap"
)

func benchCmd() *cobra.Command {
	var (
		modelPath     string
		prompts       []int
		gens          []int
		depths        []int
		threads       int
		reps          int
		bwMiB         int
		bwRuns        int
		asJSON        bool
		seed          uint64
		skipBandwidth bool
		profile       string
		serveURL      string
		apiKey        string
	)
	var wf weightFlags
	var tts ttsBenchFlags
	cmd := &cobra.Command{
		Use:   "bench -m MODEL [-p 512] [-n 128] [-t 2] [-r 3] [--json] | bench --tts -m DIR [--frames 125] [--ignore-eos] | bench --url URL [--concurrency 1,8] [-n 48]",
		Short: "Measure prompt processing and generation speed, like llama-bench, against the memory bandwidth",
		Long: `Measure a model like llama-bench: ppN processes an N-token prompt of random tokens as one batch
from an empty cache, tgN generates N tokens one at a time from an empty cache (after an untimed
warm-up); tokens/s is N over the time, median [min-max] over -r repetitions. With -d, each
test also runs after that many tokens of context, and its repetitions take the depths in turn
(one at each, then again), so a shared machine's changing load falls on every depth alike;
with --cpuprofile, which needs a test's repetitions in one span, they run depth by depth.

In the same run it measures the memory read bandwidth (-t goroutines summing a buffer much larger
than the last-level cache, 1 GiB by default, as one stream each and as four, 5 passes of each in
turn, the faster's median) and reports generation as a share of the ceiling that bandwidth sets:
bandwidth / bytes of weights read per token.

--tts benchmarks a Qwen3-TTS folder instead (-m DIR with its speech_tokenizer/): one
utterance of --frames frames, each frame pushed through the codec as it comes;
real-time factor (wall time / audio time), time to first audio (the call to the
first frame's PCM), ms per frame for talker, predictor, sampler and codec, and the
floors: weight bytes read per frame / read bandwidth for talker+predictor, codec
FLOPs per frame / the FP32 peak of siskin's float matrix product on cache-resident
data (--no-bandwidth skips both probes). --tts --serve times the first audio through
POST /v1/audio/speech (stream_format audio) of an in-process server instead, for -r
voices each new and then with its conditioning cached, split by engine step.

--url benchmarks a running OpenAI-compatible server (siskin serve, llama-server, vLLM) instead:
after one untimed burst as wide as the widest --concurrency (so the server has every
prompt cached), -r bursts for each --concurrency (default 1,8) of that many concurrent
POST /v1/completions of -n tokens each (greedy, ignore_eos, a short prompt per stream);
tokens/s is all the burst's completion tokens over its wall time, and each test's median
is also given as a multiple of one stream's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if serveURL != "" {
				if modelPath != "" || tts.on {
					return fmt.Errorf("--url measures a running server: give it without -m or --tts")
				}
				return benchServe(cmd, serveURL, apiKey, tts.concurrency, gens, reps, asJSON)
			}
			if modelPath == "" {
				return fmt.Errorf("-m MODEL is required (a .gguf file or a Hugging Face folder)")
			}
			if reps < 1 {
				return fmt.Errorf("-r must be at least 1, got %d", reps)
			}
			for _, n := range append(append(append([]int{}, prompts...), gens...), depths...) {
				if n < 0 {
					return fmt.Errorf("-p, -n and -d must be >= 0, got %d", n)
				}
			}
			if bwMiB < 1 {
				return fmt.Errorf("--bw-mib must be at least 1, got %d", bwMiB)
			}
			if tts.on {
				opt := bench.TTSOptions{Threads: threads, Reps: reps, Seed: seed,
					BandwidthBytes: int64(bwMiB) << 20, BandwidthRuns: bwRuns}
				if skipBandwidth {
					opt.BandwidthBytes, opt.PeakRuns = -1, -1
				}
				if profile != "" {
					opt.Profile = cpuProfiler(profile)
				}
				return benchTTS(cmd, modelPath, &tts, opt, asJSON)
			}
			lm, err := wf.open(modelPath, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer lm.Close()
			opt := bench.Options{Prompts: prompts, Gens: gens, Depths: depths, Threads: threads, Reps: reps,
				BandwidthBytes: int64(bwMiB) << 20, BandwidthRuns: bwRuns, Seed: seed}
			if skipBandwidth {
				opt.BandwidthBytes = -1
			}
			if profile != "" {
				opt.Profile = cpuProfiler(profile)
			}
			results, err := bench.Run(lm.Model, bench.Describe(modelPath, lm), opt)
			if err != nil {
				return fmt.Errorf("%s: %w", modelPath, err)
			}
			smallPagesNote(cmd.ErrOrStderr())
			if asJSON {
				return bench.WriteJSON(cmd.OutOrStdout(), results)
			}
			return bench.WriteTable(cmd.OutOrStdout(), results)
		},
	}
	f := cmd.Flags()
	wf.register(f)
	tts.register(cmd)
	f.StringVarP(&modelPath, "model", "m", "", "model: a .gguf file or a Hugging Face folder")
	f.IntSliceVarP(&prompts, "n-prompt", "p", []int{512}, "prompt lengths to test (comma-separated; 0 skips)")
	f.IntSliceVarP(&gens, "n-gen", "n", []int{128}, "generation lengths to test (comma-separated; 0 skips)")
	f.IntSliceVarP(&depths, "n-depth", "d", []int{0}, "context lengths the tests run after, untimed (comma-separated)")
	f.IntVarP(&threads, "threads", "t", 0, "threads (default: all CPUs)")
	f.IntVarP(&reps, "repetitions", "r", 3, "repetitions of each test")
	f.IntVar(&bwMiB, "bw-mib", 1024, "bandwidth probe buffer in MiB (keep it far above the L3 cache)")
	f.IntVar(&bwRuns, "bw-runs", 5, "timed passes of each read pattern of the bandwidth probe (the faster pattern's median is reported)")
	f.BoolVar(&skipBandwidth, "no-bandwidth", false, "skip the bandwidth probe (no ceiling share)")
	f.BoolVar(&asJSON, "json", false, "print a JSON array, one object per test")
	f.Uint64Var(&seed, "seed", 1, "seed of the random prompt and generation tokens")
	f.StringVar(&serveURL, "url", "", "benchmark the OpenAI-compatible server at this URL (e.g. http://127.0.0.1:8080) with bursts of concurrent completions, instead of a model")
	f.StringVar(&apiKey, "api-key", "", "--url: bearer token for the server (default $OPENAI_API_KEY)")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of each test's timed repetitions to PREFIX.TEST.pprof (e.g. PREFIX.tg128@d2048.pprof)")
	return cmd
}

// cpuProfiler returns a bench.Options.Profile that writes each test's
// profile to prefix.TEST.pprof (spaces dropped from the test's name).
func cpuProfiler(prefix string) func(test string) (func() error, error) {
	return func(test string) (func() error, error) {
		name := prefix + "." + strings.ReplaceAll(test, " ", "") + ".pprof"
		f, err := os.Create(name)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return func() error {
			pprof.StopCPUProfile()
			return f.Close()
		}, nil
	}
}

// benchServe runs bench --url: the completion bursts of bench.RunServe
// (-n's first length per request; --concurrency 1,8 unless given).
func benchServe(cmd *cobra.Command, url, key string, conc, gens []int, reps int, asJSON bool) error {
	if !cmd.Flags().Changed("concurrency") {
		conc = []int{1, 8}
	}
	if len(gens) == 0 || gens[0] < 1 {
		return fmt.Errorf("--url: -n must give the completion tokens per request (at least 1)")
	}
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	results, err := bench.RunServe(ctx, bench.ServeOptions{URL: url, APIKey: key, Concurrency: conc, Tokens: gens[0], Reps: reps})
	if err != nil {
		return err
	}
	if asJSON {
		return bench.WriteServeJSON(cmd.OutOrStdout(), results)
	}
	return bench.WriteServeTable(cmd.OutOrStdout(), results)
}

// smallPagesNote says which large mapped files (the model, its weight
// cache) are mostly mapped in 4 KiB pages after the run: their page
// cache holds them in small folios, and decoding from them measured up
// to several times slower (README, Page cache).
func smallPagesNote(w io.Writer) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		return // no 2 MiB mappings to be had
	}
	files, err := mmap.MappedFiles()
	if err != nil {
		return
	}
	for _, f := range files {
		if f.Resident >= 256<<20 && f.Huge < f.Resident/2 {
			fmt.Fprintf(w, "note: %s: %d of its %d resident MiB are mapped in 2 MiB pages; the page cache holds it in small "+
				"folios, which slows decoding (README, Page cache); `dd if=%s iflag=nocache count=0` drops it from the cache, "+
				"so that the next start reads it back in large folios where the filesystem has them (ext4, XFS)\n",
				f.Path, f.Huge>>20, f.Resident>>20, f.Path)
		}
	}
}
