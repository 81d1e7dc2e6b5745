package engine

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
)

// BlockSize is the prefix cache's unit: blocks of this many tokens are
// keyed by a hash chain (vLLM's scheme), so two prompts share the blocks
// of their common prefix.
const BlockSize = 16

// prefixBlock holds the keys and values of one block of positions for
// every layer, copied out of the sequence that computed them. A sliding
// layer's rows are nil when they had left the window before the block
// could be copied. Rows keep the cache's element type, so a restored
// cache holds the very bits the original did.
type prefixBlock struct {
	hash    uint64
	parent  *prefixBlock
	tokens  [BlockSize]int32
	rows    []kv.Rows // per layer: BlockSize positions, or none
	lastUse int64
	kids    int
	bytes   int64
}

// prefixCache is an LRU of blocks keyed by their hash chain. Only the
// engine loop touches it.
type prefixCache struct {
	cfg    *model.Config
	blocks map[uint64]*prefixBlock
	bytes  int64
	tick   int64
}

func newPrefixCache(cfg *model.Config) *prefixCache {
	return &prefixCache{cfg: cfg, blocks: map[uint64]*prefixBlock{}}
}

// usable reports whether the model's layers can be restored from blocks:
// a sliding window shorter than a block would need partial blocks.
func (pc *prefixCache) usable() bool {
	return pc.cfg.SlidingWindow == 0 || pc.cfg.SlidingWindow >= BlockSize
}

// blockHash chains a block's tokens onto its parent's hash; the salt
// (vLLM's cache_salt) separates tenants that must not share entries.
func blockHash(parent uint64, salt string, tokens []int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], parent)
	h.Write(b[:])
	h.Write([]byte(salt))
	for _, t := range tokens {
		binary.LittleEndian.PutUint32(b[:4], uint32(t))
		h.Write(b[:4])
	}
	return h.Sum64()
}

func (b *prefixBlock) matches(tokens []int) bool {
	for i, t := range tokens {
		if int32(t) != b.tokens[i] {
			return false
		}
	}
	return true
}

// lookup returns the longest chain of cached blocks that prefixes prompt
// and can be restored: it never covers the last prompt token (its logits
// must be computed), and the blocks inside the sliding window must still
// hold their sliding-layer rows.
func (pc *prefixCache) lookup(prompt []int, salt string) []*prefixBlock {
	if !pc.usable() {
		return nil
	}
	var chain []*prefixBlock
	var h uint64
	for i := 0; (i+1)*BlockSize <= len(prompt)-1; i++ {
		toks := prompt[i*BlockSize : (i+1)*BlockSize]
		h = blockHash(h, salt, toks)
		b, ok := pc.blocks[h]
		if !ok || !b.matches(toks) {
			break
		}
		chain = append(chain, b)
	}
	for len(chain) > 0 && !pc.slidingRowsHeld(chain) {
		chain = chain[:len(chain)-1]
	}
	pc.tick++
	for _, b := range chain {
		b.lastUse = pc.tick
	}
	return chain
}

func (pc *prefixCache) slidingRowsHeld(chain []*prefixBlock) bool {
	w := pc.cfg.SlidingWindow
	if w == 0 {
		return true
	}
	p := len(chain) * BlockSize
	for i := max(0, p-w) / BlockSize; i < len(chain); i++ {
		for li, spec := range pc.cfg.LayerSpecs {
			if spec.Sliding && !chain[i].holds(li) {
				return false
			}
		}
	}
	return true
}

// holds reports whether the block kept layer li's rows.
func (b *prefixBlock) holds(li int) bool { return b.rows[li].Len() > 0 }

// restore fills an empty cache with the chain's positions.
func (pc *prefixCache) restore(c *kv.Cache, chain []*prefixBlock) {
	p := len(chain) * BlockSize
	for li, layer := range c.Layers {
		first := 0
		if pc.cfg.LayerSpecs[li].Sliding {
			first = max(0, p-pc.cfg.SlidingWindow)
			layer.Seek(first)
		}
		for pos := first; pos < p; pos++ {
			layer.AppendRow(chain[pos/BlockSize].rows[li], pos%BlockSize)
		}
	}
}

// blockBytes is the memory of one cached block of the model's KV type.
func (pc *prefixCache) blockBytes() int64 {
	return int64(pc.cfg.Layers) * BlockSize * 2 * int64(pc.cfg.KVType.RowBytes(pc.cfg.KVDim()))
}

// insert copies the full blocks of a sequence's cache that are not cached
// yet. tokens are the sequence's tokens so far (at least c.Len() of them);
// from is the first block not yet inserted, parent that block's parent
// hash. room reports whether n more bytes fit the budget (evicting if it
// can). It returns the next block index and hash to continue from.
func (pc *prefixCache) insert(c *kv.Cache, tokens []int, salt string, from int, parent uint64, room func(n int64) bool) (int, uint64) {
	if !pc.usable() {
		return from, parent
	}
	var parentBlock *prefixBlock
	if from > 0 {
		parentBlock = pc.blocks[parent]
	}
	pc.tick++
	for i := from; (i+1)*BlockSize <= c.Len(); i++ {
		toks := tokens[i*BlockSize : (i+1)*BlockSize]
		h := blockHash(parent, salt, toks)
		if b, ok := pc.blocks[h]; ok {
			b.lastUse = pc.tick
			parentBlock, parent, from = b, h, i+1
			continue
		}
		if !room(pc.blockBytes()) {
			break
		}
		b := &prefixBlock{hash: h, parent: parentBlock, lastUse: pc.tick, bytes: pc.blockBytes()}
		for j, t := range toks {
			b.tokens[j] = int32(t)
		}
		b.rows = make([]kv.Rows, len(c.Layers))
		for li, layer := range c.Layers {
			// A sliding layer may no longer hold the rows.
			if start := i * BlockSize; start >= layer.First() {
				b.rows[li] = layer.CopyRows(start, BlockSize)
			}
		}
		if parentBlock != nil {
			parentBlock.kids++
		}
		pc.blocks[h] = b
		pc.bytes += b.bytes
		parentBlock, parent, from = b, h, i+1
	}
	return from, parent
}

// evict drops least recently used leaf blocks until at most limit bytes
// remain or nothing can go. Leaves go first so a cached chain never has a
// hole.
func (pc *prefixCache) evict(limit int64) {
	for pc.bytes > limit {
		var victim *prefixBlock
		for _, b := range pc.blocks {
			// Blocks touched by the current operation stay: one may be
			// the parent of the block being inserted.
			if b.kids == 0 && b.lastUse != pc.tick && (victim == nil || b.lastUse < victim.lastUse) {
				victim = b
			}
		}
		if victim == nil {
			return
		}
		delete(pc.blocks, victim.hash)
		pc.bytes -= victim.bytes
		if victim.parent != nil {
			victim.parent.kids--
		}
	}
}
