package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ParseCodes reads a codes file, {"codes": [[q ints], ...]} with one
// array of quantizers codes per frame (other keys are ignored), and
// returns the codes frame-major. A codebookSize > 0 also checks each code
// lies in [0, codebookSize). Errors name the frame and codebook.
func ParseCodes(data []byte, quantizers, codebookSize int) ([]int32, error) {
	var doc struct {
		Codes *[]json.RawMessage `json:"codes"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON object with a \"codes\" array: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON object")
	}
	if doc.Codes == nil {
		return nil, fmt.Errorf("missing key \"codes\" (want {\"codes\": [[%d ints], ...]})", quantizers)
	}
	frames := *doc.Codes
	if len(frames) == 0 {
		return nil, fmt.Errorf("\"codes\" holds no frames")
	}
	out := make([]int32, 0, len(frames)*quantizers)
	for f, raw := range frames {
		var frame []int64
		if err := json.Unmarshal(raw, &frame); err != nil {
			return nil, fmt.Errorf("codes[%d]: not an array of integers: %v", f, err)
		}
		if len(frame) != quantizers {
			return nil, fmt.Errorf("codes[%d]: %d codes, want %d (one per codebook)", f, len(frame), quantizers)
		}
		for q, c := range frame {
			limit := int64(1 << 30)
			if codebookSize > 0 {
				limit = int64(codebookSize)
			}
			if c < 0 || c >= limit {
				return nil, fmt.Errorf("codes[%d]: frame %d codebook %d: code %d outside [0, %d)", f, f, q, c, limit)
			}
			out = append(out, int32(c))
		}
	}
	return out, nil
}
