package server

import "github.com/siskin-ml/siskin/chat/toolcall"

// blockKind is what one block of a reply holds. The Responses API calls
// blocks output items, Anthropic's Messages API content blocks.
type blockKind int

const (
	blockNone blockKind = iota
	blockReasoning
	blockText
	blockCall
)

// blockSink receives a reply as blocks: open, deltas, close.
type blockSink interface {
	open(kind blockKind, call *toolcall.Call) error
	delta(text string) error
	close() error
}

// blocks splits parser output into blocks for the Responses and Messages
// routes: a run of reasoning, a run of text, one block per tool call
// (whose arguments come as one delta, since the parsers release a call
// whole). Within one delta reasoning comes before text and text before
// calls, as the parsers release them.
type blocks struct {
	sink   blockSink
	cur    blockKind
	calls  int
	single bool // parallel tool calls off: calls after the first are dropped
}

func (b *blocks) switchTo(k blockKind, call *toolcall.Call) error {
	if b.cur == k && k != blockCall {
		return nil
	}
	if err := b.end(); err != nil {
		return err
	}
	b.cur = k
	return b.sink.open(k, call)
}

// add feeds one parsed delta.
func (b *blocks) add(res toolcall.Result) error {
	if res.Reasoning != "" {
		if err := b.switchTo(blockReasoning, nil); err != nil {
			return err
		}
		if err := b.sink.delta(res.Reasoning); err != nil {
			return err
		}
	}
	if res.Content != "" {
		if err := b.switchTo(blockText, nil); err != nil {
			return err
		}
		if err := b.sink.delta(res.Content); err != nil {
			return err
		}
	}
	for i := range res.Calls {
		if b.single && b.calls > 0 {
			break
		}
		b.calls++
		if err := b.switchTo(blockCall, &res.Calls[i]); err != nil {
			return err
		}
		if err := b.sink.delta(res.Calls[i].Arguments); err != nil {
			return err
		}
	}
	return nil
}

// end closes the open block, if any.
func (b *blocks) end() error {
	if b.cur == blockNone {
		return nil
	}
	b.cur = blockNone
	return b.sink.close()
}
