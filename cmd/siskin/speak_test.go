package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model/qwen3tts"
)

// The command: greedy talker and predictor, no repetition
// penalty, 12 frames, non-streaming, writes the golden codes of
// cv_ryan_english_nonstream (from the float64 reference that agrees with
// the official model) exactly.
func TestSpeakCodesOutMatchesGolden(t *testing.T) {
	ckpt := testdata.Path(t, "tts", "talker", "ckpt", "tiny-cv-eq-bf16")
	var g struct {
		Request struct {
			InputIDs []int `json:"input_ids"`
		} `json:"request"`
		Codes [][]int `json:"codes"`
	}
	readGolden(t, testdata.Path(t, "tts", "talker", "golden", "tiny-cv-eq", "cv_ryan_english_nonstream", "manifest.json"), &g)
	ids := make([]string, len(g.Request.InputIDs))
	for i, id := range g.Request.InputIDs {
		ids[i] = strconv.Itoa(id)
	}
	out := filepath.Join(t.TempDir(), "codes.json")
	if msg, err := siskin(t, "speak", "-m", ckpt, "--input-ids", strings.Join(ids, ","), "--voice", "ryan", "--language", "english",
		"--non-streaming-mode", "--max-frames", "12", "--temp", "0", "--subtalker-temp", "0", "--repetition-penalty", "1.0", "--codes-out", out); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	codes, err := qwen3tts.ParseCodes(data, 16, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(codes, g.Codes, slices.Equal) {
		t.Errorf("codes\n%v\nwant\n%v", codes, g.Codes)
	}
}

func TestSpeakErrors(t *testing.T) {
	ckpt := testdata.Path(t, "tts", "talker", "ckpt", "tiny-cv-eq-bf16")
	ids := "900,771,198,151,286,415,532,68,777,843,999,12,901,198,900,771,198"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input-ids", ids, "--voice", "bob"}, "unknown voice \"bob\"; this model has: aiden, dylan, eric"},
		{[]string{"--input-ids", ids, "--language", "klingon"}, "unknown language \"klingon\"; this model has: auto, chinese, english"},
		{[]string{"--input-ids", ids + ",5000"}, "outside the text vocabulary"},
		{[]string{"--input-ids", "1,2,3"}, "input has 3 ids"},
		{[]string{"--input", "hi", "--input-ids", ids}, "exactly one of --input TEXT or --input-ids"},
		{[]string{"--input", "hi"}, "--input needs the model's tokenizer"},
		{[]string{"--input-ids", ids, "--max-frames", "0"}, "max frames 0"},
		{[]string{"--input-ids", ids, "--temp", "-1"}, "talker temperature must be non-negative"},
	} {
		out, err := siskin(t, append([]string{"speak", "-m", ckpt, "--seed", "1", "--max-frames", "2"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q\n%s", c.args, err, c.want, out)
		}
	}
}
