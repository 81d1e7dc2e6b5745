package tokenizer

import (
	"unsafe"

	"github.com/siskin-ml/siskin/ledger"
)

// Bytes estimates the heap the tokenizer holds: vocabulary strings and
// their decoded forms, per-id tables, the piece->id and merge tables, the
// special-token matcher and the word cache (which fills as text is
// encoded). It is an estimate for the memory ledger: Go does not say how
// big a map is, so maps are sized the way the runtime lays them out
// (groups of 8 slots, at most 7/8 full, a power of two), not measured.
func (t *Tokenizer) Bytes() int64 {
	const str, slice, word = 16, 24, 8
	n := int64(unsafe.Sizeof(*t))
	for i, p := range t.pieces {
		n += str + int64(len(p))
		if i < len(t.render) {
			r := t.render[i]
			n += str
			// Decoding often leaves a piece as it is: then both share bytes.
			if len(r) > 0 && (len(p) == 0 || unsafe.StringData(r) != unsafe.StringData(p)) {
				n += int64(len(r))
			}
		}
	}
	n += int64(cap(t.kinds))*int64(unsafe.Sizeof(tokenKind(0))) + int64(cap(t.scores))*4
	n += ledger.MapBytes(len(t.ids), str+word) // keys share the pieces' bytes
	n += ledger.MapBytes(len(t.eog), word+1)
	n += int64(cap(t.merges.slots)) * int64(unsafe.Sizeof(mergeSlot{}))
	if s := t.specials; s != nil {
		n += int64(unsafe.Sizeof(*s)) + int64(cap(s.toks))*int64(unsafe.Sizeof(addedToken{})) + int64(cap(s.term))*4
		n += ledger.MapBytes(len(s.edges), 8+4)
		for _, tk := range s.toks {
			n += int64(len(tk.text))
		}
	}
	if c := t.cache; c != nil {
		c.mu.Lock()
		n += ledger.MapBytes(len(c.m), str+slice)
		for w, ids := range c.m {
			n += int64(len(w)) + int64(cap(ids))*word
		}
		c.mu.Unlock()
	}
	return n
}
