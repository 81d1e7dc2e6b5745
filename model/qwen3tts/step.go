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

// Step advances every live utterance by one talker step: the code
// predictor first completes the frame of each utterance past its prefill
// (one batched pass per sub-step), then one batched talker pass feeds new
// utterances their prompt and the others their last frame. Each
// utterance gets the codes it would get alone. An error concerns the
// whole batch.
func (m *Model) Step(us []*Utterance) error {
	var fresh, started []*stream
	var freshRows [][]float32
	for _, u := range us {
		switch {
		case u.s.done:
		case u.prefill != nil:
			fresh, freshRows = append(fresh, u.s), append(freshRows, u.prefill)
			u.prefill = nil
		default:
			started = append(started, u.s)
		}
	}
	streams, rows := fresh, freshRows
	if len(started) > 0 {
		sums, err := m.predictAll(started)
		if err != nil {
			return fmt.Errorf("code predictor: %w", err)
		}
		streams = append(streams, started...)
		rows = append(rows, m.nextInputs(started, sums)...)
	}
	if len(streams) == 0 {
		return nil
	}
	return m.talkerStep(streams, rows)
}
