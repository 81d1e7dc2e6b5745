package tokenizer

import "unicode/utf8"

// StreamDecoder decodes ids one at a time, as they are generated. Add
// holds back a multi-byte UTF-8 character until all its bytes have come
// (byte tokens and byte-level BPE split characters across tokens), so a
// caller never shows half a character. Bytes that cannot become valid
// UTF-8 are passed on as they are, so that the concatenated output is
// always exactly Decode of the same ids.
type StreamDecoder struct {
	st  stripState
	buf []byte
}

// NewStreamDecoder returns a decoder for a sequence from its start; its
// output concatenates to Decode(ids).
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return t.NewStreamDecoderWith(DecodeOptions{})
}

// NewStreamDecoderWith returns a decoder whose output concatenates to
// DecodeWith(ids, opt). Use Continuation for text generated after a prompt.
func (t *Tokenizer) NewStreamDecoderWith(opt DecodeOptions) *StreamDecoder {
	return &StreamDecoder{st: newStripState(t, opt)}
}

// Add decodes one more id and returns the text that is now complete.
func (d *StreamDecoder) Add(id int) string {
	d.buf = append(d.buf, d.st.piece(id)...)
	n := completePrefix(d.buf)
	if n == 0 {
		return ""
	}
	s := string(d.buf[:n])
	d.buf = append(d.buf[:0], d.buf[n:]...)
	return s
}

// Flush returns whatever is held back (an unfinished character) and
// empties the decoder; call it when the sequence ends.
func (d *StreamDecoder) Flush() string {
	s := string(d.buf)
	d.buf = d.buf[:0]
	return s
}

// completePrefix returns the length of b without a trailing UTF-8 sequence
// that is incomplete but could still become valid.
func completePrefix(b []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			break // ASCII: nothing pending
		}
		if c >= 0xC0 { // a lead byte: is the sequence it starts unfinished?
			if !utf8.FullRune(b[len(b)-k:]) {
				return len(b) - k
			}
			break
		}
	}
	return len(b)
}
