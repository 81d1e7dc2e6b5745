package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/siskin-ml/siskin/device"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/weightpath"
)

// weightFlags are the --weight-path, --weight-cache and --kv-type flags
// of the commands that load a model the way serve does (run, bench,
// ledger).
type weightFlags struct{ path, cache, kvType string }

func (w *weightFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&w.kvType, "kv-type", device.KVCacheF16, "KV cache element type: f16 (half the memory and bandwidth, llama.cpp's default), q8_0 (blocks of 32 int8 and a scale: about a quarter of f32's bytes, faster at long contexts) or f32")
	fl.StringVar(&w.path, "weight-path", "auto", "weight layout and kernels: auto (chosen from the CPU, as serve does), gguf, w4a8, w4a16, w8a8, q4_k_m or w16a16")
	fl.StringVar(&w.cache, "weight-cache", "", "directory of converted and packed weights, or off (default $SISKIN_CACHE_DIR, else the user cache directory)")
}

// open loads model with the chosen weight path; weight-cache problems
// (not hits and misses) are logged to log.
func (w *weightFlags) open(model string, log io.Writer) (*load.Loaded, error) {
	path := weightpath.Path(w.path)
	auto := path == "" || path == device.WeightPathAuto
	if auto {
		path, _ = device.ChooseWeightPath(device.Probe(), device.PrioritySpeed)
	}
	if err := weightpath.CheckPath(path); err != nil {
		return nil, err
	}
	kvType, err := kv.ParseType(w.kvType)
	if err != nil {
		return nil, fmt.Errorf("--kv-type: %w", err)
	}
	l := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	lm, err := load.OpenWith(model, load.Options{WeightPath: path, Auto: auto, CacheDir: w.cache, Log: l})
	if err != nil {
		return nil, err
	}
	if err := kvType.CheckHeadDim(lm.Model.Config().HeadDim); err != nil {
		lm.Close()
		return nil, fmt.Errorf("--kv-type: %w", err)
	}
	lm.Model.Config().KVType = kvType
	return lm, nil
}
