package curriculum

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// Pools is the active-pool side of the SFT data curriculum: which sample
// indices the trainer may draw from at each stage. A stage is a mix, a
// '+'-joined set of difficulty buckets; the pool of a stage is every sample
// whose bucket is in the mix, in ascending index order.
//
// The pool is a pure function of the stage, so Rollback restores the previous
// pool exactly — same members, same order — and a draw from a restored pool
// with the same random stream picks the same samples as before the advance.
type Pools struct {
	labels      []string
	mixes       []string         // as configured, for State and messages
	buckets     [][]string       // mixes parsed
	pools       [][]int          // pools[stage]: active indices, ascending
	counts      []map[string]int // counts[stage]: samples per bucket of pools[stage]
	stage       int
	fingerprint uint64
}

// NewPools builds the pools from one bucket label per sample (index i is
// sample i) and the stage mixes (at least one). Every
// stage must have at least one sample, and every label must appear in some
// mix: a bucket no stage uses is almost always a misspelt label, and its
// samples would silently never be trained on.
func NewPools(labels []string, mixes []string) (*Pools, error) {
	if len(mixes) == 0 {
		return nil, errors.New("pools: no stage mixes")
	}
	var errs []error
	p := &Pools{labels: slices.Clone(labels), mixes: slices.Clone(mixes)}
	used := map[string]bool{}
	for i, mix := range mixes {
		var set []string
		for b := range strings.SplitSeq(mix, "+") {
			b = strings.TrimSpace(b)
			switch {
			case b == "":
				errs = append(errs, fmt.Errorf("mixes[%d] %q: empty bucket name", i, mix))
			case slices.Contains(set, b):
				errs = append(errs, fmt.Errorf("mixes[%d] %q: bucket %q listed twice", i, mix, b))
			default:
				set = append(set, b)
				used[b] = true
			}
		}
		p.buckets = append(p.buckets, set)
	}
	for i, l := range labels {
		if !used[l] {
			errs = append(errs, fmt.Errorf("sample %d: bucket %q appears in no stage mix %q", i, l, mixes))
			if len(errs) > 10 {
				errs = append(errs, errors.New("… more samples with unknown buckets"))
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("data pools: %w", err)
	}
	for i, set := range p.buckets {
		var pool []int
		for j, l := range labels {
			if slices.Contains(set, l) {
				pool = append(pool, j)
			}
		}
		if len(pool) == 0 {
			errs = append(errs, fmt.Errorf("mixes[%d] %q: no sample in these buckets", i, mixes[i]))
		}
		p.pools = append(p.pools, pool)
		p.counts = append(p.counts, bucketCounts(set, labels, pool))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("data pools: %w", err)
	}
	p.fingerprint = labelFingerprint(labels)
	return p, nil
}

// labelFingerprint identifies a dataset's labelling (FNV-1a over the labels,
// each terminated by a NUL), so a state cannot be restored onto other data.
func labelFingerprint(labels []string) uint64 {
	h := fnv.New64a()
	for _, l := range labels {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Stage is the current stage, 0 for the first mix.
func (p *Pools) Stage() int { return p.stage }

// NumStages is the number of mixes.
func (p *Pools) NumStages() int { return len(p.mixes) }

// Mix is the configured mix of stage s, e.g. "simple+medium".
func (p *Pools) Mix(s int) string { return p.mixes[s] }

// Advance moves to the next mix. It reports false, changing nothing, at the
// last stage.
func (p *Pools) Advance() bool {
	if p.stage+1 >= len(p.pools) {
		return false
	}
	p.stage++
	return true
}

// Rollback returns to the previous mix. It reports false, changing nothing,
// at the first stage.
func (p *Pools) Rollback() bool {
	if p.stage == 0 {
		return false
	}
	p.stage--
	return true
}

// Active returns a copy of the active pool's sample indices, ascending.
func (p *Pools) Active() []int { return slices.Clone(p.pools[p.stage]) }

// Len is the size of the active pool.
func (p *Pools) Len() int { return len(p.pools[p.stage]) }

// Sample appends n indices drawn uniformly with replacement from the active
// pool to dst and returns the extended slice (pass buf[:0] to reuse a
// buffer). Only rng is consumed, one IntN per draw, so the trainer's data
// stream alone decides which samples are seen and a resumed run sees the same.
func (p *Pools) Sample(rng *rand.Rand, n int, dst []int) []int {
	pool := p.pools[p.stage]
	for range n {
		dst = append(dst, pool[rng.IntN(len(pool))])
	}
	return dst
}

// PoolsState is the serializable form of Pools.
type PoolsState struct {
	Stage       int      `json:"stage"`
	Mixes       []string `json:"mixes"`
	NumSamples  int      `json:"num_samples"`
	Fingerprint uint64   `json:"fingerprint"` // of the labels; see labelFingerprint
}

// State returns the pools' state.
func (p *Pools) State() PoolsState {
	return PoolsState{Stage: p.stage, Mixes: slices.Clone(p.mixes), NumSamples: len(p.labels), Fingerprint: p.fingerprint}
}

// Restore sets the stage from s. The mixes and the labelled samples must be
// the ones s was taken from; otherwise the same stage number would mean a
// different pool and a resumed run would silently train on other data.
func (p *Pools) Restore(s PoolsState) error {
	switch {
	case !slices.Equal(s.Mixes, p.mixes):
		return fmt.Errorf("data pools: state mixes %q differ from %q", s.Mixes, p.mixes)
	case s.NumSamples != len(p.labels):
		return fmt.Errorf("data pools: state has %d samples, dataset %d", s.NumSamples, len(p.labels))
	case s.Fingerprint != p.fingerprint:
		return fmt.Errorf("data pools: state fingerprint %x differs from dataset %x (labels changed)", s.Fingerprint, p.fingerprint)
	case s.Stage < 0 || s.Stage >= len(p.pools):
		return fmt.Errorf("data pools: state stage %d outside 0..%d", s.Stage, len(p.pools)-1)
	}
	p.stage = s.Stage
	return nil
}

// Counts is the pool of stage by bucket: how many samples of each bucket of
// its mix it holds.
func (p *Pools) Counts(stage int) map[string]int {
	return maps.Clone(p.counts[stage])
}

// bucketCounts counts a pool's samples by bucket, every bucket of its mix
// present (zero when it has none). Pools never change after NewPools, so
// their counts are taken once.
func bucketCounts(buckets, labels []string, pool []int) map[string]int {
	out := make(map[string]int, len(buckets))
	for _, b := range buckets {
		out[b] = 0
	}
	for _, i := range pool {
		out[labels[i]]++
	}
	return out
}
