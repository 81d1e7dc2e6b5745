package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/chat/toolcall"
	"github.com/siskin-ml/siskin/device"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/ledger"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/server"
	"github.com/siskin-ml/siskin/weightpath"
)

type serveFlags struct {
	model, host, name, apiKey, cors, toolParser, reasoningParser, chatTemplate string
	profile, weightPath, priority, pprofAddr                                   string
	port, maxModelLen, maxNumSeqs, maxBatched, threads                         int
	kvBytes, maxRequestBytes                                                   int64
	grace                                                                      time.Duration
	printConfig                                                                bool
	weightCache                                                                string
	// flagLayer holds the settings the user gave on the command line.
	flagLayer device.Layer
}

func serveCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve -m MODEL [--speech-model QWEN3_TTS_DIR]",
		Short: "Serve an OpenAI-compatible API (completions, chat, tools, streaming, metrics)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.model == "" {
				return fmt.Errorf("-m MODEL is required (a .gguf file or a Hugging Face folder)")
			}
			if f.apiKey == "" {
				f.apiKey = os.Getenv("SISKIN_API_KEY")
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			var err error
			f.flagLayer, err = device.FlagLayer(func(set func(name, value string)) {
				cmd.Flags().Visit(func(fl *pflag.Flag) { set(fl.Name, fl.Value.String()) })
			})
			if err != nil {
				return err
			}
			if f.printConfig {
				return printConfig(cmd.OutOrStdout(), f)
			}
			return serve(cmd, f, log)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.model, "model", "m", "", "model: a .gguf file or a Hugging Face folder (a Qwen3-TTS folder serves speech)")
	addSpeechFlags(fl)
	fl.StringVar(&f.host, "host", "127.0.0.1", "address to listen on")
	fl.IntVar(&f.port, "port", 8000, "port to listen on")
	fl.StringVar(&f.name, "served-model-name", "", "model name clients use (default: the file or folder name)")
	fl.IntVar(&f.maxModelLen, "max-model-len", 0, "context length per sequence (default: the model's, at most 8192)")
	fl.IntVar(&f.maxNumSeqs, "max-num-seqs", 8, "most sequences in one step")
	fl.IntVar(&f.maxBatched, "max-num-batched-tokens", 256, "most tokens in one step (prompt chunk size)")
	// Default sampling for requests that leave a field out; only flags the
	// user sets count (see device.FlagLayer), so the values here are unused.
	fl.Float64("temperature", 1, "default temperature")
	fl.Float64("top-p", 1, "default top_p")
	fl.Int("top-k", 0, "default top_k")
	fl.Float64("min-p", 0, "default min_p")
	fl.Float64("repetition-penalty", 1, "default repetition_penalty")
	fl.String("kv-type", device.KVCacheF16, "KV cache element type: f16 (half the memory and bandwidth, llama.cpp's default), q8_0 (blocks of 32 int8 and a scale: about a quarter of f32's bytes, faster at long contexts) or f32 (profile key kv_cache_type)")
	fl.Int64Var(&f.kvBytes, "kv-cache-bytes", 0, "KV cache budget in bytes (default: a quarter of available memory, at most what max-num-seqs full sequences need)")
	fl.StringVar(&f.apiKey, "api-key", "", "require Authorization: Bearer KEY (default $SISKIN_API_KEY)")
	fl.StringVar(&f.cors, "cors-origins", "", "comma-separated origins allowed by CORS (off by default)")
	fl.Int64Var(&f.maxRequestBytes, "max-request-bytes", 8<<20, "largest request body accepted")
	fl.StringVar(&f.toolParser, "tool-call-parser", "auto", "tool call format: auto, none, "+strings.Join(toolcall.ToolParsers(), ", "))
	fl.StringVar(&f.reasoningParser, "reasoning-parser", "auto", "reasoning format: auto, none, "+strings.Join(toolcall.ReasoningParsers(), ", "))
	fl.StringVar(&f.chatTemplate, "chat-template", "", "Jinja chat template file (default: the model's)")
	fl.IntVarP(&f.threads, "threads", "t", 0, "threads (default: the profile's, else physical cores)")
	fl.StringVar(&f.profile, "profile", "", "deploy profile: a YAML file or a built-in name ("+strings.Join(device.BuiltinNames(), ", ")+"); default: auto from the device probe")
	fl.StringVar(&f.weightPath, "weight-path", "", "weight layout and kernels: auto, gguf, w4a8, w4a16, w8a8, q4_k_m or w16a16")
	fl.StringVar(&f.weightCache, "weight-cache", "", "directory of converted and packed weights, or off (default $SISKIN_CACHE_DIR, else the user cache directory)")
	fl.StringVar(&f.priority, "priority", "", "speed or fidelity (picks the weight path when auto)")
	fl.BoolVar(&f.printConfig, "print-config", false, "print the resolved configuration with the source of each value, and exit")
	fl.StringVar(&f.pprofAddr, "pprof", "", "serve Go's runtime profiles (/debug/pprof/: CPU, heap, goroutines) on this address, e.g. localhost:6060, apart from the API (off by default; it has no authentication, keep it local)")
	fl.DurationVar(&f.grace, "shutdown-grace", 30*time.Second, "how long in-flight requests may finish after SIGTERM (readiness turns 503 first; keep it below the pod's terminationGracePeriodSeconds)")
	return cmd
}

// serve listens at once, answering probes while the model loads (/livez
// 200, /health 503), then serves the API until SIGINT or SIGTERM (or the
// command's context ends), and drains: readiness turns 503 and new
// generation requests get 503 while those in flight finish, for at most
// --shutdown-grace; then it closes and returns nil.
func serve(cmd *cobra.Command, f serveFlags, log *slog.Logger) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(f.port)))
	if err != nil {
		return err
	}
	if f.pprofAddr != "" {
		stopProfiles, err := serveProfiles(f.pprofAddr, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopProfiles()
	}
	var handler atomic.Pointer[http.Handler]
	loading := server.LoadingHandler()
	handler.Store(&loading)
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) })}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	h, cleanup, summary, err := buildServed(f, log)
	if err != nil {
		srv.Close()
		return err
	}
	defer cleanup()
	api := h.Handler()
	handler.Store(&api)
	fmt.Fprintf(cmd.OutOrStdout(), "%s, listening on http://%s\n", summary, ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("draining", "grace", f.grace, "in_flight", h.InFlight())
	// Leave a little of the grace for closing connections and stopping
	// the engine, so the process is gone when the grace is over.
	dctx, cancel := context.WithTimeout(context.Background(), f.grace-min(f.grace/10, 2*time.Second))
	defer cancel()
	if err := h.Drain(dctx); err != nil {
		log.Warn("grace period over; aborting the requests left", "in_flight", h.InFlight())
	}
	// Close idle keep-alive connections; whatever still runs is cut.
	sctx, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	log.Info("stopped")
	return nil
}

// serveProfiles serves net/http/pprof's handlers on their own listener at
// addr (never on the API's), so that a loaded server can be profiled; it
// returns the function that closes it.
func serveProfiles(addr string, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	go srv.Serve(ln)
	log.Info("profiles", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { srv.Close() }, nil
}

// resolve layers the configuration: flags > --profile > the model's
// generation_config > the auto profile > defaults.
func resolve(f serveFlags) (device.Settings, *device.Info, error) {
	info := device.Probe()
	layers := []device.Layer{f.flagLayer}
	if f.profile != "" {
		p, err := device.OpenProfile(f.profile)
		if err != nil {
			return nil, nil, err
		}
		layers = append(layers, p.Layer())
	}
	if f.model != "" {
		g, err := load.ReadGeneration(f.model)
		if err != nil {
			return nil, nil, err
		}
		gl, err := device.GenerationConfigLayer(device.GenerationDefaults{Temperature: g.Temperature, TopP: g.TopP, TopK: g.TopK})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.model, err)
		}
		layers = append(layers, gl)
	}
	layers = append(layers, device.AutoProfile(info).Layer())
	return device.Resolve(layers...), info, nil
}

func printConfig(w io.Writer, f serveFlags) error {
	set, info, err := resolve(f)
	if err != nil {
		return err
	}
	path, why := set.WeightPath(info)
	if f.model != "" {
		// The model must at least open (the weights are not converted);
		// an automatic path is adjusted for it as serve would.
		s, err := load.Source(f.model)
		if err != nil {
			return err
		}
		if autoWeightPath(set) {
			path, why = weightpath.ForSource(s, path, why)
		}
		s.Close()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range set {
		v := "unset"
		if s.Value != nil {
			v = fmt.Sprint(s.Value)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, v, s.Source)
	}
	fmt.Fprintf(tw, "weight path\t%s\t%s\n", path, why)
	return tw.Flush()
}

// autoWeightPath reports whether the weight path was left to the device.
func autoWeightPath(set device.Settings) bool {
	v, _ := set.Get(device.KeyWeightPath).Value.(string)
	return v == "" || device.WeightPath(v) == device.WeightPathAuto
}

// buildServer loads the model and wires engine and HTTP server; heap is
// what the engine may hold on the Go heap beyond what loading left there
// (llmHeapBytes).
func buildServer(f serveFlags, log *slog.Logger) (srv *server.Server, cleanup func(), summary string, heap int64, err error) {
	set, info, err := resolve(f)
	if err != nil {
		return nil, nil, "", 0, err
	}
	weightPath, why := set.WeightPath(info)
	if err := weightpath.CheckPath(weightPath); err != nil {
		return nil, nil, "", 0, fmt.Errorf("--weight-path: %w", err)
	}
	if n := set.Int(device.KeyThreads); n > 0 {
		kernels.SetThreads(int(n))
	}
	lm, err := load.OpenWith(f.model, load.Options{WeightPath: weightPath, Why: why, Auto: autoWeightPath(set), CacheDir: f.weightCache, Log: log})
	if err != nil {
		return nil, nil, "", 0, err
	}
	weightPath = lm.Weights.Path()
	log.Info("weight path", "path", weightPath, "why", lm.WeightPathWhy)
	fail := func(err error) (*server.Server, func(), string, int64, error) {
		lm.Close()
		return nil, nil, "", 0, err
	}
	cfg := lm.Model.Config()
	// Before any cache is made or budgeted: KVBytes counts its element size.
	if cfg.KVType, err = kv.ParseType(set.String(device.KeyKVCacheType)); err != nil {
		return fail(err)
	}
	if err := cfg.KVType.CheckHeadDim(cfg.HeadDim); err != nil {
		return fail(fmt.Errorf("%s: %w", device.KeyKVCacheType, err))
	}
	maxLen := int(set.Int(device.KeyMaxModelLen))
	if maxLen <= 0 {
		maxLen = cfg.ContextLength
		if maxLen <= 0 || maxLen > 8192 {
			maxLen = 8192
		}
	}
	if cfg.ContextLength > 0 && maxLen > cfg.ContextLength {
		return fail(fmt.Errorf("max_model_len %d exceeds the model's context length %d", maxLen, cfg.ContextLength))
	}
	seqs := int(set.Int(device.KeyMaxNumSeqs))
	kvBytes := set.Int(device.KeyKVCacheBytes)
	// An automatic budget never exceeds what max_num_seqs full sequences need.
	if need := cfg.KVBytes(maxLen) * int64(max(seqs, 1)); kvBytes <= 0 || set.Get(device.KeyKVCacheBytes).Source != device.SourceFlag && kvBytes > need {
		kvBytes = need
	}
	tmpl, err := loadTemplate(lm, f.chatTemplate)
	if err != nil {
		return fail(err)
	}
	toolParser, reasoningParser := f.toolParser, f.reasoningParser
	if toolParser == "auto" {
		toolParser = load.ToolParserFor(cfg.Arch)
	}
	if reasoningParser == "auto" {
		reasoningParser = load.ReasoningParserFor(cfg.Arch)
	}
	if toolParser == "none" {
		toolParser = ""
	}
	if reasoningParser == "none" {
		reasoningParser = ""
	}
	if _, err := toolcall.New(toolParser, reasoningParser, nil, toolcall.Options{}); err != nil {
		return fail(err)
	}
	name := f.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(filepath.Clean(f.model)), ".gguf")
	}
	defaults := sample.Defaults()
	defaults.Temperature = set.Float(device.KeyTemperature)
	defaults.TopP = set.Float(device.KeyTopP)
	defaults.TopK = int(set.Int(device.KeyTopK))
	defaults.MinP = set.Float(device.KeyMinP)
	defaults.RepetitionPenalty = set.Float(device.KeyRepetitionPenalty)
	if err := defaults.Validate(0); err != nil {
		return fail(fmt.Errorf("sampling defaults: %w", err))
	}
	maxToks := int(set.Int(device.KeyMaxNumBatchedTokens))
	eng := engine.New(lm.Model, engine.Config{MaxNumSeqs: seqs, MaxNumBatchedTokens: maxToks, KVCacheBytes: kvBytes})
	led := ledger.New()
	lm.RegisterMemory(led)
	eng.RegisterMemory(led)
	var origins []string
	if f.cors != "" {
		origins = strings.Split(f.cors, ",")
	}
	srv = server.New(server.Config{
		ModelName: name, APIKey: f.apiKey, MaxRequestBytes: f.maxRequestBytes, CORSOrigins: origins,
		MaxModelLen: maxLen, ToolParser: toolParser, ReasoningParser: reasoningParser, Defaults: defaults, Logger: log,
		Pooling: server.PoolingFromDir(lm.Source.Path), Version: version(),
		Debug: map[string]http.Handler{"/debug/memory": led.Handler()},
	}, eng, lm.Tokenizer, tmpl)
	summary = fmt.Sprintf("siskin: model %s (%s, %s, %d MiB of weights), weight path %s, context %d, KV budget %d MiB (%s), %d threads",
		name, cfg.Arch, lm.Source.Format, lm.Model.HeldBytes()>>20, weightPath, maxLen, kvBytes>>20, cfg.KVType, kernels.Threads())
	cleanup = func() { eng.Close(); lm.Close() }
	return srv, cleanup, summary, llmHeapBytes(cfg, kvBytes, maxToks, seqs), nil
}

// loadTemplate finds the chat template: a file given on the command line,
// the GGUF's tokenizer.chat_template, or the HF folder's.
func loadTemplate(lm *load.Loaded, file string) (*chat.Template, error) {
	if file != "" {
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		t, err := chat.Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return t, nil
	}
	if lm.Source.GGUF != nil {
		src, ok := lm.Source.GGUF.String("tokenizer.chat_template")
		if !ok {
			return nil, nil
		}
		t, err := chat.Parse(src)
		if err != nil {
			return nil, fmt.Errorf("%s: tokenizer.chat_template: %w", lm.Source.Path, err)
		}
		return t, nil
	}
	t, err := chat.FromHFDir(lm.Source.Path)
	if errors.Is(err, chat.ErrNoTemplate) {
		return nil, nil
	}
	return t, err
}
