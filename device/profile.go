package device

import (
	"embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Profile is a deploy profile: serving settings for a kind of machine.
// A nil field is not set by the profile, so a lower layer of Resolve
// (the model's generation_config, the auto profile, the defaults) gives
// it.
//
// In YAML:
//
//	description: AVX2 laptop, one or two users
//	threads: 4
//	weight_path: auto        # auto, gguf, w4a8, w4a16, w8a8, q4_k_m, w16a16
//	priority: speed          # speed or fidelity
//	max_model_len: 8192
//	kv_cache_bytes: 2147483648
//	kv_cache_type: f16       # f16, q8_0 or f32
//	max_num_seqs: 4
//	max_num_batched_tokens: 256
//	sampling:
//	  temperature: 0.7
//	  top_p: 0.9
//	  top_k: 40
//	  min_p: 0.05
//	  repetition_penalty: 1.1
//
// Parsing is strict: an unknown key, a value of the wrong type (a
// quoted number, a fraction for an integer), a duplicate key, an empty
// value, anchors, aliases and tags are errors with line and column.
type Profile struct {
	// Name is the built-in's name, "auto", or the file's path.
	Name string
	// Source describes the profile as a Resolve source: "profile FILE",
	// "profile x86-avx2-laptop", "auto profile x86-avx2-laptop".
	Source string
	// Base is the built-in an auto profile was made from; Why says why
	// it was picked. Both are empty for other profiles.
	Base, Why string

	Description         string
	Threads             *int
	WeightPath          *string
	Priority            *string
	MaxModelLen         *int
	KVCacheBytes        *int64
	KVCacheType         *string
	MaxNumSeqs          *int
	MaxNumBatchedTokens *int
	Sampling            Sampling
}

// Sampling holds a profile's default sampling parameters; a request's
// own values override them.
type Sampling struct {
	Temperature       *float64
	TopP              *float64
	TopK              *int
	MinP              *float64
	RepetitionPenalty *float64
}

// field returns a pointer to the profile's field for a setting: one of
// **int, **int64, **float64, **string.
func (p *Profile) field(name string) any {
	switch name {
	case KeyThreads:
		return &p.Threads
	case KeyWeightPath:
		return &p.WeightPath
	case KeyPriority:
		return &p.Priority
	case KeyMaxModelLen:
		return &p.MaxModelLen
	case KeyKVCacheBytes:
		return &p.KVCacheBytes
	case KeyKVCacheType:
		return &p.KVCacheType
	case KeyMaxNumSeqs:
		return &p.MaxNumSeqs
	case KeyMaxNumBatchedTokens:
		return &p.MaxNumBatchedTokens
	case KeyTemperature:
		return &p.Sampling.Temperature
	case KeyTopP:
		return &p.Sampling.TopP
	case KeyTopK:
		return &p.Sampling.TopK
	case KeyMinP:
		return &p.Sampling.MinP
	case KeyRepetitionPenalty:
		return &p.Sampling.RepetitionPenalty
	}
	panic("device: no profile field for setting " + name)
}

// Get returns the profile's value for a setting, false if it is unset.
func (p *Profile) Get(name string) (any, bool) {
	switch f := p.field(name).(type) {
	case **int:
		if *f != nil {
			return **f, true
		}
	case **int64:
		if *f != nil {
			return **f, true
		}
	case **float64:
		if *f != nil {
			return **f, true
		}
	case **string:
		if *f != nil {
			return **f, true
		}
	}
	return nil, false
}

// Set validates v and stores it in the profile.
func (p *Profile) Set(name string, v any) error {
	s, ok := specFor(name)
	if !ok {
		return fmt.Errorf("unknown setting %q", name)
	}
	v, err := s.validate(v)
	if err != nil {
		return err
	}
	switch f := p.field(name).(type) {
	case **int:
		x := v.(int)
		*f = &x
	case **int64:
		x := v.(int64)
		*f = &x
	case **float64:
		x := v.(float64)
		*f = &x
	case **string:
		x := v.(string)
		*f = &x
	}
	return nil
}

// Validate checks every set value's range (a profile built in code can
// hold anything; a parsed one is already valid).
func (p *Profile) Validate() error {
	var errs []error
	for _, s := range specs {
		if v, ok := p.Get(s.name); ok {
			if _, err := s.validate(v); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Layer returns the profile's set values as a Resolve layer whose source
// is p.Source.
func (p *Profile) Layer() Layer {
	l := NewLayer(p.Source)
	for _, s := range specs {
		if v, ok := p.Get(s.name); ok {
			l.values[s.name] = v
		}
	}
	return l
}

// ProfileError is an error in a profile file, with its position (Line
// and Column count from 1; 0 when the position is unknown).
type ProfileError struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *ProfileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// LoadProfile reads a profile file (see Profile for the format).
func LoadProfile(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseProfile(path, data)
}

// OpenProfile returns the built-in profile called arg, or else loads the
// file arg: what a --profile flag takes.
func OpenProfile(arg string) (*Profile, error) {
	if p, err := BuiltinProfile(arg); err == nil {
		return p, nil
	}
	return LoadProfile(arg)
}

// ParseProfile parses a profile's YAML; name is used in errors and as
// the profile's name.
func ParseProfile(name string, data []byte) (*Profile, error) {
	p := &Profile{Name: name, Source: "profile " + name}
	fail := func(n ast.Node, format string, args ...any) error {
		e := &ProfileError{File: name, Msg: fmt.Sprintf(format, args...)}
		if n != nil {
			if tk := n.GetToken(); tk != nil && tk.Position != nil {
				e.Line, e.Column = tk.Position.Line, tk.Position.Column
			}
		}
		return e
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		e := &ProfileError{File: name, Msg: err.Error()}
		var ye yaml.Error
		if errors.As(err, &ye) {
			e.Msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				e.Line, e.Column = tk.Position.Line, tk.Position.Column
			}
		}
		return nil, e
	}
	var body ast.Node
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if body != nil {
			return nil, fail(d.Body, "a profile is a single YAML document")
		}
		body = d.Body
	}
	if body == nil {
		return p, nil // an empty profile sets nothing
	}
	top, ok := body.(*ast.MappingNode)
	if !ok {
		return nil, fail(body, "a profile is a mapping of settings, got %s", describe(body))
	}
	var sampling *ast.MappingNode
	err = walkMapping(top, fail, func(key string, kn, vn ast.Node) error {
		switch key {
		case "description":
			switch s := vn.(type) {
			case *ast.StringNode:
				p.Description = s.Value
			case *ast.LiteralNode:
				if s.Value != nil {
					p.Description = s.Value.Value
				}
			default:
				return fail(vn, "description: want a string, got %s", describe(vn))
			}
			return nil
		case "sampling":
			m, ok := vn.(*ast.MappingNode)
			if !ok {
				return fail(vn, "sampling: want a mapping of sampling settings, got %s", describe(vn))
			}
			sampling = m
			return nil
		}
		s, ok := specFor(key)
		if !ok || s.sampling {
			hint := ""
			if ok {
				hint = " (it belongs under sampling:)"
			}
			return fail(kn, "unknown key %q%s; known keys: %s", key, hint, strings.Join(profileKeys(false), ", "))
		}
		return setFromNode(p, s, vn, fail)
	})
	if err != nil {
		return nil, err
	}
	if sampling != nil {
		err = walkMapping(sampling, fail, func(key string, kn, vn ast.Node) error {
			s, ok := specFor(key)
			if !ok || !s.sampling {
				return fail(kn, "unknown key %q in sampling; known keys: %s", key, strings.Join(profileKeys(true), ", "))
			}
			return setFromNode(p, s, vn, fail)
		})
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

type failFunc func(n ast.Node, format string, args ...any) error

// walkMapping calls fn for each plain-string key of m, rejecting other
// keys and duplicates.
func walkMapping(m *ast.MappingNode, fail failFunc, fn func(key string, kn, vn ast.Node) error) error {
	seen := map[string]bool{}
	for _, mv := range m.Values {
		if mv == nil || mv.Key == nil {
			return fail(m, "malformed mapping entry")
		}
		ks, ok := mv.Key.(*ast.StringNode)
		if !ok {
			return fail(mv.Key, "keys must be plain names, got %s", describe(mv.Key))
		}
		if seen[ks.Value] {
			return fail(mv.Key, "duplicate key %q", ks.Value)
		}
		seen[ks.Value] = true
		if mv.Value == nil {
			return fail(mv.Key, "%s: no value", ks.Value)
		}
		if err := fn(ks.Value, mv.Key, mv.Value); err != nil {
			return err
		}
	}
	return nil
}

// profileKeys lists the top-level (or sampling) keys for error messages.
func profileKeys(sampling bool) []string {
	var out []string
	if !sampling {
		out = append(out, "description")
	}
	for _, s := range specs {
		if s.sampling == sampling {
			out = append(out, s.name)
		}
	}
	if !sampling {
		out = append(out, "sampling")
	}
	return out
}

// setFromNode type-checks a scalar node against the setting's kind and
// stores it. The node's own type decides, not its text: "4" (quoted) is
// a string, 4.0 is a float, and neither is accepted for an integer.
func setFromNode(p *Profile, s *spec, n ast.Node, fail failFunc) error {
	var v any
	switch x := n.(type) {
	case *ast.IntegerNode:
		switch i := x.Value.(type) {
		case int64:
			v = i
		case uint64:
			if i > math.MaxInt64 {
				return fail(n, "%s: %s is too large", s.name, x.GetToken().Value)
			}
			v = int64(i)
		}
		if s.kind == kindString {
			return fail(n, "%s: want a string, got an integer (%s)", s.name, x.GetToken().Value)
		}
		if s.kind == kindInt && int64(int(v.(int64))) != v.(int64) {
			return fail(n, "%s: %d is too large", s.name, v)
		}
	case *ast.FloatNode:
		if s.kind != kindFloat {
			return fail(n, "%s: want %s, got a fraction (%s)", s.name, s.kind, x.GetToken().Value)
		}
		v = x.Value
	case *ast.StringNode:
		if s.kind != kindString {
			// The YAML parser leaves integers beyond 64 bits as plain
			// strings; say what is wrong with them.
			if tk := x.GetToken(); tk != nil && tk.Type == token.StringType && isDigits(x.Value) {
				return fail(n, "%s: %s is too large", s.name, x.Value)
			}
			return fail(n, "%s: want %s, got a string (%q)", s.name, s.kind, x.Value)
		}
		v = x.Value
	case *ast.InfinityNode, *ast.NanNode:
		if s.kind == kindFloat {
			return fail(n, "%s: want a finite number, got %s", s.name, describe(n))
		}
		return fail(n, "%s: want %s, got %s", s.name, s.kind, describe(n))
	default:
		return fail(n, "%s: want %s, got %s", s.name, s.kind, describe(n))
	}
	if err := p.Set(s.name, v); err != nil {
		return fail(n, "%v", err)
	}
	return nil
}

// isDigits reports an optionally signed run of decimal digits.
func isDigits(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// describe names a node's kind for error messages.
func describe(n ast.Node) string {
	switch n.(type) {
	case *ast.IntegerNode:
		return "an integer"
	case *ast.FloatNode:
		return "a fraction"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.NullNode:
		return "null (no value)"
	case *ast.InfinityNode:
		return "infinity"
	case *ast.NanNode:
		return "NaN"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a sequence"
	case *ast.AnchorNode:
		return "an anchor (not supported in profiles)"
	case *ast.AliasNode:
		return "an alias (not supported in profiles)"
	case *ast.TagNode:
		return "a tagged value (not supported in profiles)"
	case *ast.MergeKeyNode:
		return "a merge key (not supported in profiles)"
	case *ast.MappingKeyNode:
		return "a complex key"
	}
	return fmt.Sprintf("a %s node", n.Type())
}

// The built-in profiles are YAML files beside this code, so they are
// written, read and checked exactly like users' files.
//
//go:embed profiles/*.yaml
var builtinFS embed.FS

// Built-in profile names.
const (
	ProfileX86AVX2Laptop   = "x86-avx2-laptop"
	ProfileX86AVX512Server = "x86-avx512-server"
	ProfileX86AMXServer    = "x86-amx-server"
	ProfileARM64NEONBoard  = "arm64-neon-board"
	ProfileARM64DotProd    = "arm64-dotprod"
)

// BuiltinNames lists the built-in profiles ("auto" is made from a probe
// by AutoProfile).
func BuiltinNames() []string {
	return []string{ProfileX86AVX2Laptop, ProfileX86AVX512Server, ProfileX86AMXServer, ProfileARM64NEONBoard, ProfileARM64DotProd}
}

// BuiltinProfile returns a fresh copy of the named built-in profile.
func BuiltinProfile(name string) (*Profile, error) {
	if !slices.Contains(BuiltinNames(), name) {
		return nil, fmt.Errorf("no built-in profile %q (built-ins: %s, or auto)", name, strings.Join(BuiltinNames(), ", "))
	}
	file := path.Join("profiles", name+".yaml")
	data, err := builtinFS.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p, err := ParseProfile(file, data)
	if err != nil {
		return nil, err
	}
	p.Name, p.Source = name, "profile "+name
	return p, nil
}
