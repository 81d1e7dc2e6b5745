package device

import (
	"errors"
	"testing"
)

// FuzzLoadProfile feeds arbitrary bytes to the profile parser: it must
// never panic, must return a *ProfileError for bad input, and whatever
// it accepts must validate.
func FuzzLoadProfile(f *testing.F) {
	for _, name := range BuiltinNames() {
		data, err := builtinFS.ReadFile("profiles/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile("fuzz.yaml", data)
		if err != nil {
			var pe *ProfileError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ProfileError", err, err)
			}
			if pe.Line < 0 || pe.Column < 0 {
				t.Fatalf("position %d:%d", pe.Line, pe.Column)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted an invalid profile: %v", err)
		}
		_ = Resolve(p.Layer())
	})
}
