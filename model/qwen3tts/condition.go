package qwen3tts

import (
	"fmt"
	"slices"

	"github.com/siskin-ml/siskin/kv"
)

// Conditioning is the talker's keys and values of a prompt's
// conditioning rows (Prompt.Cond: the instruct block, the role and the
// codec prefix). Every request with the same voice, language and
// instructions starts with these rows, so a request can begin from a copy
// of them and prefill only its text (BeginFrom). It holds the very bits
// the prefill computed, and is read-only once made.
type Conditioning struct {
	// Text and Codec are the rows' tracks: what the keys and values are of.
	Text, Codec []int
	layers      []kv.Rows
	bytes       int64
}

// Len is the number of rows (talker positions) held.
func (c *Conditioning) Len() int { return len(c.Text) }

// Bytes is the memory the rows take.
func (c *Conditioning) Bytes() int64 { return c.bytes }

// Matches reports whether p begins with these rows.
func (c *Conditioning) Matches(p *Prompt) bool {
	return p.Cond == len(c.Text) && slices.Equal(p.Text[:p.Cond], c.Text) && slices.Equal(p.Codec[:p.Cond], c.Codec)
}

// BeginFrom is Begin for a request whose prompt starts with cond's rows:
// their keys and values are copied into the utterance's cache and only
// the rest of the prompt is prefilled. The codes are the same as from
// Begin (the talker's rows do not depend on how many rows a step runs).
// cond nil is Begin.
func (m *Model) BeginFrom(r *Request, cond *Conditioning) (*Utterance, error) {
	return m.BeginWith(r, cond, nil)
}

// BeginWith is BeginFrom in the caches of mem (from Utterance.Free; nil:
// new ones). The codes are the same.
func (m *Model) BeginWith(r *Request, cond *Conditioning, mem *Memory) (*Utterance, error) {
	s, rows, err := m.start(r, mem)
	if err != nil {
		return nil, err
	}
	if cond == nil {
		return &Utterance{s: s, prefill: rows}, nil
	}
	if r.Trace != nil {
		return nil, fmt.Errorf("a traced request cannot start from a cached conditioning")
	}
	if !cond.Matches(s.prompt) {
		return nil, fmt.Errorf("the cached conditioning (%d rows) is not this request's", cond.Len())
	}
	for li, l := range s.talkerKV.Layers {
		for i := range cond.Len() {
			l.AppendRow(cond.layers[li], i)
		}
	}
	h := m.Cfg.Talker.Hidden
	return &Utterance{s: s, prefill: rows[cond.Len()*h:], cached: cond.Len()}, nil
}

// Cached is how many prompt rows came from a cached conditioning.
func (u *Utterance) Cached() int { return u.cached }

// Conditioning copies the utterance's conditioning rows out of its talker
// cache once its prompt has been prefilled (nil before, or when the
// prompt has none).
func (u *Utterance) Conditioning() *Conditioning {
	s := u.s
	n := s.prompt.Cond
	if u.prefill != nil || n == 0 || s.talkerKV.Len() < n {
		return nil
	}
	c := &Conditioning{Text: slices.Clone(s.prompt.Text[:n]), Codec: slices.Clone(s.prompt.Codec[:n])}
	for _, l := range s.talkerKV.Layers {
		c.layers = append(c.layers, l.CopyRows(0, n))
		c.bytes += int64(2 * n * l.Dim * l.Type().Size())
	}
	return c
}
