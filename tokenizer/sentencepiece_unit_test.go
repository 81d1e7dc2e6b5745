package tokenizer

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
)

// pbWriter builds protobuf messages for hand-made SentencePiece models.
type pbWriter []byte

func (w *pbWriter) varint(field int, v uint64) {
	*w = binary.AppendUvarint(*w, uint64(field)<<3)
	*w = binary.AppendUvarint(*w, v)
}

func (w *pbWriter) bytes(field int, b []byte) {
	*w = binary.AppendUvarint(*w, uint64(field)<<3|2)
	*w = binary.AppendUvarint(*w, uint64(len(b)))
	*w = append(*w, b...)
}

func (w *pbWriter) float(field int, f float32) {
	*w = binary.AppendUvarint(*w, uint64(field)<<3|5)
	*w = binary.LittleEndian.AppendUint32(*w, math.Float32bits(f))
}

type testPiece struct {
	piece string
	score float32
	typ   uint64 // 0: leave the field out (NORMAL)
}

// testSPModel writes a ModelProto: pieces, trainer_spec (model type, byte
// fallback, unk/bos/eos ids) and normalizer_spec (add_dummy_prefix,
// remove_extra_whitespaces false).
func testSPModel(pieces []testPiece, modelType uint64, byteFallback, dummyPrefix bool) []byte {
	var m pbWriter
	for _, p := range pieces {
		var sp pbWriter
		sp.bytes(1, []byte(p.piece))
		sp.float(2, p.score)
		if p.typ != 0 {
			sp.varint(3, p.typ)
		}
		m.bytes(1, sp)
	}
	var tr pbWriter
	tr.varint(3, modelType)
	if byteFallback {
		tr.varint(35, 1)
	}
	tr.varint(40, 0)
	tr.varint(41, 1)
	tr.varint(42, 2)
	tr.varint(43, math.MaxUint64) // pad_id -1, as a sign-extended varint
	m.bytes(2, tr)
	var ns pbWriter
	ns.bytes(1, []byte("identity"))
	if !dummyPrefix {
		ns.varint(3, 0)
	}
	ns.varint(4, 0)
	m.bytes(3, ns)
	return m
}

// miniPieces is a small BPE vocabulary: "▁ab" can only form through the
// unused piece "▁a", and "<u>" is a user-defined piece.
var miniPieces = []testPiece{
	{"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3},
	{"▁", -1, 0}, {"a", -2, 0}, {"b", -3, 0}, {"c", -4, 0},
	{"▁a", -0.5, 5}, {"▁ab", -0.1, 0}, {"bc", -0.2, 0}, {"▁c", -5, 0},
	{"<u>", 0, 4},
}

// The expected ids follow sentencepiece's BPE encoder (bpe_model.cc),
// worked by hand: merges by score with the leftmost pair first, merges
// into unused pieces split back, user-defined pieces never merged,
// unknown characters one <unk> each without byte fallback.
func TestSentencePieceMini(t *testing.T) {
	tk, err := FromSentencePiece(testSPModel(miniPieces, spBPE, false, true))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		opt  EncodeOptions
		want []int
	}{
		{"", EncodeOptions{}, nil},
		{"", EncodeOptions{AddSpecial: true}, []int{1}},
		{"ab", EncodeOptions{}, []int{8}},                   // ▁+a -> ▁a (unused), +b -> ▁ab
		{"a", EncodeOptions{}, []int{3, 4}},                 // ▁a is unused: split back
		{"abc", EncodeOptions{}, []int{3, 4, 9}},            // bc (-0.2) merges before ▁a (-0.5), which is split back
		{"ac", EncodeOptions{}, []int{3, 4, 6}},             // ▁a unused, no ▁ac
		{"xa", EncodeOptions{}, []int{3, 0, 4}},             // x unknown
		{"xy", EncodeOptions{}, []int{3, 0, 0}},             // one <unk> per character
		{"<u>ab", EncodeOptions{}, []int{3, 11, 4, 5}},      // dummy prefix stands alone before <u>
		{"a<u>", EncodeOptions{}, []int{3, 4, 11}},          // no prefix after a user-defined piece
		{"<s>ab", EncodeOptions{}, []int{3, 0, 0, 0, 4, 5}}, // control pieces are text without ParseSpecial
		{"<s>ab", EncodeOptions{ParseSpecial: true}, []int{1, 4, 5}},
		{"\xffa", EncodeOptions{}, []int{3, 0, 4}}, // invalid UTF-8 reads as U+FFFD
	} {
		if got := tk.Encode(c.text, c.opt); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q, %+v) = %v, want %v", c.text, c.opt, got, c.want)
		}
	}
	if d := tk.Decode([]int{1, 8, 10}); d != "<s> ab c" {
		t.Errorf("Decode = %q", d)
	}
	if d := tk.Decode([]int{8, 10}); d != "ab c" {
		t.Errorf("Decode = %q", d)
	}

	for _, c := range []struct {
		name string
		data []byte
	}{
		{"unigram", testSPModel(miniPieces, spUnigram, false, true)},
		{"no pieces", testSPModel(nil, spBPE, false, true)},
		{"truncated", testSPModel(miniPieces, spBPE, false, true)[:40]},
		{"bad byte piece", testSPModel([]testPiece{{"<unk>", 0, 2}, {"<0xZZ>", 0, 6}}, spBPE, true, true)},
		{"duplicate", testSPModel([]testPiece{{"<unk>", 0, 2}, {"a", 0, 0}, {"a", 0, 0}}, spBPE, false, true)},
		{"unknown type", testSPModel([]testPiece{{"<unk>", 0, 2}, {"a", 0, 9}}, spBPE, false, true)},
	} {
		if _, err := FromSentencePiece(c.data); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}
