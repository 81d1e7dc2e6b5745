package qwen3tts

import (
	"slices"
	"testing"
)

// runUtterance steps u alone to its end and returns its codes and the
// talker's last hidden state after every step.
func runUtterance(t *testing.T, m *Model, u *Utterance) (codes [][]int, hidden [][]float32) {
	t.Helper()
	for !u.Done() {
		if err := m.Step([]*Utterance{u}); err != nil {
			t.Fatal(err)
		}
		codes = append(codes, u.Frames()...)
		hidden = append(hidden, slices.Clone(u.s.h))
	}
	return codes, hidden
}

// An utterance begun from another's cached conditioning rows computes
// the very bits of one prefilled from scratch: every step's talker hidden
// state is bit-equal and the sampled (seeded) codes are the same, with
// and without an instruct block, in both text-feeding modes.
func TestConditioningReuse(t *testing.T) {
	m := openModel(t, ckptDir(t))
	for _, name := range []string{"cv_ryan_english_stream", "cv_eric_auto_nonstream"} {
		g := loadGolden(t, name)
		for _, instruct := range [][]int{nil, {900, 5, 17, 33, 901, 10}} {
			req := func(text []int) *Request {
				ids := slices.Concat(text[:3], []int{40, 41}, text[3:])
				r := m.Cfg.NewRequest(ids, Voice{Speaker: g.m.Request.Speaker, Language: g.m.Request.Language, NonStreaming: g.m.Request.NonStreaming, Instruct: instruct})
				r.MaxFrames, r.Seed, r.Seeded = 8, 11, true
				return r
			}
			// The first request has other text than the second: only the
			// conditioning is shared.
			first, err := m.Begin(req(g.m.Request.InputIDs[:9]))
			if err != nil {
				t.Fatal(err)
			}
			if first.Conditioning() != nil {
				t.Fatal("a conditioning before the prefill")
			}
			if err := m.Step([]*Utterance{first}); err != nil {
				t.Fatal(err)
			}
			cond := first.Conditioning()
			if cond == nil || cond.Len() != first.s.prompt.Cond || cond.Len() < len(instruct)+6 {
				t.Fatalf("%s: conditioning %v", name, cond)
			}
			plain, err := m.Begin(req(g.m.Request.InputIDs))
			if err != nil {
				t.Fatal(err)
			}
			cached, err := m.BeginFrom(req(g.m.Request.InputIDs), cond)
			if err != nil {
				t.Fatal(err)
			}
			if cached.Cached() != cond.Len() || plain.Cached() != 0 {
				t.Errorf("%s: cached rows %d and %d, want %d and 0", name, cached.Cached(), plain.Cached(), cond.Len())
			}
			wantCodes, wantHidden := runUtterance(t, m, plain)
			codes, hidden := runUtterance(t, m, cached)
			if !slices.EqualFunc(codes, wantCodes, slices.Equal) || len(codes) == 0 {
				t.Errorf("%s instruct %v: codes %v, from scratch %v", name, instruct, codes, wantCodes)
			}
			for i := range min(len(hidden), len(wantHidden)) {
				if !bitEqual(hidden[i], wantHidden[i]) {
					t.Errorf("%s instruct %v: step %d hidden state differs", name, instruct, i)
					break
				}
			}
		}
	}
}

// A conditioning is refused by a request it is not the start of.
func TestConditioningMismatch(t *testing.T) {
	m := openModel(t, ckptDir(t))
	g := loadGolden(t, "cv_ryan_english_stream")
	r := m.Cfg.NewRequest(g.m.Request.InputIDs, Voice{Speaker: "ryan", Language: "english"})
	r.MaxFrames = 2
	u, err := m.Begin(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Step([]*Utterance{u}); err != nil {
		t.Fatal(err)
	}
	cond := u.Conditioning()
	for _, v := range []Voice{{Speaker: "vivian", Language: "english"}, {Speaker: "ryan"}, {Speaker: "ryan", Language: "english", Instruct: []int{900, 5, 901}}} {
		o := m.Cfg.NewRequest(g.m.Request.InputIDs, v)
		if _, err := m.BeginFrom(o, cond); err == nil {
			t.Errorf("voice %+v began from ryan/english's conditioning", v)
		}
	}
}

// The instruct block is text-only rows before the role (TS §4 step 1);
// the rest of the prompt is unchanged, and Cond counts the block, the
// role and the codec prefix. Checked against every golden case's tracks.
func TestInstructLayout(t *testing.T) {
	m := openModel(t, ckptDir(t))
	instruct := []int{900, 12, 198, 7, 8, 901, 198}
	for _, name := range cvCases(t) {
		g := loadGolden(t, name)
		v := Voice{Speaker: g.m.Request.Speaker, Language: g.m.Request.Language, NonStreaming: g.m.Request.NonStreaming}
		plain, err := m.Cfg.BuildPrompt(g.m.Request.InputIDs, v)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(plain.Text, g.m.Prefill.Text) || !slices.Equal(plain.Codec, g.m.Prefill.Codec) {
			t.Fatalf("%s: tracks differ from the golden", name)
		}
		// Cond: the role (3 rows) and the codec prefix rows, whose codec
		// track ends with codec_pad before the text's rows.
		if plain.Cond < 6 || plain.Codec[plain.Cond-1] != m.Cfg.CodecPad || plain.Codec[2] != -1 || plain.Codec[3] == -1 {
			t.Errorf("%s: Cond %d for codec track %v", name, plain.Cond, plain.Codec)
		}
		v.Instruct = instruct
		p, err := m.Cfg.BuildPrompt(g.m.Request.InputIDs, v)
		if err != nil {
			t.Fatal(err)
		}
		wantCodec := slices.Concat([]int{-1, -1, -1, -1, -1, -1, -1}, plain.Codec)
		if !slices.Equal(p.Text, slices.Concat(instruct, plain.Text)) || !slices.Equal(p.Codec, wantCodec) ||
			!slices.Equal(p.Trailing, plain.Trailing) || p.Cond != plain.Cond+len(instruct) {
			t.Errorf("%s with instruct: text %v codec %v cond %d", name, p.Text, p.Codec, p.Cond)
		}
	}
	if _, err := m.Cfg.BuildPrompt(loadGolden(t, "cv_ryan_english_stream").m.Request.InputIDs, Voice{Speaker: "ryan", Instruct: []int{-1}}); err == nil {
		t.Error("an instruct id outside the vocabulary: no error")
	}
}
