package sft

import (
	"context"
	"fmt"
	"math"

	"github.com/pixelis/pixelis/internal/crash"
	"github.com/pixelis/pixelis/train/env"
)

// Pair is one imitation example: the observation before a demonstrated action,
// the action's index in the discrete space, and its role (imitate or avoid).
// Sample is the index of the trajectory it came from (the difficulty
// curriculum pools whole trajectories).
//
// The observation is Obs, dense, or (Obs nil) held compactly, as Pairs makes
// them: an SFT set of 80,000 pairs would hold 330 MB of floats dense.
// Observation gives it back either way, bit for bit.
type Pair struct {
	Obs    []float32
	packed packedObs
	Action int
	Role   env.Role
	Sample int
}

// packedObs is an observation as the entries where it differs from a
// template shared by the pairs of a set: their indices and float32 values.
// The template is, index by index, the value most observations have there
// (zero in the one-hot blocks and empty cells, a cell's position in its
// position features), so a pair keeps about a tenth of its floats. Any
// template gives back the same bits; a good one only saves memory.
type packedObs struct {
	tmpl *[]float32
	idx  []uint16
	val  []float32
}

// pack returns obs as its differences from tmpl (obs and tmpl have the same
// length, at most 65,536).
func pack(obs []float32, tmpl *[]float32) packedObs {
	t := *tmpl
	nz := 0
	for i, v := range obs {
		if math.Float32bits(v) != math.Float32bits(t[i]) { // bits: −0 and NaN come back as they were
			nz++
		}
	}
	p := packedObs{tmpl: tmpl, idx: make([]uint16, 0, nz), val: make([]float32, 0, nz)}
	for i, v := range obs {
		if math.Float32bits(v) != math.Float32bits(t[i]) {
			p.idx = append(p.idx, uint16(i))
			p.val = append(p.val, v)
		}
	}
	return p
}

// Observation writes the pair's observation into dst, which must hold it.
func (p *Pair) Observation(dst []float32) {
	if p.Obs != nil {
		copy(dst, p.Obs)
		return
	}
	copy(dst, *p.packed.tmpl)
	for k, i := range p.packed.idx {
		dst[i] = p.packed.val[k]
	}
}

// ObsLen is the length of the pair's observation.
func (p *Pair) ObsLen() int {
	if p.Obs != nil || p.packed.tmpl == nil {
		return len(p.Obs)
	}
	return len(*p.packed.tmpl)
}

// Bytes is the memory the pair's own observation data takes.
func (p *Pair) Bytes() int { return 4*len(p.Obs) + 6*len(p.packed.idx) }

// template is, index by index, the most frequent value of obs (the first
// one seen among equally frequent ones).
func template(obs [][]float32) []float32 {
	if len(obs) == 0 {
		return make([]float32, env.ObsDim)
	}
	t := make([]float32, len(obs[0]))
	count := map[uint32]int{}
	for i := range t {
		clear(count)
		best, bestN := obs[0][i], 0
		for _, o := range obs {
			b := math.Float32bits(o[i])
			count[b]++
			if count[b] > bestN {
				best, bestN = o[i], count[b]
			}
		}
		t[i] = best
	}
	return t
}

// templateDemos is how many demonstrations Pairs replays first to make the
// template of its set.
const templateDemos = 16

// Source gives the i-th task, its demonstrated trajectory and each action's
// role. Tasks are regenerated on demand rather than held: their frames are
// large and only the pairs are kept.
type Source func(i int) (*env.Task, []env.Action, []env.Role, error)

// Pairs replays n demonstrations in real episodes, recording the observation
// (sparsely: see Pair) before every imitated or avoided action (skipped ones make no pair but are
// still played). It fails if an action is outside the discrete action space,
// or if a replay's final answer is right when it is to be avoided or wrong
// when it is to be imitated (the data would teach a wrong answer).
func Pairs(ctx context.Context, cfg env.Config, n int, src Source, workers int) ([]*Pair, error) {
	if workers < 1 {
		workers = 1
	}
	// The template, from the first few demonstrations' observations.
	var first [][]float32
	e := env.NewEpisode(cfg)
	for i := range min(n, templateDemos) {
		t, acts, roles, err := src(i)
		if err != nil {
			return nil, err
		}
		ps, err := replay(e, t, acts, roles, i, nil)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			first = append(first, p.Obs)
		}
	}
	tmpl := template(first)
	per := make([][]*Pair, n)
	errs := make([]error, workers)
	var g crash.Group // a panic in a worker is raised again in the caller
	for w := 0; w < workers; w++ {
		g.Go(func() {
			e := env.NewEpisode(cfg)
			for i := w; i < n; i += workers {
				if ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				t, acts, roles, err := src(i)
				if err != nil {
					errs[w] = err
					return
				}
				ps, err := replay(e, t, acts, roles, i, &tmpl)
				if err != nil {
					errs[w] = err
					return
				}
				per[i] = ps
			}
		})
	}
	g.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	var out []*Pair
	for _, ps := range per {
		out = append(out, ps...)
	}
	return out, nil
}

// replay plays one demonstration and returns its pairs, their observations
// packed against tmpl (dense when tmpl is nil).
func replay(e *env.Episode, t *env.Task, acts []env.Action, roles []env.Role, sample int, tmpl *[]float32) ([]*Pair, error) {
	if len(roles) != len(acts) {
		return nil, fmt.Errorf("task %s: %d roles for %d actions", t.ID, len(roles), len(acts))
	}
	e.Reset(t)
	ps := make([]*Pair, 0, len(acts))
	var obs [env.ObsDim]float32
	for i, a := range acts {
		idx, err := env.EncodeAction(a)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		if roles[i] != env.RoleSkip {
			p := &Pair{Action: idx, Role: roles[i], Sample: sample}
			if tmpl != nil {
				e.Observe(obs[:])
				p.packed = pack(obs[:], tmpl)
			} else {
				p.Obs = make([]float32, env.ObsDim)
				e.Observe(p.Obs)
			}
			ps = append(ps, p)
		}
		// Step the decoded action, which is what a policy choosing idx would do.
		da, err := env.DecodeAction(idx)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		e.Step(da)
	}
	if want := roles[len(roles)-1] == env.RoleImitate; !e.Done() || e.Correct() != want {
		return nil, fmt.Errorf("task %s: the demonstration does not end as its roles say (answer imitated %v, right %v)", t.ID, want, e.Correct())
	}
	return ps, nil
}
