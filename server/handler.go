package server

import (
	"net/http"
	"time"
)

// apiHandler is a route that returns its error rather than writing it
// (the pattern of the Go blog's "Error handling and Go"): each step of a
// handler can fail with an *apiError, and ServeHTTP is the one place that
// writes it, in OpenAI's shape.
type apiHandler func(http.ResponseWriter, *http.Request) *apiError

func (h apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil && err != errGone {
		writeError(w, err)
	}
}

// errGone is what a handler returns when the client went away: there is
// nobody to write an error to.
var errGone = &apiError{Status: 499, Message: "client closed the request", Type: "client_closed"}

func internalError(err error) *apiError {
	return &apiError{Status: 500, Message: err.Error(), Type: "internal_error"}
}

// gen is one request's generation in flight, shared by every route: its
// choices, their deltas merged in arrival order, and its latency metrics.
type gen struct {
	choices      []*choice
	events       <-chan choiceDelta
	tm           *timer
	promptTokens int // counted once per prompt, however many choices
	n            int // choices per prompt
}

func newGen(m *metrics, start time.Time, cs []*choice, promptTokens, n int) *gen {
	return &gen{choices: cs, events: pump(cs), tm: newTimer(m, start), promptTokens: promptTokens, n: n}
}

// stream hands every delta to send as it arrives, timing the tokens. A
// choice that aborts ends the stream: silently when the client is gone,
// through fail (an error event) when the engine failed; a failed write
// ends it too. Either way the other choices are cancelled. It reports
// whether every choice ran to its end.
func (g *gen) stream(fail func(*apiError), send func(choiceDelta) error) bool {
	for cd := range g.events {
		if cd.d.finish == "abort" {
			drain(g.events, g.choices)
			if cd.c.err != nil {
				fail(internalError(cd.c.err))
			}
			return false
		}
		g.tm.token(cd.c, len(cd.d.tokens))
		if err := send(cd); err != nil {
			drain(g.events, g.choices)
			return false
		}
	}
	g.tm.end()
	return true
}

// collect hands every delta to add until all choices finish, timing the
// tokens, and returns errGone when the client left meanwhile or the
// first engine error.
func (g *gen) collect(r *http.Request, add func(choiceDelta)) *apiError {
	for cd := range g.events {
		g.tm.token(cd.c, len(cd.d.tokens))
		add(cd)
	}
	g.tm.end()
	if r.Context().Err() != nil {
		return errGone
	}
	for _, c := range g.choices {
		if c.err != nil {
			return internalError(c.err)
		}
	}
	return nil
}

// usage counts the tokens of every choice.
func (g *gen) usage() *usage { return usageOf(g.choices, g.promptTokens, g.n) }
