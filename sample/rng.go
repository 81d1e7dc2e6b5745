package sample

import (
	"math/rand/v2"
	"sync"
)

// The server-wide generator seeds requests that bring no seed. Each
// request then samples from its own generator, so what it draws never
// depends on the other requests in the batch (unlike vLLM, where
// unseeded requests share one torch generator).
var server = struct {
	sync.Mutex
	rng *rand.Rand
}{rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}

// SetServerSeed reseeds the server-wide generator, so that unseeded
// requests get the same seeds in the same order of NewSequence calls, like
// vLLM's --seed. By default it is seeded at random.
func SetServerSeed(seed uint64) {
	server.Lock()
	server.rng = rand.New(rand.NewPCG(seed, 0x243f6a8885a308d3))
	server.Unlock()
}

func drawSeed() uint64 {
	server.Lock()
	defer server.Unlock()
	return server.rng.Uint64()
}

// mix64 is the SplitMix64 finaliser, a bijection whose output bits all
// depend on all input bits.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

const golden = 0x9e3779b97f4a7c15 // SplitMix64's increment

// stepKey keys the random stream of one sampling step. The stream is a
// function of (seed, step) alone, so a sequence replayed from its prompt
// and output (say after preemption) draws the same numbers, whatever
// happened to the generator in between.
func stepKey(seed uint64, step int) uint64 {
	return mix64(mix64(seed) + uint64(step)*0xd1342543de82ef95)
}

// uniform is U(0, 1] for token id in the stream key: the id-th output of
// a SplitMix64 generator started at key. Indexing by id, not by draw
// order, makes the draw for a token independent of which other tokens the
// filters kept and of the order they are visited in.
func uniform(key uint64, id int32) float64 {
	x := mix64(key + uint64(id+1)*golden)
	return float64(x>>11+1) * 0x1p-53
}
