package tokenizer

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// checkStream feeds ids one at a time and checks that the pieces
// concatenate to DecodeWith(ids, opt) and that no piece ends inside a
// character that a later piece completes.
func checkStream(t testing.TB, tk *Tokenizer, ids []int, opt DecodeOptions) {
	t.Helper()
	want := tk.DecodeWith(ids, opt)
	d := tk.NewStreamDecoderWith(opt)
	var b strings.Builder
	for i, id := range ids {
		s := d.Add(id)
		if utf8.ValidString(want) && !utf8.ValidString(s) {
			t.Fatalf("piece %d %q is not valid UTF-8 though the whole text is", i, s)
		}
		b.WriteString(s)
	}
	b.WriteString(d.Flush())
	if got := b.String(); got != want {
		t.Fatalf("stream gives %q, Decode gives %q", got, want)
	}
}

// goldenSequences collects every id sequence the goldens hold: encoded
// strings, chat prompts, and the prompts plus generations of the model runs
// (random models: their output is full of split multi-byte characters).
func goldenSequences(t *testing.T) map[string][]int {
	seqs := map[string][]int{}
	for _, m := range []string{"spark2_5-tiny", "qwen3-tiny"} {
		var v struct {
			Cases []idCase `json:"cases"`
		}
		readJSON(t, testdata.Path(t, "llm", "tiny", "hf", m, "golden", "tokenizer_vectors.json"), &v)
		for i, c := range v.Cases {
			seqs[m+"/vector"+strconv.Itoa(i)] = c.IDs
		}
	}
	dir := testdata.Path(t, "llm", "tiny", "hf", "spark2_5-tiny", "golden")
	for _, n := range []string{"chat_tinyspecial", "chat_verbatim"} {
		seqs[n] = readIDs(t, filepath.Join(dir, n+".prompt_ids.txt"))
	}
	var runs []string
	for _, pat := range []string{
		filepath.Join(testdata.Path(t, "llm", "tiny", "golden"), "*", "*.json"),
		filepath.Join(testdata.Path(t, "llm", "tiny", "hf"), "*", "golden", "*.json"),
	} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, m...)
	}
	for _, path := range runs {
		var r struct {
			Prompt    []int `json:"prompt_ids"`
			Generated []int `json:"generated_ids"`
		}
		readJSON(t, path, &r)
		if len(r.Generated) > 0 {
			seqs[path] = append(append([]int{}, r.Prompt...), r.Generated...)
			seqs[path+"/generated"] = r.Generated
		}
	}
	if len(seqs) < 500 {
		t.Fatalf("only %d golden sequences found", len(seqs))
	}
	return seqs
}

func TestStreamDecoderGoldens(t *testing.T) {
	seqs := goldenSequences(t)
	for name, tk := range tinyTokenizers(t) {
		broken := 0
		for _, ids := range seqs {
			checkStream(t, tk, ids, DecodeOptions{})
			checkStream(t, tk, ids, DecodeOptions{SkipSpecial: true})
			if !utf8.ValidString(tk.Decode(ids)) {
				broken++
			}
		}
		t.Logf("%s: %d sequences streamed, %d decode to invalid UTF-8", name, len(seqs), broken)
	}

	// SentencePiece: the stories generations, from the sequence start and
	// as a continuation (where the first space must stay).
	tk := loadGGUF(t, "llm", "stories260K-gguf", "stories260K.gguf")
	for i := range 4 {
		var g struct {
			Tokens []int `json:"tokens"`
		}
		readJSON(t, testdata.Path(t, "llm", "stories260K-llama2c", "golden", "greedy_prompt"+strconv.Itoa(i)+".json"), &g)
		for _, ids := range [][]int{g.Tokens, g.Tokens[1:], g.Tokens[5:]} {
			checkStream(t, tk, ids, DecodeOptions{})
			checkStream(t, tk, ids, DecodeOptions{Continuation: true})
		}
	}
	// Byte tokens of one emoji arrive separately; nothing shows until the
	// character is whole.
	ids := tk.Encode("😀!", EncodeOptions{})
	d := tk.NewStreamDecoderWith(DecodeOptions{Continuation: true})
	var got []string
	for _, id := range ids {
		got = append(got, d.Add(id))
	}
	if want := []string{" ", "", "", "", "😀", "!"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("emoji stream %v: %q, want %q", ids, got, want)
	}
}

func TestCompletePrefix(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"abc", 3}, {"a\xe2\x82", 1}, {"a\xe2\x82\xac", 4}, {"\xf0\x9f\x98", 0},
		{"a\xe2A", 3},       // invalid: passed on
		{"\xf5\x80", 2},     // never valid
		{"\x80\x80\x80", 3}, // stray continuation bytes
		{"é\xc3", 2},
	} {
		if got := completePrefix([]byte(c.in)); got != c.want {
			t.Errorf("completePrefix(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}
