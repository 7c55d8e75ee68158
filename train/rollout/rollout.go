package rollout

import (
	"context"
	"math/rand/v2"
	"sync/atomic"

	"github.com/pixelis/pixelis/internal/crash"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
)

// Rollout is one finished episode: what the agent saw and did, with the behaviour
// policy's log-probability of every action.
type Rollout struct {
	Task     *env.Task
	Steps    []env.Step // Obs and Index filled
	LogP     []float32  // log π_behaviour(aₜ|sₜ) at the sampling temperature
	FinalObs []float32  // observation after the last action
	Answer   string
	Answered bool
	Correct  bool
}

// Ops counts the visual operations (every action but ANSWER).
func (r *Rollout) Ops() int {
	n := 0
	for _, s := range r.Steps {
		if s.Action.Op != env.OpAnswer {
			n++
		}
	}
	return n
}

// Sampling says how actions are chosen.
type Sampling struct {
	Greedy      bool
	Temperature float64
	// NoObs keeps no observations in the rollouts (Steps[].Obs and FinalObs
	// stay nil): an evaluation scores episodes and never trains on them.
	NoObs bool
}

// Roller steps many episodes together: one batched policy forward per step for
// all live episodes, environment steps spread over workers. Each episode draws
// from its own random stream, so results do not depend on scheduling.
type Roller struct {
	inf     *policy.Inference
	envCfg  env.Config
	workers int
	pool    []*env.Episode // reused between calls
}

func NewRoller(inf *policy.Inference, envCfg env.Config, workers int) *Roller {
	if workers < 1 {
		workers = 1
	}
	return &Roller{inf: inf, envCfg: envCfg, workers: workers}
}

// Run plays copies episodes of every task (episode i plays tasks[i/copies]) and
// returns them in that order. rngFor gives episode i's stream.
func (r *Roller) Run(ctx context.Context, tasks []*env.Task, copies int, how Sampling, rngFor func(i int) *rand.Rand) ([]*Rollout, error) {
	n := len(tasks) * copies
	for len(r.pool) < n {
		r.pool = append(r.pool, env.NewEpisode(r.envCfg))
	}
	eps := r.pool[:n]
	outs := make([]*Rollout, n)
	rngs := make([]*rand.Rand, n)
	for i := range eps {
		eps[i].Reset(tasks[i/copies])
		outs[i] = &Rollout{Task: tasks[i/copies]}
		rngs[i] = rngFor(i)
	}
	obsDim, nA := env.ObsDim, env.NumActions()
	obs := make([]float32, n*obsDim)
	logits := make([]float32, n*nA)
	live := make([]int, 0, n)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		live = live[:0]
		for i, e := range eps {
			if !e.Done() {
				live = append(live, i)
			}
		}
		if len(live) == 0 {
			break
		}
		m := len(live)
		r.parallel(m, func(lo, hi int) {
			for k := lo; k < hi; k++ {
				eps[live[k]].Observe(obs[k*obsDim : (k+1)*obsDim])
			}
			r.inf.Logits(obs[lo*obsDim:hi*obsDim], hi-lo, logits[lo*nA:hi*nA])
			for k := lo; k < hi; k++ {
				i := live[k]
				row := logits[k*nA : (k+1)*nA]
				var a int
				var lp float64
				if how.Greedy {
					a = policy.Greedy(row)
				} else {
					a, lp = policy.Sample(rngs[i], row, how.Temperature)
				}
				act, err := env.DecodeAction(a)
				if err != nil { // cannot happen for a in [0, NumActions); keep the episode honest anyway
					act = env.Action{Op: env.OpAnswer}
				}
				eps[i].Step(act)
				o := outs[i]
				st := env.Step{Index: a}
				if !how.NoObs {
					st.Obs = append([]float32(nil), obs[k*obsDim:(k+1)*obsDim]...)
				}
				o.Steps = append(o.Steps, st)
				o.LogP = append(o.LogP, float32(lp))
			}
		})
	}
	r.parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o, e := outs[i], eps[i]
			traj := e.Trajectory()
			for k := range o.Steps {
				o.Steps[k].Action, o.Steps[k].Result = traj[k].Action, traj[k].Result
			}
			if !how.NoObs {
				o.FinalObs = make([]float32, obsDim)
				e.Observe(o.FinalObs)
			}
			o.Answer, o.Answered = e.Answer()
			o.Correct = e.Correct()
		}
	})
	return outs, nil
}

// rolloutParts is how many parts Parallel cuts its range into per
// worker, and rolloutMinPart the fewest rows of a part: more parts than
// workers, so that a worker whose core another process holds leaves its parts
// to the others instead of holding up the step; parts of at least a few rows,
// so that each batched forward stays a matrix product.
const (
	rolloutParts   = 4
	rolloutMinPart = 8
)

// parallel runs f over the workers' rows; see Parallel.
func (r *Roller) parallel(n int, f func(lo, hi int)) { Parallel(r.workers, n, f) }

// Parallel runs f over [0,n) on workers goroutines, cut into contiguous parts
// that the workers claim one at a time. f must treat the rows of a part
// independently (every caller's rows are episodes or rows of a batch), so the
// results do not depend on how the parts fall.
func Parallel(workers, n int, f func(lo, hi int)) {
	w := min(workers, n)
	if w <= 1 {
		f(0, n)
		return
	}
	parts := max(min(w*rolloutParts, n/rolloutMinPart), w)
	var next atomic.Int64
	var g crash.Group // a panic in a worker is raised again here, where the run's recover sees it
	for range w {
		g.Go(func() {
			faults.At(faults.RolloutWorker)
			for p := int(next.Add(1) - 1); p < parts; p = int(next.Add(1) - 1) {
				f(p*n/parts, (p+1)*n/parts)
			}
		})
	}
	g.Wait()
}
