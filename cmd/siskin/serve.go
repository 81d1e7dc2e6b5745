package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/chat/toolcall"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/server"
)

type serveFlags struct {
	model, host, name, apiKey, cors, toolParser, reasoningParser, chatTemplate string
	port, maxModelLen, maxNumSeqs, maxBatched, threads                         int
	kvBytes, maxRequestBytes                                                   int64
	grace                                                                      time.Duration
}

func serveCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve -m MODEL",
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
			h, cleanup, summary, err := buildServer(f, log)
			if err != nil {
				return err
			}
			defer cleanup()
			ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(f.port)))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s, listening on http://%s\n", summary, ln.Addr())
			srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 30 * time.Second}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			// Stop accepting, let in-flight requests finish within the grace
			// period, then abort what is left.
			log.Info("shutting down", "grace", f.grace)
			h.SetDraining()
			sctx, cancel := context.WithTimeout(context.Background(), f.grace)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.model, "model", "m", "", "model: a .gguf file or a Hugging Face folder")
	fl.StringVar(&f.host, "host", "127.0.0.1", "address to listen on")
	fl.IntVar(&f.port, "port", 8000, "port to listen on")
	fl.StringVar(&f.name, "served-model-name", "", "model name clients use (default: the file or folder name)")
	fl.IntVar(&f.maxModelLen, "max-model-len", 0, "context length per sequence (default: the model's, at most 8192)")
	fl.IntVar(&f.maxNumSeqs, "max-num-seqs", 8, "most sequences in one step")
	fl.IntVar(&f.maxBatched, "max-num-batched-tokens", 256, "most tokens in one step (prompt chunk size)")
	fl.Int64Var(&f.kvBytes, "kv-cache-bytes", 0, "KV cache budget in bytes (default: a quarter of available memory, at most what max-num-seqs full sequences need)")
	fl.StringVar(&f.apiKey, "api-key", "", "require Authorization: Bearer KEY (default $SISKIN_API_KEY)")
	fl.StringVar(&f.cors, "cors-origins", "", "comma-separated origins allowed by CORS (off by default)")
	fl.Int64Var(&f.maxRequestBytes, "max-request-bytes", 8<<20, "largest request body accepted")
	fl.StringVar(&f.toolParser, "tool-call-parser", "auto", "tool call format: auto, none, "+strings.Join(toolcall.ToolParsers(), ", "))
	fl.StringVar(&f.reasoningParser, "reasoning-parser", "auto", "reasoning format: auto, none, "+strings.Join(toolcall.ReasoningParsers(), ", "))
	fl.StringVar(&f.chatTemplate, "chat-template", "", "Jinja chat template file (default: the model's)")
	fl.IntVarP(&f.threads, "threads", "t", 0, "threads (default: all cores)")
	fl.DurationVar(&f.grace, "shutdown-grace", 30*time.Second, "how long in-flight requests may finish after SIGTERM")
	return cmd
}

// reasoningParserFor picks the reasoning format of an architecture whose
// templates open a <think> block.
func reasoningParserFor(arch string) string {
	switch arch {
	case "spark2_5":
		return "deepseek_r1"
	case "qwen3":
		return "qwen3"
	}
	return ""
}

// buildServer loads the model and wires engine and HTTP server.
func buildServer(f serveFlags, log *slog.Logger) (*server.Server, func(), string, error) {
	if f.threads > 0 {
		kernels.SetThreads(f.threads)
	}
	lm, err := load.Open(f.model)
	if err != nil {
		return nil, nil, "", err
	}
	cfg := lm.Model.Config()
	maxLen := f.maxModelLen
	if maxLen <= 0 {
		maxLen = cfg.ContextLength
		if maxLen <= 0 || maxLen > 8192 {
			maxLen = 8192
		}
	}
	if cfg.ContextLength > 0 && maxLen > cfg.ContextLength {
		lm.Close()
		return nil, nil, "", fmt.Errorf("--max-model-len %d exceeds the model's context length %d", maxLen, cfg.ContextLength)
	}
	kvBytes := f.kvBytes
	if kvBytes <= 0 {
		kvBytes = defaultKVBytes(cfg, maxLen, f.maxNumSeqs)
	}
	tmpl, err := loadTemplate(lm, f.chatTemplate)
	if err != nil {
		lm.Close()
		return nil, nil, "", err
	}
	toolParser, reasoningParser := f.toolParser, f.reasoningParser
	if toolParser == "auto" {
		toolParser = toolcall.ToolParserFor(cfg.Arch)
	}
	if reasoningParser == "auto" {
		reasoningParser = reasoningParserFor(cfg.Arch)
	}
	if toolParser == "none" {
		toolParser = ""
	}
	if reasoningParser == "none" {
		reasoningParser = ""
	}
	if _, err := toolcall.New(toolParser, reasoningParser, nil, toolcall.Options{}); err != nil {
		lm.Close()
		return nil, nil, "", err
	}
	name := f.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(filepath.Clean(f.model)), ".gguf")
	}
	defaults := sample.Defaults()
	if g := lm.Generation; g.Temperature != nil {
		defaults.Temperature = *g.Temperature
	}
	if g := lm.Generation; g.TopP != nil {
		defaults.TopP = *g.TopP
	}
	if g := lm.Generation; g.TopK != nil {
		defaults.TopK = *g.TopK
	}
	eng := engine.New(lm.Model, engine.Config{MaxNumSeqs: f.maxNumSeqs, MaxNumBatchedTokens: f.maxBatched, KVCacheBytes: kvBytes})
	var origins []string
	if f.cors != "" {
		origins = strings.Split(f.cors, ",")
	}
	srv := server.New(server.Config{
		ModelName: name, APIKey: f.apiKey, MaxRequestBytes: f.maxRequestBytes, CORSOrigins: origins,
		MaxModelLen: maxLen, ToolParser: toolParser, ReasoningParser: reasoningParser, Defaults: defaults, Logger: log,
	}, eng, lm.Tokenizer, tmpl)
	summary := fmt.Sprintf("siskin: model %s (%s, %s weights, %d MiB), weight path gguf-native, context %d, KV budget %d MiB, %d threads",
		name, cfg.Arch, lm.Source.Format, lm.Model.WeightBytes()>>20, maxLen, kvBytes>>20, kernels.Threads())
	cleanup := func() { eng.Close(); lm.Close() }
	return srv, cleanup, summary, nil
}

// defaultKVBytes gives the KV cache a quarter of available memory, but no
// more than max-num-seqs full-length sequences need.
func defaultKVBytes(cfg *model.Config, maxLen, seqs int) int64 {
	need := cfg.KVBytes(maxLen) * int64(max(seqs, 1))
	avail := availableMemory() / 4
	if avail <= 0 || avail > need {
		return need
	}
	return avail
}

func availableMemory() int64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
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
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return t, err
}
