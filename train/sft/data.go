package sft

import (
	"context"
	"fmt"
	"sync"

	"github.com/pixelis/pixelis/train/env"
)

// Pair is one imitation example: the observation before an expert action and the
// action's index in the discrete space. Sample is the index of the trajectory it
// came from (the difficulty curriculum pools whole trajectories).
type Pair struct {
	Obs    []float32
	Action int
	Sample int
}

// Source gives the i-th task and its expert trajectory. Tasks are regenerated on
// demand rather than held: their frames are large and only the pairs are kept.
type Source func(i int) (*env.Task, []env.Action, error)

// Pairs replays n expert trajectories in real episodes, recording the observation
// before every action. It fails if an expert action is outside the discrete action
// space or if a replay does not end correctly answered (the data would teach a
// wrong answer).
func Pairs(ctx context.Context, cfg env.Config, n int, src Source, workers int) ([]*Pair, error) {
	if workers < 1 {
		workers = 1
	}
	per := make([][]*Pair, n)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := env.NewEpisode(cfg)
			for i := w; i < n; i += workers {
				if ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				t, acts, err := src(i)
				if err != nil {
					errs[w] = err
					return
				}
				ps, err := replay(e, t, acts, i)
				if err != nil {
					errs[w] = err
					return
				}
				per[i] = ps
			}
		}()
	}
	wg.Wait()
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

func replay(e *env.Episode, t *env.Task, acts []env.Action, sample int) ([]*Pair, error) {
	e.Reset(t)
	ps := make([]*Pair, 0, len(acts))
	for _, a := range acts {
		idx, err := env.EncodeAction(a)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		obs := make([]float32, env.ObsDim)
		e.Observe(obs)
		ps = append(ps, &Pair{Obs: obs, Action: idx, Sample: sample})
		// Step the decoded action, which is what a policy choosing idx would do.
		da, err := env.DecodeAction(idx)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		e.Step(da)
	}
	if !e.Done() || !e.Correct() {
		return nil, fmt.Errorf("task %s: the expert trajectory does not end with the correct answer", t.ID)
	}
	return ps, nil
}
