package device

import (
	"errors"
	"fmt"
	"strings"
)

// Sources that Resolve reports besides a profile's Source.
const (
	SourceFlag             = "flag"
	SourceGenerationConfig = "generation_config"
	SourceDefault          = "default"
	SourceUnset            = "unset"
)

// Layer is a named, partial set of settings: what one source (command-
// line flags, a profile, the model's generation_config) says. Values are
// validated when set, so Resolve never sees a bad one.
type Layer struct {
	Source string
	values map[string]any
}

// NewLayer returns an empty layer for source.
func NewLayer(source string) Layer {
	return Layer{Source: source, values: map[string]any{}}
}

// Set validates v (of the setting's type or convertible to it: any
// integer for an integer setting, any integer or float for a number) and
// stores it.
func (l *Layer) Set(name string, v any) error {
	s, ok := specFor(name)
	if !ok {
		return fmt.Errorf("unknown setting %q", name)
	}
	v, err := s.validate(v)
	if err != nil {
		return err
	}
	if l.values == nil {
		l.values = map[string]any{}
	}
	l.values[name] = v
	return nil
}

// SetString parses text for the setting and stores it.
func (l *Layer) SetString(name, text string) error {
	s, ok := specFor(name)
	if !ok {
		return fmt.Errorf("unknown setting %q", name)
	}
	v, err := s.parse(text)
	if err != nil {
		return err
	}
	return l.Set(name, v)
}

// Get returns the layer's value for a setting.
func (l Layer) Get(name string) (any, bool) {
	v, ok := l.values[name]
	return v, ok
}

// Len is the number of settings the layer holds.
func (l Layer) Len() int { return len(l.values) }

// flagNames maps command-line flag names that differ from the setting
// names (after "-" becomes "_") to settings.
var flagNames = map[string]string{
	"temp":           KeyTemperature,
	"repeat_penalty": KeyRepetitionPenalty,
	"kv_type":        KeyKVCacheType,
}

// zeroMeansAuto are the settings whose command-line flags use 0 for
// "decide for me" (serve's --threads, --max-model-len, --kv-cache-bytes):
// an explicit 0 leaves the setting to the lower layers.
var zeroMeansAuto = map[string]bool{KeyThreads: true, KeyMaxModelLen: true, KeyKVCacheBytes: true}

// FlagLayer builds the "flag" layer from the flags the user set. visit
// must call set once per flag given on the command line (not for flags
// left at their defaults, or they would mask the profile), with the
// flag's long name and value as text; flags that are not settings
// (--host, --port, --profile) are ignored. With cobra:
//
//	flags, err := device.FlagLayer(func(set func(name, value string)) {
//		cmd.Flags().Visit(func(f *pflag.Flag) { set(f.Name, f.Value.String()) })
//	})
func FlagLayer(visit func(set func(name, value string))) (Layer, error) {
	l := NewLayer(SourceFlag)
	var errs []error
	visit(func(flag, value string) {
		name := strings.ReplaceAll(flag, "-", "_")
		if alias, ok := flagNames[name]; ok {
			name = alias
		}
		s, ok := specFor(name)
		if !ok {
			return
		}
		if zeroMeansAuto[name] && strings.TrimSpace(value) == "0" {
			return
		}
		v, err := s.parse(value)
		if err == nil {
			err = l.Set(name, v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
		}
	})
	return l, errors.Join(errs...)
}

// GenerationDefaults are the sampling defaults a model ships (Hugging
// Face generation_config.json); nil is absent.
type GenerationDefaults struct {
	Temperature       *float64
	TopP              *float64
	TopK              *int
	MinP              *float64
	RepetitionPenalty *float64
}

// GenerationConfigLayer builds the "generation_config" layer. A value
// out of range is left out of the layer, and reported in the error, so
// the caller can warn and go on with the model.
func GenerationConfigLayer(g GenerationDefaults) (Layer, error) {
	l := NewLayer(SourceGenerationConfig)
	var errs []error
	add := func(name string, v any) {
		if err := l.Set(name, v); err != nil {
			errs = append(errs, fmt.Errorf("generation_config %w", err))
		}
	}
	if g.Temperature != nil {
		add(KeyTemperature, *g.Temperature)
	}
	if g.TopP != nil {
		add(KeyTopP, *g.TopP)
	}
	if g.TopK != nil {
		add(KeyTopK, *g.TopK)
	}
	if g.MinP != nil {
		add(KeyMinP, *g.MinP)
	}
	if g.RepetitionPenalty != nil {
		add(KeyRepetitionPenalty, *g.RepetitionPenalty)
	}
	return l, errors.Join(errs...)
}

// DefaultLayer holds the values used when no layer sets them: the serve
// command's historic defaults and vLLM's sampling defaults (temperature
// 1, nothing filtered or penalised). threads, max_model_len and
// kv_cache_bytes have none: they depend on the machine and the model.
func DefaultLayer() Layer {
	l := NewLayer(SourceDefault)
	l.values[KeyWeightPath] = string(WeightPathAuto)
	l.values[KeyPriority] = PrioritySpeed
	l.values[KeyKVCacheType] = KVCacheF16
	l.values[KeyMaxNumSeqs] = 8
	l.values[KeyMaxNumBatchedTokens] = 256
	l.values[KeyTemperature] = 1.0
	l.values[KeyTopP] = 1.0
	l.values[KeyTopK] = 0
	l.values[KeyMinP] = 0.0
	l.values[KeyRepetitionPenalty] = 1.0
	return l
}

// Setting is one resolved value and where it came from: "flag",
// "profile FILE", "generation_config", "auto profile x86-avx2-laptop",
// "default", or "unset" (Value nil) when nothing gives it.
type Setting struct {
	Name   string
	Value  any // int, int64 (kv_cache_bytes), float64 or string; nil when unset
	Source string
}

func (s Setting) String() string {
	if s.Value == nil {
		return s.Name + " unset"
	}
	return fmt.Sprintf("%s = %s (%s)", s.Name, formatValue(s.Value), s.Source)
}

// Settings are resolved settings in SettingNames order.
type Settings []Setting

// Resolve merges layers, the first having the highest precedence, and
// falls back to DefaultLayer: every setting comes back, with the source
// that gave it. The serve command's order is flags, --profile FILE, the
// model's generation_config, then the auto profile:
//
//	device.Resolve(flags, file.Layer(), gen, device.AutoProfile(info).Layer())
func Resolve(layers ...Layer) Settings {
	layers = append(layers[:len(layers):len(layers)], DefaultLayer())
	out := make(Settings, 0, len(specs))
	for _, s := range specs {
		set := Setting{Name: s.name, Source: SourceUnset}
		for _, l := range layers {
			if v, ok := l.values[s.name]; ok {
				set.Value, set.Source = v, l.Source
				break
			}
		}
		out = append(out, set)
	}
	return out
}

// Get returns the named setting (Source "unset" if unknown).
func (s Settings) Get(name string) Setting {
	for _, x := range s {
		if x.Name == name {
			return x
		}
	}
	return Setting{Name: name, Source: SourceUnset}
}

// Int returns an integer setting (int or int64), 0 when unset.
func (s Settings) Int(name string) int64 {
	switch v := s.Get(name).Value.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

// Float returns a number setting, 0 when unset.
func (s Settings) Float(name string) float64 {
	f, _ := s.Get(name).Value.(float64)
	return f
}

// String returns a string setting, "" when unset.
func (s Settings) String(name string) string {
	v, _ := s.Get(name).Value.(string)
	return v
}

// WeightPath returns the weight path to use and why: the resolved
// setting, or ChooseWeightPath's pick for this CPU and the resolved
// priority when it is "auto".
func (s Settings) WeightPath(info *Info) (path WeightPath, why string) {
	w := s.Get(KeyWeightPath)
	if v, _ := w.Value.(string); v != "" && WeightPath(v) != WeightPathAuto {
		return WeightPath(v), "weight_path " + v + " set by " + w.Source
	}
	return ChooseWeightPath(info, s.String(KeyPriority))
}
