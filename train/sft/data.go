package sft

import (
	"context"
	"fmt"

	"github.com/pixelis/pixelis/internal/crash"
	"github.com/pixelis/pixelis/train/env"
)

// Pair is one imitation example: the observation before a demonstrated action,
// the action's index in the discrete space, and its role (imitate or avoid).
// Sample is the index of the trajectory it came from (the difficulty
// curriculum pools whole trajectories).
type Pair struct {
	Obs    []float32
	Action int
	Role   env.Role
	Sample int
}

// Source gives the i-th task, its demonstrated trajectory and each action's
// role. Tasks are regenerated on demand rather than held: their frames are
// large and only the pairs are kept.
type Source func(i int) (*env.Task, []env.Action, []env.Role, error)

// Pairs replays n demonstrations in real episodes, recording the observation
// before every imitated or avoided action (skipped ones make no pair but are
// still played). It fails if an action is outside the discrete action space,
// or if a replay's final answer is right when it is to be avoided or wrong
// when it is to be imitated (the data would teach a wrong answer).
func Pairs(ctx context.Context, cfg env.Config, n int, src Source, workers int) ([]*Pair, error) {
	if workers < 1 {
		workers = 1
	}
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
				ps, err := replay(e, t, acts, roles, i)
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

func replay(e *env.Episode, t *env.Task, acts []env.Action, roles []env.Role, sample int) ([]*Pair, error) {
	if len(roles) != len(acts) {
		return nil, fmt.Errorf("task %s: %d roles for %d actions", t.ID, len(roles), len(acts))
	}
	e.Reset(t)
	ps := make([]*Pair, 0, len(acts))
	for i, a := range acts {
		idx, err := env.EncodeAction(a)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		if roles[i] != env.RoleSkip {
			obs := make([]float32, env.ObsDim)
			e.Observe(obs)
			ps = append(ps, &Pair{Obs: obs, Action: idx, Role: roles[i], Sample: sample})
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
