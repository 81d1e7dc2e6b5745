package tokenizer

import (
	"unicode/utf8"
)

// GPT-2's byte-level alphabet: every byte is shown as a printable rune so
// that BPE vocabularies hold only visible characters. Printable Latin-1
// bytes map to themselves, the other 68 bytes to U+0100 onwards in order.
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = 256 + n
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelEncode maps raw bytes to their byte-level spelling.
func byteLevelEncode(s string) string {
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		buf = utf8.AppendRune(buf, byteToRune[s[i]])
	}
	return string(buf)
}

// byteLevelDecode maps a byte-level spelling back to raw bytes. A token
// with a rune outside the alphabet is taken as it is, whole (the Hugging
// Face ByteLevel decoder does this; it only happens for added tokens).
func byteLevelDecode(s string) string {
	buf := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := runeToByte[r]
		if !ok {
			return s
		}
		buf = append(buf, b)
	}
	return string(buf)
}
