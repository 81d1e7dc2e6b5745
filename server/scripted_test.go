package server

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
)

// scripted runs a real model but makes a fixed token sequence the most
// likely output after any prompt, then EOS: a random-weight test model
// never writes a well-formed tool call by itself, and with this greedy
// requests exercise template, server and parser end to end on a known
// output. A sequence is followed by its cache: the step that feeds the
// token scripted last gets the next one; any other step (a prompt chunk)
// starts the script over.
type scripted struct {
	model.Model
	script []int
	eos    int

	mu  sync.Mutex
	pos map[*kv.Cache]int
}

func newScripted(m model.Model, script []int, eos int) *scripted {
	return &scripted{Model: m, script: script, eos: eos, pos: map[*kv.Cache]int{}}
}

func (s *scripted) ForwardBatch(seqs []model.Seq) ([][]float32, error) {
	out, err := s.Model.ForwardBatch(seqs)
	if err != nil {
		return nil, err
	}
	vocab := s.Config().Vocab
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, sq := range seqs {
		k := s.pos[sq.Cache]
		if k == 0 || len(sq.Tokens) != 1 || k > len(s.script) || sq.Tokens[0] != s.script[k-1] {
			k = 0
		}
		next := s.eos
		if k < len(s.script) {
			next = s.script[k]
		}
		s.pos[sq.Cache] = k + 1
		row := out[i][len(out[i])-vocab:]
		top := float32(math.Inf(-1))
		for _, v := range row {
			top = max(top, v)
		}
		row[next] = top + 30
	}
	return out, nil
}

func (s *scripted) Forward(c *kv.Cache, tokens []int, all bool) ([]float32, error) {
	return model.Forward(s, c, tokens, all)
}

// slowed makes every step of a model take at least delay, so a test can
// count steps while a client acts.
type slowed struct {
	model.Model
	delay time.Duration
}

func (s *slowed) ForwardBatch(seqs []model.Seq) ([][]float32, error) {
	t := time.Now()
	out, err := s.Model.ForwardBatch(seqs)
	time.Sleep(s.delay - time.Since(t))
	return out, err
}

func (s *slowed) Forward(c *kv.Cache, tokens []int, all bool) ([]float32, error) {
	return model.Forward(s, c, tokens, all)
}

// failing makes every step after the first few fail, as a broken model
// or backend would.
type failing struct {
	model.Model
	mu    sync.Mutex
	steps int
}

func (f *failing) ForwardBatch(seqs []model.Seq) ([][]float32, error) {
	f.mu.Lock()
	f.steps++
	n := f.steps
	f.mu.Unlock()
	if n > 3 {
		return nil, errors.New("backend failure")
	}
	return f.Model.ForwardBatch(seqs)
}

func (f *failing) Forward(c *kv.Cache, tokens []int, all bool) ([]float32, error) {
	return model.Forward(f, c, tokens, all)
}
