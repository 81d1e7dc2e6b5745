package qwen3tts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// MarshalCodes writes frames as the codes file: {"codes": [[16 ints],
// ...]}, one row per frame, one line per frame.
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

// ParseCodes reads a codes file, checking that every frame has groups
// codes in [0, vocab).
func ParseCodes(data []byte, groups, vocab int) ([][]int, error) {
	var f struct {
		Codes *[][]json.Number `json:"codes"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("codes file: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("codes file: data after the JSON object")
	}
	if f.Codes == nil {
		return nil, fmt.Errorf(`codes file: no "codes" array`)
	}
	out := make([][]int, len(*f.Codes))
	for i, row := range *f.Codes {
		if len(row) != groups {
			return nil, fmt.Errorf("codes file: frame %d has %d codes, want %d", i, len(row), groups)
		}
		out[i] = make([]int, groups)
		for j, n := range row {
			v, err := strconv.Atoi(n.String())
			if err != nil || v < 0 || v >= vocab {
				return nil, fmt.Errorf("codes file: frame %d, code %d: %s is not a code in [0, %d)", i, j, n, vocab)
			}
			out[i][j] = v
		}
	}
	return out, nil
}
