package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
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
	codes, err := codec.ParseCodes(data, 16, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if want := frameCodes(g.Codes); !slices.Equal(codes, want) {
		t.Errorf("codes\n%v\nwant\n%v", codes, want)
	}
}

func TestSpeakTextErrors(t *testing.T) {
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
		{[]string{"--input", "hi", "--input-ids", ids}, "--input TEXT or --input-ids, not both"},
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

// --input wraps the text and tokenizes it with the folder's tokenizer
// (here a byte-level vocab.json + merges.txt written to match the
// fixture's remapped ids: GPT-2's byte order puts "\n" at 198, "h" at 71
// and "i" at 72; "assistant" is merged to 771, the chat tokens are 900 and
// 901): the codes equal those of --input-ids with the ids worked out by
// hand.
func TestSpeakInputText(t *testing.T) {
	ckpt := testdata.Path(t, "tts", "talker", "ckpt", "tiny-cv-eq-bf16")
	dir := t.TempDir()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors"} {
		if err := os.Symlink(filepath.Join(ckpt, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	// bytes_to_unicode: printable bytes keep their rune, the others map
	// to 256+k in byte order, and ids follow that order.
	var order []rune
	printable := func(b int) bool { return b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae }
	for b := 0; b < 256; b++ {
		if printable(b) {
			order = append(order, rune(b))
		}
	}
	k := 0
	for b := 0; b < 256; b++ {
		if !printable(b) {
			order = append(order, rune(256+k))
			k++
		}
	}
	vocab := map[string]int{}
	for id, r := range order {
		vocab[string(r)] = id
	}
	merges := "#version: 0.2\n"
	word := "assistant"
	for i := 2; i <= len(word); i++ {
		merges += word[:i-1] + " " + word[i-1:i] + "\n"
		vocab[word[:i]] = 254 + i
	}
	vocab[word] = 771
	vj, _ := json.Marshal(vocab)
	cfg := `{"tokenizer_class": "Qwen2Tokenizer", "added_tokens_decoder": {"900": {"content": "<|im_start|>", "special": true}, "901": {"content": "<|im_end|>", "special": true}}}`
	for name, b := range map[string]string{"vocab.json": string(vj), "merges.txt": merges, "tokenizer_config.json": cfg} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"speak", "-m", dir, "--voice", "ryan", "--language", "english", "--max-frames", "3", "--temp", "0", "--subtalker-temp", "0"}
	text, err := siskin(t, append(common, "--input", "hi")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	ids, err := siskin(t, append(common, "--input-ids", "900,771,198,71,72,901,198,900,771,198")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, ids)
	}
	if text != ids || !strings.Contains(text, `{"codes": [`) {
		t.Errorf("--input hi:\n%s\n--input-ids:\n%s", text, ids)
	}
}

// Text to audio on a `siskin synth --arch qwen3_tts --shape tiny` folder:
// --input through the talker and the codec, -o and --codes-out together;
// the audio is the same bytes as decoding the written codes with
// --codes-in, and the same seed gives the same audio.
func TestSpeakTextToAudio(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tts")
	if out, err := siskin(t, "synth", "--arch", "qwen3_tts", "--shape", "tiny", "-o", dir, "--progress", "off"); err != nil {
		t.Fatalf("synth: %v\n%s", err, out)
	}
	wav, codes := filepath.Join(dir, "a.wav"), filepath.Join(dir, "codes.json")
	args := []string{"speak", "-m", dir, "--input", "hello there", "--voice", "ryan", "--language", "english", "--max-frames", "4", "--seed", "3"}
	if out, err := siskin(t, append(args, "-o", wav, "--codes-out", codes)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	again := filepath.Join(dir, "b.wav")
	if out, err := siskin(t, append(args, "-o", again)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	decoded := filepath.Join(dir, "c.wav")
	if out, err := siskin(t, "speak", "-m", dir, "--codes-in", codes, "-o", decoded); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	a, _ := os.ReadFile(wav)
	b, _ := os.ReadFile(again)
	c, _ := os.ReadFile(decoded)
	if len(a) != 44+4*1920*2 || !bytes.Equal(a, b) || !bytes.Equal(a, c) {
		t.Errorf("wav of %d bytes (want %d); same seed equal: %v; equal to decoding the codes: %v", len(a), 44+4*1920*2, bytes.Equal(a, b), bytes.Equal(a, c))
	}
	if _, err := siskin(t, "speak", "-m", dir, "--codes-in", codes, "--input", "x", "-o", decoded); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("--codes-in with --input: %v", err)
	}
}
