package critic

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pixelis/pixelis/internal/optim"
)

// Row is one action of a rollout in the critic's batch.
type Row struct {
	Obs    []float32
	Return float32 // the value target Rᵢ (GAE's λ-return)
	Old    float32 // V_old(sᵢ): the value the advantages were computed with
}

// Updater trains a value network with the clipped value loss.
type Updater struct {
	net  *Net
	gr   *graph
	opt  *optim.Adam
	clip float64

	obs, ret, lo, hi, w []float32
	grads               *optim.GradSum // the minibatch's gradient, summed over its chunks
}

// Stats of one update, under verl's names: Loss (critic/vf_loss) is the
// mean of ℓᵢ over the rows, ClipFrac (critic/vf_clipfrac) the share of rows
// whose clipped term was the larger, VPredMean (critic/vpred_mean) the mean
// V(sᵢ) the updates saw, GradNorm (critic/grad_norm) the mean pre-clip norm
// of the optimiser steps.
type Stats struct {
	Loss, ClipFrac, VPredMean, GradNorm float64
	Updates, Skipped                    int
}

// ChunkRows is the rows of an Updater's graph for minibatches of at most most
// rows: half of them, between 64 and 512 (the value loss is lighter than the
// policy's, so its chunks are larger than grpo.ChunkRows).
func ChunkRows(most int) int { return min(max(most/2, 64), 512) }

// NewUpdater builds the loss graph for chunks of batch rows with value clip
// ε_v = clip (0: unclipped).
func NewUpdater(n *Net, batch int, clip float64, adam optim.AdamConfig) (*Updater, error) {
	if len(n.Trainable()) == 0 {
		return nil, errors.New("critic: nothing to train")
	}
	gr, err := newGraph(n, batch, clip)
	if err != nil {
		return nil, err
	}
	u := &Updater{net: n, gr: gr, opt: optim.NewAdam(adam), clip: clip,
		obs: make([]float32, batch*n.ObsDim()), ret: make([]float32, batch),
		lo: make([]float32, batch), hi: make([]float32, batch), w: make([]float32, batch)}
	u.grads = optim.NewGradSum(gr.params())
	return u, nil
}

// SetWorkers sets how many goroutines an update's graph and Adam split
// their work over (1 at first); the results are the same bits whatever the
// number.
func (u *Updater) SetWorkers(n int) {
	u.gr.team.SetWorkers(n)
	u.opt.SetWorkers(n)
}

// Optimizer is the updater's Adam, for checkpointing.
func (u *Updater) Optimizer() *optim.Adam { return u.opt }

// Update runs epochs passes over rows, each split into minibatches shuffled
// with rng; each minibatch is one optimiser step of the token-mean loss
// (every row weighs 1/len(rows), scaled by the number of minibatches so a
// minibatch's loss has the whole batch's scale), its gradient accumulated
// over graph-sized chunks.
func (u *Updater) Update(rows []Row, epochs, minibatches int, lr float64, rng *rand.Rand) (Stats, error) {
	var st Stats
	if len(rows) == 0 {
		return st, nil
	}
	minibatches = max(1, min(minibatches, len(rows)))
	w := float32(minibatches) / float32(len(rows))
	var seen, lossSum, clipSum, vSum, normSum float64
	B := u.gr.batch
	for e := 0; e < epochs; e++ {
		order := rng.Perm(len(rows))
		for mb := 0; mb < minibatches; mb++ {
			idx := order[mb*len(rows)/minibatches : (mb+1)*len(rows)/minibatches]
			u.grads.Clear()
			for lo := 0; lo < len(idx); lo += B {
				chunk := idx[lo:min(lo+B, len(idx))]
				v, err := u.chunk(rows, chunk, w)
				if err != nil {
					return st, err
				}
				for k, i := range chunk {
					l, _, clipped := Loss(float64(v[k]), float64(rows[i].Old), float64(rows[i].Return), u.clip)
					lossSum += l
					if clipped {
						clipSum++
					}
					vSum += float64(v[k])
					seen++
				}
				u.grads.Add(u.gr.params())
			}
			res, err := u.grads.Step(u.opt, u.gr.params(), lr)
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
	if seen > 0 {
		st.Loss, st.ClipFrac, st.VPredMean = lossSum/seen, clipSum/seen, vSum/seen
	}
	if st.Updates > 0 {
		st.GradNorm = normSum / float64(st.Updates)
	}
	return st, nil
}

// chunk runs the graph on rows[idx] (padded with zero-weight rows), leaving
// the gradient in the graph's buffers, and returns V(s) of the rows.
func (u *Updater) chunk(rows []Row, idx []int, w float32) ([]float32, error) {
	od := u.net.ObsDim()
	clear(u.obs)
	clear(u.ret)
	clear(u.lo)
	clear(u.hi)
	clear(u.w)
	eps := float32(u.clip)
	for k, i := range idx {
		r := rows[i]
		if len(r.Obs) != od {
			return nil, fmt.Errorf("critic: row %d has %d features, want %d", i, len(r.Obs), od)
		}
		copy(u.obs[k*od:], r.Obs)
		u.ret[k], u.lo[k], u.hi[k], u.w[k] = r.Return, r.Old-eps, r.Old+eps, w
	}
	v, err := u.gr.run(u.obs, u.ret, u.lo, u.hi, u.w)
	if err != nil {
		return nil, err
	}
	return v[:len(idx)], nil
}

// Loss is one row's ℓ = ½·max((v − R)², (clip(v, old ± ε) − R)²) for a
// prediction v (ε = 0: ½·(v − R)²), its derivative dℓ/dv, and whether the
// clipped term is the larger (the row counts towards vf_clipfrac). The
// clipped term can only be the larger when v lies outside old ± ε, where it
// does not depend on v: the derivative is then 0, the clip's whole point.
func Loss(v, old, R, eps float64) (loss, grad float64, clipped bool) {
	l1 := (v - R) * (v - R)
	if eps == 0 {
		return 0.5 * l1, v - R, false
	}
	vc := math.Min(math.Max(v, old-eps), old+eps)
	if l2 := (vc - R) * (vc - R); l2 > l1 {
		return 0.5 * l2, 0, true
	}
	return 0.5 * l1, v - R, false
}
