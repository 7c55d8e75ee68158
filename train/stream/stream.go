// Package stream derives every random generator of a run from (run seed,
// purpose, step, index) alone, so a resumed run reproduces every later draw
// without saving generator state, and parallel workers cannot change results by
// the order they run in.
package stream

import "math/rand/v2"

// Purpose names a random stream.
type Purpose uint64

const (
	Init        Purpose = iota + 1 // initial weights
	SFTBatch                       // SFT minibatch indices
	Tasks                          // RFT task choice
	Episode                        // one rollout episode's action sampling
	Replay                         // replay mixing
	Shuffle                        // minibatch order within an update
	Eval                           // validation / test sampling
	Curiosity                      // curiosity model initialisation
	Critic                         // PPO's value function: initialisation (step 0), minibatch order
	TTRL                           // one TTRL stream episode's action sampling
	TTRLShuffle                    // minibatch order within a TTRL update
)

// New returns the generator for one purpose at one step and index.
func New(seed uint64, p Purpose, step, index int) *rand.Rand {
	k := splitmix64(uint64(p))
	k = splitmix64(k ^ uint64(step))
	k = splitmix64(k ^ uint64(index))
	return rand.New(rand.NewPCG(seed, k))
}

// splitmix64 is the finaliser of SplitMix64 (Steele et al. 2014): a bijective mix
// that turns nearby integers into unrelated 64-bit values.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
