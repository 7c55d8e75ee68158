package grpo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/internal/par"
	"github.com/pixelis/pixelis/train/policy"
)

// Row is one action of a trajectory in an update batch.
type Row struct {
	Obs    []float32
	Action int
	Adv    float32 // the trajectory's advantage
	Old    float32 // log π_old(a|s): the policy that collected the sample
	Ref    float32 // log π_ref(a|s): the frozen SFT policy
	W      float32 // aggregation weight (RowWeights)
}

// Updater runs the GRPO objective over the adapters of a policy (the base stays
// the frozen SFT weights).
type Updater struct {
	tg  *policy.TrainGraph
	obj *objective
	opt *optim.Adam
	cfg LossConfig

	obs, mask, adv, old, ref, w []float32
	grads                       *optim.GradSum // the minibatch's gradient, summed over its chunks
	team                        *par.Team      // the goroutines a chunk's observations are copied on
}

// Stats of one update: means over the rows that carried weight, and GradNorm
// the mean pre-clip gradient norm of the optimiser steps taken.
type Stats struct {
	Loss, KL, Entropy, ClipRatio, GradNorm float64
	Updates, Skipped                       int // optimiser steps taken / refused for non-finite gradients
}

// NewUpdater builds the loss graph for chunks of batch rows over p's trainable names.
func NewUpdater(p *policy.Params, batch int, trainable []string, c LossConfig, adam optim.AdamConfig) (*Updater, error) {
	if len(trainable) == 0 {
		return nil, errors.New("grpo: nothing to train")
	}
	temp := c.Temperature
	if temp == 0 {
		temp = 1
	}
	tg, err := policy.NewTemperedTrainGraph(p, batch, trainable, temp)
	if err != nil {
		return nil, err
	}
	obj, err := buildObjective(tg, c)
	if err != nil {
		return nil, err
	}
	if err := tg.SetLoss(obj.loss); err != nil {
		return nil, err
	}
	cfg := p.Config()
	u := &Updater{
		tg: tg, obj: obj, opt: optim.NewAdam(adam), cfg: c,
		obs: make([]float32, batch*cfg.ObsDim()), mask: make([]float32, batch*cfg.Actions),
		adv: make([]float32, batch), old: make([]float32, batch), ref: make([]float32, batch), w: make([]float32, batch),
		team: par.NewTeam(1),
	}
	u.grads = optim.NewGradSum(tg.Params())
	return u, nil
}

// SetWorkers sets how many goroutines an update's graph splits its work
// over (1 at first); the results are the same bits whatever the number.
func (u *Updater) SetWorkers(n int) {
	u.tg.SetWorkers(n)
	u.opt.SetWorkers(n)
	u.team.SetWorkers(n)
}

// Optimizer is the updater's Adam, for checkpointing.
func (u *Updater) Optimizer() *optim.Adam { return u.opt }

// Update runs epochs passes over rows, each split into minibatches (shuffled with
// rng); every minibatch is one optimiser step, its gradient accumulated over
// graph-sized chunks. Row weights are scaled by the number of minibatches so a
// minibatch's loss has the scale of the whole batch's.
func (u *Updater) Update(rows []Row, epochs, minibatches int, lr float64, rng *rand.Rand) (Stats, error) {
	var st Stats
	if len(rows) == 0 {
		return st, nil
	}
	if minibatches < 1 {
		minibatches = 1
	}
	if minibatches > len(rows) {
		minibatches = len(rows)
	}
	var wsum, klSum, entSum, clipSum, lossSum, normSum float64
	for e := 0; e < epochs; e++ {
		order := rng.Perm(len(rows))
		for mb := 0; mb < minibatches; mb++ {
			idx := order[mb*len(rows)/minibatches : (mb+1)*len(rows)/minibatches]
			u.grads.Clear()
			B := u.tg.Batch()
			for lo := 0; lo < len(idx); lo += B {
				hi := min(lo+B, len(idx))
				cs, err := u.chunk(rows, idx[lo:hi], float32(minibatches))
				if err != nil {
					return st, err
				}
				wsum += cs.w
				klSum += cs.kl
				entSum += cs.ent
				clipSum += cs.clip
				lossSum += cs.loss
				u.grads.Add(u.tg.Params())
			}
			res, err := u.grads.Step(u.opt, u.tg.Params(), lr)
			if errors.Is(err, optim.ErrNonFinite) {
				st.Skipped++
				continue
			}
			if err != nil {
				return st, err
			}
			st.Updates++
			normSum += res.GradNorm
		}
	}
	if wsum > 0 {
		st.KL, st.Entropy, st.ClipRatio = klSum/wsum, entSum/wsum, clipSum/wsum
	}
	st.Loss = lossSum / float64(epochs*minibatches)
	if st.Updates > 0 {
		st.GradNorm = normSum / float64(st.Updates)
	}
	return st, nil
}

type chunkStats struct{ w, kl, ent, clip, loss float64 }

// chunk runs the graph on rows[idx] (padded with zero-weight rows) and returns
// weight-summed statistics; the gradient is left in the graph's buffers.
func (u *Updater) chunk(rows []Row, idx []int, scale float32) (chunkStats, error) {
	B := u.tg.Batch()
	obsDim := len(u.obs) / B
	nA := len(u.mask) / B
	clear(u.obs[len(idx)*obsDim:]) // the padding rows; the others are copied below
	clear(u.mask)
	clear(u.adv)
	clear(u.old)
	clear(u.ref)
	clear(u.w)
	for k, i := range idx {
		r := rows[i]
		if len(r.Obs) != obsDim || r.Action < 0 || r.Action >= nA {
			return chunkStats{}, fmt.Errorf("grpo: row %d has %d features and action %d", i, len(r.Obs), r.Action)
		}
		u.mask[k*nA+r.Action] = 1
		u.adv[k], u.old[k], u.ref[k], u.w[k] = r.Adv, r.Old, r.Ref, r.W*scale
	}
	u.team.For(len(idx), 1, 64, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			copy(u.obs[k*obsDim:(k+1)*obsDim], rows[idx[k]].Obs)
		}
	})
	feeds := map[*G.Node][]float32{u.tg.Obs: u.obs, u.tg.ActionMask: u.mask,
		u.obj.adv: u.adv, u.obj.old: u.old, u.obj.ref: u.ref, u.obj.w: u.w}
	if err := u.tg.Run(feeds); err != nil {
		return chunkStats{}, err
	}
	loss := u.tg.LossValue()
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		// The optimiser refuses the non-finite gradient that comes with it.
		loss = 0
	}
	cs := chunkStats{loss: loss}
	// Ratio and KL are recomputed here from the chosen log-probs (an output of
	// the compiled graph): the tape machine reuses the buffers of intermediate
	// nodes such as the loss's ratio, so reading those back gives garbage.
	lp, err := u.tg.Value(u.tg.ChosenLogProb)
	if err != nil {
		return cs, err
	}
	ent, err := u.tg.Value(u.tg.Entropy)
	if err != nil {
		return cs, err
	}
	for k := range idx {
		w := float64(u.w[k])
		cs.w += w
		cs.kl += w * klEstimate(u.cfg.KLEstimator, float64(lp[k]), float64(u.ref[k]))
		cs.ent += w * float64(ent[k])
		rho := math.Exp(float64(lp[k]) - float64(u.old[k]))
		a := u.adv[k]
		if (a > 0 && rho > 1+u.cfg.ClipHigh) || (a < 0 && rho < 1-u.cfg.ClipLow) {
			cs.clip += w
		}
	}
	return cs, nil
}

// klEstimate is one row's KL term as the loss computes it (see objective).
func klEstimate(estimator string, logp, ref float64) float64 {
	if estimator == "k1" {
		return logp - ref
	}
	d := ref - logp
	return math.Exp(d) - d - 1
}
