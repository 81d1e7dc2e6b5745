package engine

import (
	"testing"

	"github.com/siskin-ml/siskin/kv"
)

// TestPrefixBlocksKeepKVType: blocks copied from a cache keep its element
// type and restore the very bits it held (an f16 cache's halves are not
// widened and rounded again, nor a q8_0 cache's blocks requantized), and
// a block's bytes are counted at the type's row size.
func TestPrefixBlocksKeepKVType(t *testing.T) {
	m := tinySpark(t)
	cfg := m.Config()
	defer func(t kv.Type) { cfg.KVType = t }(cfg.KVType)
	ids := prompt(40, 5)
	for _, typ := range []kv.Type{kv.F32, kv.F16, kv.Q8_0} {
		if typ.CheckHeadDim(cfg.HeadDim) != nil {
			continue
		}
		cfg.KVType = typ
		c := m.NewCache()
		if _, err := m.Forward(c, ids, false); err != nil {
			t.Fatal(err)
		}
		pc := newPrefixCache(cfg)
		if n, _ := pc.insert(c, ids, "", 0, 0, func(int64) bool { return true }); n != 2 {
			t.Fatalf("%s: %d blocks inserted, want 2", typ, n)
		}
		if want := int64(cfg.Layers) * BlockSize * 2 * int64(typ.RowBytes(cfg.KVDim())); pc.bytes != 2*want {
			t.Errorf("%s: prefix cache holds %d bytes, want %d", typ, pc.bytes, 2*want)
		}
		chain := pc.lookup(ids, "")
		r := m.NewCache()
		pc.restore(r, chain)
		for li, l := range r.Layers {
			if r.Type() != typ {
				t.Fatalf("%s: restored a %s cache", typ, r.Type())
			}
			for p := l.First(); p < l.Len(); p++ {
				want, got := c.Layers[li].Key(p), l.Key(p)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s layer %d position %d: restored key %g, cached %g", typ, li, p, got[i], want[i])
					}
				}
			}
		}
	}
}
