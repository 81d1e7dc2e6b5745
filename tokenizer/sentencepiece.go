package tokenizer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
)

// SentencePiece model files (tokenizer.model) are a protobuf ModelProto.
// Only the fields that change tokenization are read; field numbers are
// those of sentencepiece_model.proto.

// pbReader walks the fields of one protobuf message.
type pbReader struct {
	b   []byte
	err error
}

// next returns the next field: its number, wire type, and value (varints
// and fixed-size values in v, length-delimited ones in s). It returns
// false at the end of the message or on malformed input (then r.err is set).
func (r *pbReader) next() (field int, wire int, v uint64, s []byte, ok bool) {
	if len(r.b) == 0 || r.err != nil {
		return 0, 0, 0, nil, false
	}
	key, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("bad field key")
		return 0, 0, 0, nil, false
	}
	r.b = r.b[n:]
	field, wire = int(key>>3), int(key&7)
	if field == 0 || key>>3 > math.MaxInt32 {
		r.err = fmt.Errorf("bad field number %d", key>>3)
		return 0, 0, 0, nil, false
	}
	switch wire {
	case 0: // varint
		v, n = binary.Uvarint(r.b)
		if n <= 0 {
			r.err = errors.New("bad varint")
			return 0, 0, 0, nil, false
		}
		r.b = r.b[n:]
	case 1: // fixed64
		if len(r.b) < 8 {
			r.err = errors.New("truncated fixed64")
			return 0, 0, 0, nil, false
		}
		v = binary.LittleEndian.Uint64(r.b)
		r.b = r.b[8:]
	case 2: // length-delimited
		l, n := binary.Uvarint(r.b)
		if n <= 0 || l > uint64(len(r.b)-n) {
			r.err = errors.New("truncated length-delimited field")
			return 0, 0, 0, nil, false
		}
		s = r.b[n : n+int(l)]
		r.b = r.b[n+int(l):]
	case 5: // fixed32
		if len(r.b) < 4 {
			r.err = errors.New("truncated fixed32")
			return 0, 0, 0, nil, false
		}
		v = uint64(binary.LittleEndian.Uint32(r.b))
		r.b = r.b[4:]
	default: // groups (3, 4) are not used by SentencePiece
		r.err = fmt.Errorf("unsupported wire type %d", wire)
		return 0, 0, 0, nil, false
	}
	return field, wire, v, s, true
}

// SentencePiece piece types (ModelProto.SentencePiece.Type).
var spKinds = map[uint64]tokenKind{
	1: kindNormal,
	2: kindUnknown,
	3: kindControl,
	4: kindUserDefined,
	5: kindUnused,
	6: kindByte,
}

// TrainerSpec.ModelType values.
const (
	spUnigram = 1
	spBPE     = 2
	spWord    = 3
	spChar    = 4
)

type spModel struct {
	pieces []string
	scores []float32
	kinds  []tokenKind

	modelType   uint64
	byteFallbk  bool
	unk, bos    int64
	eos         int64
	wsAsSuffix  bool
	charsmap    []byte
	dummyPrefix bool
	removeExtra bool
	escapeWS    bool
}

// wantWire checks a field's wire type; a mismatch means the file is not
// what it claims.
func wantWire(name string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s: wire type %d, want %d", name, got, want)
	}
	return nil
}

func parseSPModel(data []byte) (*spModel, error) {
	m := &spModel{
		// proto2 defaults of sentencepiece_model.proto
		modelType: spUnigram, unk: 0, bos: 1, eos: 2,
		dummyPrefix: true, removeExtra: true, escapeWS: true,
	}
	r := pbReader{b: data}
	for {
		f, w, _, s, ok := r.next()
		if !ok {
			break
		}
		var err error
		switch f {
		case 1: // pieces
			if err = wantWire("pieces", w, 2); err == nil {
				err = m.parsePiece(s)
			}
		case 2: // trainer_spec
			if err = wantWire("trainer_spec", w, 2); err == nil {
				err = m.parseTrainer(s)
			}
		case 3: // normalizer_spec
			if err = wantWire("normalizer_spec", w, 2); err == nil {
				err = m.parseNormalizer(s)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

func (m *spModel) parsePiece(b []byte) error {
	piece, score, kind := "", float32(0), kindNormal
	r := pbReader{b: b}
	for {
		f, w, v, s, ok := r.next()
		if !ok {
			break
		}
		switch f {
		case 1:
			if err := wantWire("piece", w, 2); err != nil {
				return err
			}
			piece = string(s)
		case 2:
			if err := wantWire("score", w, 5); err != nil {
				return err
			}
			score = math.Float32frombits(uint32(v))
		case 3:
			if err := wantWire("type", w, 0); err != nil {
				return err
			}
			k, ok := spKinds[v]
			if !ok {
				return fmt.Errorf("piece %d: unknown type %d", len(m.pieces), v)
			}
			kind = k
		}
	}
	if r.err != nil {
		return fmt.Errorf("piece %d: %w", len(m.pieces), r.err)
	}
	m.pieces = append(m.pieces, piece)
	m.scores = append(m.scores, score)
	m.kinds = append(m.kinds, kind)
	return nil
}

func (m *spModel) parseTrainer(b []byte) error {
	r := pbReader{b: b}
	for {
		f, w, v, _, ok := r.next()
		if !ok {
			break
		}
		if w != 0 {
			continue // strings and floats: nothing tokenization needs
		}
		switch f {
		case 3:
			m.modelType = v
		case 24:
			m.wsAsSuffix = v != 0
		case 35:
			m.byteFallbk = v != 0
		case 40:
			m.unk = int64(int32(v)) // int32 fields are sign-extended varints
		case 41:
			m.bos = int64(int32(v))
		case 42:
			m.eos = int64(int32(v))
		}
	}
	if r.err != nil {
		return fmt.Errorf("trainer_spec: %w", r.err)
	}
	return nil
}

func (m *spModel) parseNormalizer(b []byte) error {
	r := pbReader{b: b}
	for {
		f, w, v, s, ok := r.next()
		if !ok {
			break
		}
		switch {
		case f == 2 && w == 2:
			m.charsmap = s
		case f == 3 && w == 0:
			m.dummyPrefix = v != 0
		case f == 4 && w == 0:
			m.removeExtra = v != 0
		case f == 5 && w == 0:
			m.escapeWS = v != 0
		}
	}
	if r.err != nil {
		return fmt.Errorf("normalizer_spec: %w", r.err)
	}
	return nil
}

// FromSentencePieceFile loads a SentencePiece model file (tokenizer.model).
func FromSentencePieceFile(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := FromSentencePiece(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// FromSentencePiece builds a tokenizer from the bytes of a SentencePiece
// model (a serialized ModelProto) with the semantics of the sentencepiece
// library's encoder: the dummy-prefix space only at the start of the
// input, user-defined pieces kept whole, merges only into normal,
// user-defined and unused pieces, unused pieces split back into their
// parts, and byte fallback. Supported: BPE models with the identity
// normalizer (Llama 2, Mistral, Gemma); Unigram models and precompiled
// normalization rules are errors rather than approximations.
//
// Encode with ParseSpecial also recognises control pieces ("<s>",
// "[INST]"), which the library never does; AddSpecial adds BOS.
func FromSentencePiece(data []byte) (*Tokenizer, error) {
	m, err := parseSPModel(data)
	if err != nil {
		return nil, fmt.Errorf("sentencepiece model: %w", err)
	}
	if err := m.supported(); err != nil {
		return nil, err
	}
	n := len(m.pieces)
	t := &Tokenizer{
		model:         modelSPM,
		sentencePiece: true,
		pieces:        m.pieces,
		kinds:         m.kinds,
		scores:        m.scores,
		ids:           make(map[string]int, n),
		render:        make([]string, n),
		bos:           -1,
		eos:           -1,
		unk:           -1,
		spacePrefix:   m.dummyPrefix,
		byteFallback:  m.byteFallbk,
		eog:           map[int]bool{},
	}
	id := func(v int64) int {
		if v < 0 || v >= int64(n) {
			return -1
		}
		return int(v)
	}
	t.unk, t.bos, t.eos = id(m.unk), id(m.bos), id(m.eos)
	if t.bos >= 0 {
		t.prefixIDs = []int{t.bos}
	}
	if m.dummyPrefix {
		t.strip = stripFirstToken
	}
	for i := range t.byteIDs {
		t.byteIDs[i] = -1
	}
	added, err := t.spPieces()
	if err != nil {
		return nil, err
	}
	if !m.byteFallbk {
		for i := range t.byteIDs {
			t.byteIDs[i] = -1
		}
	}
	t.finish(added)
	return t, nil
}

// supported refuses what the encoder does not implement.
func (m *spModel) supported() error {
	if len(m.pieces) == 0 {
		return errors.New("sentencepiece model: no pieces")
	}
	switch m.modelType {
	case spBPE:
	case spUnigram:
		return errors.New("sentencepiece model: Unigram models are not supported")
	default:
		return fmt.Errorf("sentencepiece model: unsupported model type %d", m.modelType)
	}
	if len(m.charsmap) > 0 {
		return errors.New("sentencepiece model: precompiled normalization rules are not supported")
	}
	if !m.escapeWS || m.removeExtra || m.wsAsSuffix {
		return fmt.Errorf("sentencepiece model: unsupported normalizer (escape_whitespaces %v, remove_extra_whitespaces %v, treat_whitespace_as_suffix %v)",
			m.escapeWS, m.removeExtra, m.wsAsSuffix)
	}
	return nil
}

// spPieces indexes the pieces, sets their rendered text and byte ids,
// and returns those the splitter matches in text (control, unknown and
// user-defined pieces).
func (t *Tokenizer) spPieces() ([]addedToken, error) {
	var added []addedToken
	for i, p := range t.pieces {
		if _, dup := t.ids[p]; dup {
			return nil, fmt.Errorf("sentencepiece model: piece %q listed twice", p)
		}
		t.ids[p] = i
		switch t.kinds[i] {
		case kindNormal, kindUnused:
			t.render[i] = strings.ReplaceAll(p, "▁", " ")
		case kindByte:
			b := byteTokenText(p)
			if len(b) != 1 || b == p {
				return nil, fmt.Errorf("sentencepiece model: byte piece %q", p)
			}
			t.byteIDs[b[0]] = i
			t.render[i] = b
		case kindControl, kindUnknown:
			t.render[i] = p
			added = append(added, addedToken{text: p, id: i, special: true})
		case kindUserDefined:
			t.render[i] = strings.ReplaceAll(p, "▁", " ")
			added = append(added, addedToken{text: p, id: i})
		}
	}
	return added, nil
}
