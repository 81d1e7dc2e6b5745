package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model"
)

// Every descriptor in the list has what its kind promises: a text
// architecture its config, loader, tensors and GGUF shapes (the shared
// "tiny" among them); a speech one no text loader and a folder synth.
func TestArchsComplete(t *testing.T) {
	for _, a := range Archs {
		switch a.Kind {
		case model.Text:
			if a.Config == nil || a.Load == nil || a.Tensors == nil || a.Folder != nil {
				t.Errorf("%s: a text architecture needs Config, Load and Tensors, and synth writes it as GGUF", a.Name)
			}
		case model.Speech:
			if a.Config != nil || a.Load != nil || a.Tensors != nil || a.Folder == nil {
				t.Errorf("%s: a speech architecture has no text loader and is written as a folder", a.Name)
			}
		}
		names := a.ShapeNames()
		if len(names) == 0 || names[0] != "tiny" {
			t.Errorf("%s: shapes %v, want the shared tiny one first", a.Name, names)
		}
		for _, n := range names {
			if err := a.CheckShape(strings.ToUpper(n)); err != nil {
				t.Errorf("%s: %v", a.Name, err)
			}
		}
		if err := a.CheckShape("70b"); err == nil || !strings.Contains(err.Error(), strings.Join(names, "|")) {
			t.Errorf("%s: shape 70b: %v, want an error listing %v", a.Name, err, names)
		}
	}
}

// A speech folder (here synth's tiny one, written through its
// descriptor) is recognized from its config.json alone, and refused with
// what it is where a text model is needed.
func TestSpeechFolder(t *testing.T) {
	dir := t.TempDir()
	var speech *model.Arch
	for _, a := range Archs {
		if a.Kind == model.Speech {
			speech = a
		}
	}
	if speech == nil {
		t.Fatal("no speech architecture in the list")
	}
	if _, err := speech.Folder.Write(dir, "tiny", 1, nil); err != nil {
		t.Fatal(err)
	}
	if a := FolderArch(dir); a != speech {
		t.Errorf("FolderArch of a %s folder = %v", speech.Name, a)
	}
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "is a speech model") || !strings.Contains(err.Error(), dir) {
		t.Errorf("Open of a speech folder: %v, want it refused as a speech model, naming the folder", err)
	}
	text := testdata.Path(t, "llm", "tiny", "hf", "qwen3-tiny", "bf16")
	if a := FolderArch(text); a == nil || a.Kind != model.Text {
		t.Errorf("FolderArch of a text folder = %v", a)
	}
	odd := t.TempDir()
	os.WriteFile(filepath.Join(odd, "config.json"), []byte(`{"model_type": "mamba"}`), 0o644)
	for _, p := range []string{odd, testdata.Path(t, "llm", "tiny", "models", "qwen3-tiny-f32.gguf"), filepath.Join(odd, "missing")} {
		if a := FolderArch(p); a != nil {
			t.Errorf("FolderArch(%s) = %s, want none", p, a.Name)
		}
	}
}
