package server

import (
	"context"
	"strings"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/tokenizer"
)

// choice is one generated sequence of a request: engine events turned
// into text, with stop strings cut out and never split across deltas.
type choice struct {
	index      int
	events     <-chan engine.Event
	cancel     context.CancelFunc
	dec        *tokenizer.StreamDecoder
	stops      []string
	keepStop   bool // include_stop_str_in_output
	stopIDs    map[int]bool
	pending    string // decoded text held back: it may begin a stop string
	ids        []int
	tokens     []sample.Token
	finish     string
	stopReason any
	cached     int
	prompt     []sample.Token // the prompt's scores (echo), from the first event
	started    bool
	err        error
}

// delta is what a choice releases at once.
type delta struct {
	text   string
	tokens []sample.Token
	finish string // set on the last delta
}

// next waits for the next engine event and returns the released delta.
// ok is false once the choice has finished and everything was released.
func (c *choice) next() (d delta, ok bool) {
	if c.finish != "" {
		return delta{}, false
	}
	ev, open := <-c.events
	if !open {
		c.finish = "abort"
		return delta{finish: c.finish}, true
	}
	if !c.started {
		c.started, c.cached, c.prompt = true, ev.CachedTokens, ev.Prompt
	}
	if ev.Err != nil {
		c.err = ev.Err
		c.finish = "abort"
		return delta{finish: c.finish}, true
	}
	if ev.Finish == engine.FinishStop {
		// A stop token (EOS or stop_token_ids) ends the text; it is not
		// part of it.
		if c.stopIDs[ev.Token.ID] {
			c.stopReason = ev.Token.ID
		}
		c.pending += c.dec.Flush()
		return c.release(true, "stop"), true
	}
	if ev.Token.ID == engine.NoToken {
		// max_tokens 0 (echo): the prompt was all.
		c.pending += c.dec.Flush()
		return c.release(true, string(ev.Finish)), true
	}
	c.ids = append(c.ids, ev.Token.ID)
	c.tokens = append(c.tokens, ev.Token)
	c.pending += c.dec.Add(ev.Token.ID)
	d = c.release(false, "")
	d.tokens = []sample.Token{ev.Token}
	if d.finish == "" && ev.Finish != "" {
		c.pending += c.dec.Flush()
		last := c.release(true, string(ev.Finish))
		d.text += last.text
		d.finish = last.finish
	}
	return d, true
}

// release hands out pending text up to the first stop string (ending the
// choice there) or, while more may come, up to the longest suffix that
// could still begin one.
func (c *choice) release(final bool, why string) delta {
	if i, s := c.findStop(); i >= 0 {
		if c.keepStop {
			i += len(s)
		}
		text := c.pending[:i]
		c.pending = ""
		c.finish, c.stopReason = "stop", s
		c.cancel() // the engine frees the sequence within a step
		return delta{text: text, finish: c.finish}
	}
	if final {
		text := c.pending
		c.pending = ""
		c.finish = why
		return delta{text: text, finish: why}
	}
	keep := 0
	for _, s := range c.stops {
		for k := min(len(s)-1, len(c.pending)); k > keep; k-- {
			if strings.HasSuffix(c.pending, s[:k]) {
				keep = k
				break
			}
		}
	}
	text := c.pending[:len(c.pending)-keep]
	c.pending = c.pending[len(c.pending)-keep:]
	return delta{text: text}
}

func (c *choice) findStop() (int, string) {
	at, which := -1, ""
	for _, s := range c.stops {
		if i := strings.Index(c.pending, s); i >= 0 && (at < 0 || i < at) {
			at, which = i, s
		}
	}
	return at, which
}

func contextWithCancel(r interface{ Context() context.Context }) (context.Context, context.CancelFunc) {
	return context.WithCancel(r.Context())
}

// relay forwards a request's engine events through an unbounded queue.
// The engine loop sends into a small buffer and blocks when it is full,
// which would stall every running request behind one slow reader (a
// client that stops reading its stream) or behind a choice that stopped
// reading after a stop string. relay always keeps reading; once ctx is
// done nobody reads the result any more, so it discards the rest and
// closes the output.
func relay(ctx context.Context, in <-chan engine.Event) <-chan engine.Event {
	out := make(chan engine.Event)
	go func() {
		defer close(out)
		var queue []engine.Event
		for in != nil || len(queue) > 0 {
			var send chan engine.Event
			var head engine.Event
			if len(queue) > 0 {
				send, head = out, queue[0]
			}
			select {
			case ev, ok := <-in:
				if !ok {
					in = nil
					continue
				}
				queue = append(queue, ev)
			case send <- head:
				queue[0] = engine.Event{}
				queue = queue[1:]
			case <-ctx.Done():
				if in != nil {
					for range in {
					}
				}
				return
			}
		}
	}()
	return out
}

// choiceDelta is a delta tagged with the choice it belongs to.
type choiceDelta struct {
	c *choice
	d delta
}

// pump merges the deltas of every choice into one channel, closed when
// all choices have finished.
func pump(cs []*choice) <-chan choiceDelta {
	out := make(chan choiceDelta, 16)
	done := make(chan struct{}, len(cs))
	for _, c := range cs {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				d, ok := c.next()
				if !ok {
					return
				}
				out <- choiceDelta{c, d}
				if d.finish != "" {
					return
				}
			}
		}()
	}
	go func() {
		for range cs {
			<-done
		}
		close(out)
	}()
	return out
}

// drain reads the rest of every choice's events after an early exit so
// no goroutine stays blocked.
func drain(ch <-chan choiceDelta, cs []*choice) {
	cancelAll(cs)
	for range ch {
	}
}
