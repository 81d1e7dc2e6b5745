package hub

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// plan is what siskin needs from a repository: files to fetch and the
// path (relative to the snapshot) to hand to the loader; "" is the
// snapshot folder itself (safetensors).
type plan struct {
	files []string
	model string
	index string // model.safetensors.index.json when the weights are sharded
}

// hfExtras are the files beside safetensors weights that siskin reads:
// config, tokenizer, chat template and generation defaults.
var hfExtras = map[string]bool{
	"config.json": true, "generation_config.json": true, "tokenizer.json": true,
	"tokenizer_config.json": true, "tokenizer.model": true, "special_tokens_map.json": true,
	"added_tokens.json": true, "vocab.json": true, "merges.txt": true,
	"chat_template.jinja": true, "chat_template.json": true, "preprocessor_config.json": true,
}

var shardRE = regexp.MustCompile(`(?i)-\d{5}-of-\d{5}\.gguf$`)

// choose picks the files of ref from a repository's file names.
func choose(ref Ref, names []string) (plan, error) {
	var ggufs, safet []string
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
		low := strings.ToLower(n)
		switch {
		case strings.HasSuffix(low, ".gguf") && !strings.HasPrefix(path.Base(low), "mmproj"):
			ggufs = append(ggufs, n)
		case strings.HasSuffix(low, ".safetensors") || low == "model.safetensors.index.json":
			safet = append(safet, n)
		}
	}
	sort.Strings(ggufs)
	if ref.Quant != "" || (len(ggufs) > 0 && !has["model.safetensors"] && !has["model.safetensors.index.json"]) {
		return chooseGGUF(ref, ggufs)
	}
	if !has["config.json"] {
		return plan{}, fmt.Errorf("%s: the repository has no config.json and no GGUF file, so it is not a model siskin can run (files: %s)", ref, list(names))
	}
	var p plan
	switch {
	case has["model.safetensors.index.json"]:
		p.index = "model.safetensors.index.json"
	case has["model.safetensors"]:
		p.files = append(p.files, "model.safetensors")
	default:
		return plan{}, fmt.Errorf("%s: no model.safetensors or model.safetensors.index.json (files: %s)", ref, list(names))
	}
	for _, n := range names {
		dir, base := path.Split(n)
		switch {
		case dir == "" && hfExtras[n], dir == "additional_chat_templates/" && strings.HasSuffix(n, ".jinja"):
			p.files = append(p.files, n)
		case dir != "" && has[dir+"config.json"] && (hfExtras[base] || strings.HasSuffix(base, ".safetensors")):
			// A sub-model with its own config (a TTS model's
			// speech_tokenizer/): its config, tokenizer and weights.
			p.files = append(p.files, n)
		}
	}
	sort.Strings(p.files)
	return p, nil
}

func chooseGGUF(ref Ref, ggufs []string) (plan, error) {
	if len(ggufs) == 0 {
		return plan{}, fmt.Errorf("%s: the repository has no GGUF file", ref)
	}
	var match []string
	for _, n := range ggufs {
		if ref.Quant == "" || quantMatches(n, ref.Quant) {
			match = append(match, n)
		}
	}
	switch {
	case len(match) == 0:
		return plan{}, fmt.Errorf("%s: no GGUF file matches quant %s; the repository has: %s", ref, ref.Quant, list(ggufs))
	case len(match) > 1 && ref.Quant == "":
		return plan{}, fmt.Errorf("%s: the repository has %d GGUF files, pick one with :QUANT (hf://%s:Q4_K_M): %s", ref, len(match), ref.Repo, list(ggufs))
	case shardRE.MatchString(match[0]):
		return plan{}, fmt.Errorf("%s: %s is split into %d parts, which siskin does not load; merge them with llama-gguf-split --merge", ref, match[0], len(match))
	case len(match) > 1:
		return plan{}, fmt.Errorf("%s: %d GGUF files match quant %s: %s", ref, len(match), ref.Quant, list(match))
	}
	return plan{files: match, model: match[0]}, nil
}

// quantMatches reports whether one of the name's parts (split at '/', '-'
// and '.') is quant, case-insensitively: Q4_K matches x-Q4_K.gguf, not
// x-Q4_K_M.gguf.
func quantMatches(name, quant string) bool {
	name = name[:len(name)-len(".gguf")]
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '-' || r == '.' }) {
		if strings.EqualFold(part, quant) {
			return true
		}
	}
	return false
}

func list(names []string) string {
	const most = 40
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	return strings.Join(names, ", ")
}

// ParseIndex reads model.safetensors.index.json's weight_map and returns
// its shard file names, sorted and checked to stay in the snapshot.
func ParseIndex(raw []byte) ([]string, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, err
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("weight_map is empty")
	}
	seen := map[string]bool{}
	var shards []string
	for _, f := range idx.WeightMap {
		if seen[f] {
			continue
		}
		if err := checkFileName(f); err != nil {
			return nil, fmt.Errorf("weight_map: %w", err)
		}
		seen[f] = true
		shards = append(shards, f)
	}
	sort.Strings(shards)
	return shards, nil
}
