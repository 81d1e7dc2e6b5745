// Package audio writes mono float samples (in [-1, 1]) as 16-bit audio
// files: WAV (RIFF, PCM s16le), raw PCM s16le, and FLAC (lossless, via
// github.com/mewkiz/flac). MP3 and Opus are refused: no pure-Go encoder
// is worth depending on yet.
package audio

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"
)

// Format is an output file format.
type Format string

// The formats Write produces.
const (
	WAV  Format = "wav"
	PCM  Format = "pcm"
	FLAC Format = "flac"
)

// Formats lists the supported formats, for help texts.
const Formats = "wav, pcm (raw s16le) or flac"

// ParseFormat checks a format name (case-insensitive).
func ParseFormat(name string) (Format, error) {
	switch f := Format(strings.ToLower(name)); f {
	case WAV, PCM, FLAC:
		return f, nil
	case "mp3", "opus", "ogg", "aac":
		up := strings.ToUpper(string(f))
		return "", fmt.Errorf("%s output is not supported: siskin has no pure-Go %s encoder worth depending on yet; use %s and convert it", up, up, Formats)
	default:
		return "", fmt.Errorf("unknown audio format %q: want %s", name, Formats)
	}
}

// Int16 converts a float sample to 16 bits: clamped to [-1, 1], scaled by
// 32767 and rounded to the nearest integer, ties to even (as libsndfile's
// lrintf); NaN becomes 0. So 1 -> 32767, -1 -> -32767, and -32768 is never
// produced.
func Int16(x float32) int16 {
	if x != x {
		return 0
	}
	v := float64(min(max(x, -1), 1)) * 32767
	return int16(math.RoundToEven(v))
}

// ToInt16 converts every sample with Int16, appending to dst.
func ToInt16(dst []int16, x []float32) []int16 {
	for _, v := range x {
		dst = append(dst, Int16(v))
	}
	return dst
}

// Write writes mono samples at rate Hz to w in format f.
func Write(w io.Writer, f Format, samples []int16, rate int) error {
	switch f {
	case WAV:
		return WriteWAV(w, samples, rate)
	case PCM:
		return WritePCM(w, samples)
	case FLAC:
		return WriteFLAC(w, samples, rate)
	}
	_, err := ParseFormat(string(f))
	return err
}

// WAVHeaderSize is the size of the header WriteWAV writes.
const WAVHeaderSize = 44

// maxWAVSamples keeps the RIFF sizes within 32 bits.
const maxWAVSamples = (math.MaxUint32 - WAVHeaderSize) / 2

// WAVHeader returns the 44-byte header of a mono 16-bit PCM WAV file of n
// samples at rate Hz.
func WAVHeader(n, rate int) ([]byte, error) {
	if n < 0 || n > maxWAVSamples {
		return nil, fmt.Errorf("wav: %d samples do not fit a RIFF file", n)
	}
	if rate <= 0 || rate > math.MaxInt32/2 {
		return nil, fmt.Errorf("wav: sample rate %d", rate)
	}
	h := make([]byte, 0, WAVHeaderSize)
	le := binary.LittleEndian
	h = append(h, "RIFF"...)
	h = le.AppendUint32(h, uint32(36+2*n))
	h = append(h, "WAVEfmt "...)
	h = le.AppendUint32(h, 16)           // fmt chunk size
	h = le.AppendUint16(h, 1)            // PCM
	h = le.AppendUint16(h, 1)            // mono
	h = le.AppendUint32(h, uint32(rate)) // sample rate
	h = le.AppendUint32(h, uint32(2*rate))
	h = le.AppendUint16(h, 2)  // block align
	h = le.AppendUint16(h, 16) // bits per sample
	h = append(h, "data"...)
	h = le.AppendUint32(h, uint32(2*n))
	return h, nil
}

// WriteWAV writes a RIFF WAV file: PCM, mono, 16-bit little-endian.
func WriteWAV(w io.Writer, samples []int16, rate int) error {
	h, err := WAVHeader(len(samples), rate)
	if err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	return WritePCM(w, samples)
}

// WritePCM writes raw signed 16-bit little-endian samples.
func WritePCM(w io.Writer, samples []int16) error {
	buf := make([]byte, 0, 2*min(len(samples), 1<<15))
	for len(samples) > 0 {
		n := min(len(samples), 1<<15)
		buf = buf[:0]
		for _, s := range samples[:n] {
			buf = binary.LittleEndian.AppendUint16(buf, uint16(s))
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		samples = samples[n:]
	}
	return nil
}

// flacBlock is the FLAC block size (samples per frame), libFLAC's default.
const flacBlock = 4096

// WriteFLAC writes a FLAC stream of mono 16-bit samples. The STREAMINFO
// block carries the sample count and MD5 signature, computed up front, so
// w need not be seekable.
func WriteFLAC(w io.Writer, samples []int16, rate int) error {
	if rate <= 0 || rate > 655350 {
		return fmt.Errorf("flac: sample rate %d", rate)
	}
	info := &meta.StreamInfo{
		BlockSizeMin:  16,
		BlockSizeMax:  flacBlock,
		SampleRate:    uint32(rate),
		NChannels:     1,
		BitsPerSample: 16,
		NSamples:      uint64(len(samples)),
	}
	sum := md5.New()
	var le [2]byte
	for _, s := range samples {
		binary.LittleEndian.PutUint16(le[:], uint16(s))
		sum.Write(le[:])
	}
	copy(info.MD5sum[:], sum.Sum(nil))
	enc, err := flac.NewEncoder(nopCloser{w}, info)
	if err != nil {
		return fmt.Errorf("flac: %v", err)
	}
	buf := make([]int32, 0, flacBlock)
	for i := 0; i < len(samples); i += flacBlock {
		block := samples[i:min(i+flacBlock, len(samples))]
		buf = buf[:0]
		for _, s := range block {
			buf = append(buf, int32(s))
		}
		f := &frame.Frame{
			Header: frame.Header{
				HasFixedBlockSize: true,
				BlockSize:         uint16(len(block)),
				SampleRate:        uint32(rate),
				Channels:          frame.ChannelsMono,
				BitsPerSample:     16,
			},
			Subframes: []*frame.Subframe{{
				SubHeader: frame.SubHeader{Pred: frame.PredVerbatim},
				Samples:   buf,
				NSamples:  len(block),
			}},
		}
		if err := enc.WriteFrame(f); err != nil {
			return fmt.Errorf("flac: %v", err)
		}
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("flac: %v", err)
	}
	return nil
}

// nopCloser hides w's Close and Seek from the encoder: the caller owns
// w, and the header is already complete.
type nopCloser struct{ w io.Writer }

func (n nopCloser) Write(p []byte) (int, error) { return n.w.Write(p) }
