package qwen3tts

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/siskin-ml/siskin/ledger"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/qwen3tts/synth"
)

// Arch describes Qwen3-TTS to the rest of siskin: a speech model, read
// from a Hugging Face folder by Load (the talker and code predictor) and
// codec.Load (speech_tokenizer/), which synth writes as such a folder.
var Arch = model.Arch{
	Name:   "qwen3_tts",
	Kind:   model.Speech,
	Folder: &model.FolderSynth{Shapes: synthShapes(), Write: synthFolder},
}

// synthShapes lists synth's shapes, smallest talker first.
func synthShapes() []string {
	names := slices.Collect(maps.Keys(synth.Shapes))
	slices.SortFunc(names, func(x, y string) int {
		return cmp.Compare(synth.Shapes[x].Talker.Hidden, synth.Shapes[y].Talker.Hidden)
	})
	return names
}

// synthFolder writes a random-weight CustomVoice folder (see
// model.FolderSynth).
func synthFolder(dir, shape string, seed uint64, progress func(done, total int64)) (string, error) {
	rep, err := synth.Write(dir, synth.Options{Shape: shape, Seed: seed, Progress: progress})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("talker %.3fB parameters (%d tensors, BF16, %s), codec decoder %.1fM parameters (%d tensors, F32, %s)",
		float64(rep.TalkerParams)/1e9, rep.TalkerTensors, ledger.Human(rep.TalkerBytes),
		float64(rep.CodecParams)/1e6, rep.CodecTensors, ledger.Human(rep.CodecBytes)), nil
}
