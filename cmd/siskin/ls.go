package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/hub"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/ollama"
)

func lsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the models in the Hugging Face cache and ollama's store, with size, architecture and quant",
		Long: `List the models siskin can take with -m: GGUF files and safetensors snapshots
in the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub)
and models in ollama's store ($OLLAMA_MODELS or ~/.ollama/models). An
architecture siskin does not run is marked "(unsupported)".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "MODEL\tSIZE\tARCH\tQUANT\tPATH")
			repos, err := hub.Scan(hub.CacheDir())
			if err != nil {
				return fmt.Errorf("Hugging Face cache %s: %w", hub.CacheDir(), err)
			}
			for _, r := range repos {
				for _, s := range r.Snapshots {
					listSnapshot(w, r.Repo, s)
				}
			}
			models, errs := ollama.List(ollama.Dir())
			for _, m := range models {
				arch, quant := ggufKind(m.GGUF)
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.Ref, hub.Size(m.Size), arch, quant, m.GGUF)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			for _, e := range errs {
				fmt.Fprintln(cmd.ErrOrStderr(), "siskin ls:", e)
			}
			return nil
		},
	}
}

// listSnapshot writes a row per GGUF file of a snapshot, and one for the
// snapshot itself when it holds safetensors weights.
func listSnapshot(w io.Writer, repo string, s hub.Snapshot) {
	rev := ""
	switch {
	case len(s.Refs) > 0 && s.Refs[0] == "main":
	case len(s.Refs) > 0:
		rev = "@" + s.Refs[0]
	default:
		rev = "@" + s.Commit
	}
	hasConfig, weights := false, int64(0)
	for _, f := range s.Files {
		p := filepath.Join(s.Dir, filepath.FromSlash(f))
		switch {
		case f == "config.json":
			hasConfig = true
		case strings.HasSuffix(f, ".safetensors"):
			weights += fileSize(p)
		case strings.HasSuffix(strings.ToLower(f), ".gguf") && !strings.HasPrefix(path.Base(f), "mmproj"):
			arch, quant := ggufKind(p)
			fmt.Fprintf(w, "hf://%s%s%s\t%s\t%s\t%s\t%s\n", repo, quantSuffix(f), rev, hub.Size(fileSize(p)), arch, quant, p)
		}
	}
	if hasConfig && weights > 0 {
		arch, dtype := configKind(filepath.Join(s.Dir, "config.json"))
		fmt.Fprintf(w, "hf://%s%s\t%s\t%s\t%s\t%s\n", repo, rev, hub.Size(weights), arch, dtype, s.Dir)
	}
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

var quantPart = regexp.MustCompile(`(?i)^(i?q\d\w*|f16|f32|bf16|tq\d_\d)$`)

// quantSuffix is ":QUANT" with the part of a GGUF file name that names
// its quantization, as -m hf://ORG/REPO:QUANT matches it.
func quantSuffix(name string) string {
	parts := strings.FieldsFunc(strings.TrimSuffix(name, path.Ext(name)), func(r rune) bool { return r == '/' || r == '-' || r == '.' })
	for i := len(parts) - 1; i >= 0; i-- {
		if quantPart.MatchString(parts[i]) {
			return ":" + parts[i]
		}
	}
	return ""
}

// fileTypes names llama.cpp's LLAMA_FTYPE values (general.file_type).
var fileTypes = map[uint64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
	11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
	18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
	25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M",
	32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
}

// ggufKind reads a GGUF's architecture and file type ("?" when the
// header does not say or does not parse).
func ggufKind(p string) (arch, quant string) {
	f, err := gguf.Open(p)
	if err != nil {
		return "? (not a GGUF siskin reads)", "?"
	}
	defer f.Close()
	arch, quant = "?", "?"
	if a, ok := f.String("general.architecture"); ok {
		arch = supported(a)
	}
	if ft, ok := f.Uint("general.file_type"); ok {
		if n, ok := fileTypes[ft]; ok {
			return arch, n
		}
	}
	return arch, mainType(f)
}

// mainType is the type holding most of a GGUF's matrix bytes, for files
// that do not set general.file_type.
func mainType(f *gguf.File) string {
	bytes := map[string]int{}
	best := "?"
	for _, t := range f.Tensors {
		if len(t.Dims) < 2 {
			continue
		}
		n := t.Type.String()
		if bytes[n] += len(t.Data); best == "?" || bytes[n] > bytes[best] {
			best = n
		}
	}
	return best
}

func supported(arch string) string {
	if _, ok := load.Architectures[arch]; !ok {
		return arch + " (unsupported)"
	}
	return arch
}

// configKind reads model_type and the weights' dtype from config.json.
func configKind(p string) (arch, dtype string) {
	var cfg struct {
		ModelType  string `json:"model_type"`
		TorchDType string `json:"torch_dtype"`
		DType      string `json:"dtype"`
	}
	raw, err := os.ReadFile(p)
	if err != nil || json.Unmarshal(raw, &cfg) != nil {
		return "?", "?"
	}
	d := cfg.DType
	if d == "" {
		d = cfg.TorchDType
	}
	switch d {
	case "bfloat16":
		d = "BF16"
	case "float16":
		d = "F16"
	case "float32":
		d = "F32"
	case "":
		d = "?"
	}
	return supported(cfg.ModelType), d
}
