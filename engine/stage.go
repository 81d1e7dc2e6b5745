package engine

import "context"

// Stage is one step function of a pipeline: it advances a batch of its
// items by one step. The engine calls a stage only from its loop
// goroutine, except Reserve, which Submit calls.
type Stage interface {
	// Name labels the stage in Stats and errors.
	Name() string
	// Limits returns the stage's batching and queue bounds; the engine
	// reads them once, when it starts.
	Limits() StageLimits
	// Reserve checks a request for this stage and returns the most bytes
	// its item can ever hold here. The engine admits a request when the
	// sum over the stages fits its byte budget, holds each stage's part
	// while the stage's item lives and frees it when the item ends, so an
	// admitted request always runs to its end. Reserve may run on any
	// goroutine and must not keep r.
	Reserve(r *Request) (int64, error)
	// Start makes the state of a new item (Item.State) when its request is
	// admitted, before any step. An error fails the request.
	Start(it *Item) error
	// Step advances every item of the batch by one step. A later stage
	// reads the events its upstream stage emitted with Item.Input and
	// takes those it used with Item.Consume; every stage reports with
	// Item.Emit (an event with Finish set is the item's last) or
	// Item.Fail. An item is stepped again only while it is live and, for
	// a later stage, has input queued, so a step should consume input (into
	// the item's state if it needs more to emit) or finish.
	Step(batch []*Item)
	// Release frees an item's state. The engine calls it once for every
	// started item: when the item finishes or fails (then from within Step,
	// inside Emit or Fail), or when its request is cancelled, fails in
	// another stage or the engine closes. The stage must not touch the item
	// afterwards.
	Release(it *Item)
}

// StageLimits bound a stage's batches and the queue that feeds it.
type StageLimits struct {
	// MaxItems is the most items in one step; 0 means Config.MaxNumSeqs.
	// When more are ready, the stage takes turns over them.
	MaxItems int
	// QueueLen bounds the events queued into one item of this stage by
	// the stage before it: that stage does not step the item's upstream
	// twin while the queue is full (backpressure). A step that emits k
	// events can overshoot by k-1. 0 means 16; the first stage has no
	// queue.
	QueueLen int
}

// Item is one request's work in one stage.
type Item struct {
	// State is the stage's own per-item state, made by Start.
	State any

	r        *request
	stage    int
	in       []Event // queued from the stage before
	reserved int64
	started  bool
	done     bool
}

// Request returns the request the item belongs to.
func (it *Item) Request() *Request { return &it.r.req }

// Context returns the request's context.
func (it *Item) Context() context.Context { return it.r.ctx }

// Stage returns the item's stage index in the pipeline.
func (it *Item) Stage() int { return it.stage }

// Input returns the events queued from the stage before, oldest first; the
// last one carries Finish when that stage is done. The first stage has
// none: its input is the Request.
func (it *Item) Input() []Event { return it.in }

// Consume removes the first n events of Input.
func (it *Item) Consume(n int) {
	if n <= 0 {
		return
	}
	k := copy(it.in, it.in[n:])
	clear(it.in[k:])
	it.in = it.in[:k]
	it.r.e.stageStats[it.stage].queued.Add(int64(-n))
}

// Emit sends an event to the next stage's item, or to the caller from the
// last stage. An event with Finish set ends the item, and any items of
// earlier stages still running (nothing would read their output): their
// states are released and their reservations freed before Emit returns;
// from the last stage it ends the request.
func (it *Item) Emit(ev Event) {
	if it.done {
		return
	}
	r, e := it.r, it.r.e
	if ev.Finish != "" {
		e.endItem(it) // freed before anyone hears of the end
		for j := range it.stage {
			e.endItem(&r.items[j]) // nothing would read what they make
		}
	}
	if it.stage+1 < len(r.items) {
		if next := &r.items[it.stage+1]; !next.done {
			next.in = append(next.in, ev)
			e.stageStats[next.stage].queued.Add(1)
		}
		return
	}
	if ev.Finish != "" {
		e.endRequest(r)
		e.deliver(r, ev)
		close(r.out)
		return
	}
	e.deliver(r, ev)
}

// Fail ends the item's request with err: every stage's item of the
// request is released. Other requests are not affected. err reaches the
// caller as it is: a stage names itself in it if that helps.
func (it *Item) Fail(err error) {
	if it.done || it.r.done {
		return
	}
	it.r.e.fail(it.r, "", err)
}

// Done reports whether the item has ended.
func (it *Item) Done() bool { return it.done }
