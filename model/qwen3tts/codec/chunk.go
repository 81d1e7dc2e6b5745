package codec

import "time"

// MinLaterChunk and MaxLaterChunk bound LaterChunk.
const (
	MinLaterChunk = 2
	MaxLaterChunk = 8
)

// FrameDuration is the audio one frame decodes to (80 ms at 12.5 Hz).
func (d *Decoder) FrameDuration() time.Duration {
	return time.Duration(d.cfg.SamplesPerFrame()) * time.Second / SampleRate
}

// LaterChunk is how many frames a streamed utterance's next audio chunk
// after the first waits for, given the frames decoded so far and the
// time since the first chunk's audio went out: as many as half the audio
// still ahead of real-time playback covers, from MinLaterChunk to
// MaxLaterChunk. So the chunk's frames, made no slower than real time,
// arrive before what was sent runs out, and once the utterance is ahead
// the codec reads its weights (456 MB in float32 at the released size:
// in pairs about a sixth of its time) for more frames at a time:
// BenchmarkRealStream on the 2-vCPU Zen 5, pushes of 2, 4 and 8 frames:
// 4.50, 5.08 and 5.18 audio seconds a second.
func (d *Decoder) LaterChunk(decoded int, sinceFirst time.Duration) int {
	f := d.FrameDuration()
	ahead := time.Duration(decoded)*f - sinceFirst
	return min(MaxLaterChunk, max(MinLaterChunk, int(ahead/(2*f))))
}
