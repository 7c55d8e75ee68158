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
	*lane // the first lane: the loss graph and its input buffers
	// second is a copy of the first lane's graph, built when SetWorkers asks
	// for two or more workers: two chunks of a minibatch then run at once.
	second *lane
	build  func() (*lane, error)
	// what build reads besides the loss config, for SetLoss
	params    *policy.Params
	batch     int
	trainable []string

	opt     *optim.Adam
	grads   *optim.GradSum // the minibatch's gradient, summed over its chunks
	team    *par.Team      // the goroutines a chunk's observations are copied on
	workers int
}

// lane is one loss graph over the policy's weights (read in place, so every
// lane sees each optimiser step) with the buffers its inputs are laid out in.
// A chunk's gradient depends only on the chunk's rows and the weights, never
// on the lane that computed it.
type lane struct {
	tg                          *policy.TrainGraph
	obj                         *objective
	cfg                         LossConfig
	obs, mask, adv, old, ref, w []float32
}

// Stats of one update: means over the rows that carried weight, and GradNorm
// the mean pre-clip gradient norm of the optimiser steps taken.
type Stats struct {
	Loss, KL, Entropy, ClipRatio, GradNorm float64
	Updates, Skipped                       int // optimiser steps taken / refused for non-finite gradients
}

// ChunkRows is the rows of an Updater's graph for minibatches of at most most
// rows: a quarter of them, between 64 and 512. A minibatch's trajectories end
// before the step limit, so it fills well under its most (the default run's:
// 332–446 rows of 768 for 9 in 10), two or three chunks; two chunks run at
// once on two cores (see SetWorkers). Chunks of a third of the most, two for
// nearly every minibatch but more padding, were no faster.
func ChunkRows(most int) int { return min(max(most/4, 64), 512) }

// NewUpdater builds the loss graph for chunks of batch rows over p's trainable names.
func NewUpdater(p *policy.Params, batch int, trainable []string, c LossConfig, adam optim.AdamConfig) (*Updater, error) {
	if len(trainable) == 0 {
		return nil, errors.New("grpo: nothing to train")
	}
	build := func() (*lane, error) { return newLane(p, batch, trainable, c) }
	first, err := build()
	if err != nil {
		return nil, err
	}
	u := &Updater{lane: first, build: build, params: p, batch: batch, trainable: trainable, opt: optim.NewAdam(adam), team: par.NewTeam(1), workers: 1}
	u.grads = optim.NewGradSum(first.tg.Params())
	return u, nil
}

func newLane(p *policy.Params, batch int, trainable []string, c LossConfig) (*lane, error) {
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
	return &lane{
		tg: tg, obj: obj, cfg: c,
		obs: make([]float32, batch*cfg.ObsDim()), mask: make([]float32, batch*cfg.Actions),
		adv: make([]float32, batch), old: make([]float32, batch), ref: make([]float32, batch), w: make([]float32, batch),
	}, nil
}

// SetWorkers sets how many goroutines an update splits its work over (1 at
// first): with two or more, two chunks of a minibatch run at once on two
// lanes, and each lane's graph splits its ops over half the workers. A lone
// chunk splits over half of them too: on two cores, splitting each op of a
// chunk over both took longer than one core (each part packs the product's
// shared operand anew, and the parts of an op are tens of microseconds).
// The results are the same bits whatever the number: each chunk's gradient
// is computed alone and the chunks are summed in their order.
func (u *Updater) SetWorkers(n int) {
	u.workers = max(n, 1)
	u.tg.SetWorkers(u.laneWorkers())
	u.opt.SetWorkers(n)
	u.grads.SetWorkers(n)
	u.team.SetWorkers(n)
}

// SetLoss rebuilds the loss graph for c (a live edit of the KL coefficient,
// the clip range or the temperature, which the graph holds as constants). The
// optimiser and the policy's weights are kept: the next update is the one an
// updater built with c would make.
func (u *Updater) SetLoss(c LossConfig) error {
	if c == u.cfg {
		return nil
	}
	build := func() (*lane, error) { return newLane(u.params, u.batch, u.trainable, c) }
	first, err := build()
	if err != nil {
		return err
	}
	first.tg.SetWorkers(u.laneWorkers())
	u.lane, u.second, u.build = first, nil, build
	return nil
}

// laneWorkers is how many goroutines a lane's graph splits its ops over.
func (u *Updater) laneWorkers() int { return max(u.workers/2, 1) }

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
	var sum chunkStats
	var normSum float64
	for e := 0; e < epochs; e++ {
		order := rng.Perm(len(rows))
		for mb := 0; mb < minibatches; mb++ {
			idx := order[mb*len(rows)/minibatches : (mb+1)*len(rows)/minibatches]
			if err := u.minibatch(rows, idx, float32(minibatches), &sum); err != nil {
				return st, err
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
	if sum.w > 0 {
		st.KL, st.Entropy, st.ClipRatio = sum.kl/sum.w, sum.ent/sum.w, sum.clip/sum.w
	}
	st.Loss = sum.loss / float64(epochs*minibatches)
	if st.Updates > 0 {
		st.GradNorm = normSum / float64(st.Updates)
	}
	return st, nil
}

// minibatch sums the gradients of the chunks of rows[idx] into u.grads and
// their statistics into sum, chunk by chunk in order; with a second lane two
// chunks are computed at once, then added in their order.
func (u *Updater) minibatch(rows []Row, idx []int, scale float32, sum *chunkStats) error {
	u.grads.Clear()
	B := u.tg.Batch()
	var chunks [][]int
	for lo := 0; lo < len(idx); lo += B {
		chunks = append(chunks, idx[lo:min(lo+B, len(idx))])
	}
	lanes, err := u.lanes(len(chunks))
	if err != nil {
		return err
	}
	for c := 0; c < len(chunks); c += len(lanes) {
		group := chunks[c:min(c+len(lanes), len(chunks))]
		stats, err := u.runLanes(lanes[:len(group)], rows, group, scale)
		if err != nil {
			return err
		}
		for i, cs := range stats {
			sum.add(cs)
			u.grads.Add(lanes[i].tg.Params())
		}
	}
	return nil
}

// lanes are the lanes a minibatch of n chunks runs on, their graphs' ops
// split over the workers they share.
func (u *Updater) lanes(n int) ([]*lane, error) {
	if u.workers < 2 || n < 2 {
		return []*lane{u.lane}, nil
	}
	if u.second == nil {
		l, err := u.build()
		if err != nil {
			return nil, fmt.Errorf("grpo: a second lane: %w", err)
		}
		u.second = l
	}
	u.second.tg.SetWorkers(u.laneWorkers())
	return []*lane{u.lane, u.second}, nil
}

// runLanes runs chunk i on lane i, at once when there are two, and returns
// their statistics in order. A panic on the second lane's goroutine is raised
// on the caller's once both are done (par.Team.Do).
func (u *Updater) runLanes(lanes []*lane, rows []Row, chunks [][]int, scale float32) ([]chunkStats, error) {
	stats := make([]chunkStats, len(chunks))
	if len(chunks) == 1 {
		cs, err := lanes[0].run(rows, chunks[0], scale, u.team)
		stats[0] = cs
		return stats, err
	}
	var errs [2]error
	par.NewTeam(2).Do(
		func() { stats[0], errs[0] = lanes[0].run(rows, chunks[0], scale, nil) },
		func() { stats[1], errs[1] = lanes[1].run(rows, chunks[1], scale, nil) },
	)
	return stats, errors.Join(errs[0], errs[1])
}

type chunkStats struct{ w, kl, ent, clip, loss float64 }

func (s *chunkStats) add(c chunkStats) {
	s.w += c.w
	s.kl += c.kl
	s.ent += c.ent
	s.clip += c.clip
	s.loss += c.loss
}

// chunk runs the first lane's graph on rows[idx]; see lane.run.
func (u *Updater) chunk(rows []Row, idx []int, scale float32) (chunkStats, error) {
	return u.lane.run(rows, idx, scale, u.team)
}

// run runs the lane's graph on rows[idx] (padded with zero-weight rows) and
// returns weight-summed statistics; the gradient is left in the graph's
// buffers. team copies the observations (nil: this goroutine).
func (l *lane) run(rows []Row, idx []int, scale float32, team *par.Team) (chunkStats, error) {
	B := l.tg.Batch()
	obsDim := len(l.obs) / B
	nA := len(l.mask) / B
	clear(l.obs[len(idx)*obsDim:]) // the padding rows; the others are copied below
	clear(l.mask)
	clear(l.adv)
	clear(l.old)
	clear(l.ref)
	clear(l.w)
	for k, i := range idx {
		r := rows[i]
		if len(r.Obs) != obsDim || r.Action < 0 || r.Action >= nA {
			return chunkStats{}, fmt.Errorf("grpo: row %d has %d features and action %d", i, len(r.Obs), r.Action)
		}
		l.mask[k*nA+r.Action] = 1
		l.adv[k], l.old[k], l.ref[k], l.w[k] = r.Adv, r.Old, r.Ref, r.W*scale
	}
	team.For(len(idx), 1, 64, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			copy(l.obs[k*obsDim:(k+1)*obsDim], rows[idx[k]].Obs)
		}
	})
	feeds := map[*G.Node][]float32{l.tg.Obs: l.obs, l.tg.ActionMask: l.mask,
		l.obj.adv: l.adv, l.obj.old: l.old, l.obj.ref: l.ref, l.obj.w: l.w}
	if err := l.tg.Run(feeds); err != nil {
		return chunkStats{}, err
	}
	loss := l.tg.LossValue()
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		// The optimiser refuses the non-finite gradient that comes with it.
		loss = 0
	}
	cs := chunkStats{loss: loss}
	// Ratio and KL are recomputed here from the chosen log-probs (an output of
	// the compiled graph): the tape machine reuses the buffers of intermediate
	// nodes such as the loss's ratio, so reading those back gives garbage.
	lp, err := l.tg.Value(l.tg.ChosenLogProb)
	if err != nil {
		return cs, err
	}
	ent, err := l.tg.Value(l.tg.Entropy)
	if err != nil {
		return cs, err
	}
	for k := range idx {
		w := float64(l.w[k])
		cs.w += w
		cs.kl += w * klEstimate(l.cfg.KLEstimator, float64(lp[k]), float64(l.ref[k]))
		cs.ent += w * float64(ent[k])
		rho := math.Exp(float64(lp[k]) - float64(l.old[k]))
		a := l.adv[k]
		if (a > 0 && rho > 1+l.cfg.ClipHigh) || (a < 0 && rho < 1-l.cfg.ClipLow) {
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
