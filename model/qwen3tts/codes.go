package qwen3tts

import (
	"bytes"
	"strconv"
)

// MarshalCodes writes frames as the codes file: {"codes": [[16 ints],
// ...]}, one line per frame (codec.ParseCodes reads it).
func MarshalCodes(codes [][]int) []byte {
	var b bytes.Buffer
	b.WriteString("{\"codes\": [")
	for f, row := range codes {
		if f > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  [")
		for i, c := range row {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(c))
		}
		b.WriteByte(']')
	}
	if len(codes) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return b.Bytes()
}
