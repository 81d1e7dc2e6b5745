package qwen3tts

import "fmt"

// Utterance is one request generated a step at a time, for a scheduler
// that batches utterances which start and end at different steps
// (continuous batching). Generate is the same loop for requests that all
// start together.
type Utterance struct {
	s       *stream
	prefill []float32 // the prompt rows until the first step
	sent    int       // frames handed out by Frames
	cached  int       // prompt rows restored from a Conditioning
}

// Begin checks r and prepares its utterance; nothing runs until Step.
func (m *Model) Begin(r *Request) (*Utterance, error) { return m.BeginFrom(r, nil) }

// Done reports whether the utterance has ended.
func (u *Utterance) Done() bool { return u.s.done }

// Stop says why it ended: "eos" or "max_frames" ("" while running).
func (u *Utterance) Stop() string { return u.s.stop }

// Seed is the talker generator's seed.
func (u *Utterance) Seed() uint64 { return u.s.talkerSeq.Seed() }

// Frames returns the frames made since the last call.
func (u *Utterance) Frames() [][]int {
	f := u.s.codes[u.sent:]
	u.sent = len(u.s.codes)
	return f
}

// Step advances every live utterance by one frame: one batched talker
// pass feeds new utterances their prompt and the others their last
// frame, then the code predictor completes the frame of each utterance
// the talker did not end (one batched pass per sub-step). A frame is
// thus out (Frames) at the end of the step that began it, not one
// talker pass later: the first frame costs the prefill and the
// predictor, the time to first audio. Each utterance gets the codes it
// would get alone. An error concerns the whole batch.
func (m *Model) Step(us []*Utterance) error {
	var fresh, started []*stream
	var freshRows, rows [][]float32
	for _, u := range us {
		switch {
		case u.s.done:
		case u.prefill != nil:
			fresh, freshRows = append(fresh, u.s), append(freshRows, u.prefill)
			u.prefill = nil
		default:
			started, rows = append(started, u.s), append(rows, u.s.next)
			u.s.next = nil
		}
	}
	// The prefill first: talkerStep charges a batch by its first stream.
	streams := append(fresh, started...)
	if len(streams) == 0 {
		return nil
	}
	if err := m.talkerStep(streams, append(freshRows, rows...)); err != nil {
		return err
	}
	live := active(streams)
	if len(live) == 0 {
		return nil
	}
	sums, err := m.predictAll(live)
	if err != nil {
		return fmt.Errorf("code predictor: %w", err)
	}
	for i, next := range m.nextInputs(live, sums) {
		live[i].next = next
	}
	return nil
}
