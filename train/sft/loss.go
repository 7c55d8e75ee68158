package sft

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/internal/par"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
)

// Weights of the kinds of row in the loss. The paper upweights the operation
// (and argument) tokens over the answer; here an action is one token. Avoid
// weighs the rows of demonstrated mistakes.
type Weights struct {
	Op, Answer, Avoid float64
}

// Trainer is the imitation loss over a fixed-size batch of pairs, with
// unlikelihood (Welleck et al. 2019) on the demonstrated mistakes:
//
//	L = − [ Σ_{i imitated} wᵢ · log π(aᵢ|sᵢ)  +  Σ_{i avoided} wᵢ · log(1 − π(aᵢ|sᵢ) + ε) ] / Σᵢ wᵢ
//
// wᵢ = Weights.Op or Weights.Answer by aᵢ's kind for imitated rows and
// Weights.Avoid for avoided ones; padding rows have wᵢ = 0.
type Trainer struct {
	tg      *policy.TrainGraph
	rowW    *G.Node // imitated rows' weights
	avoidW  *G.Node // avoided rows' weights
	weights Weights
	opt     *optim.Adam
	team    *par.Team // the goroutines a step's observations are laid out on

	obs, mask, w, wAvoid []float32
}

// Stats of one update.
type Stats struct {
	Loss     float64
	Accuracy float64 // share of imitated rows whose argmax is the demonstrated action
	GradNorm float64
	Skipped  bool // the gradient was non-finite; the weights were not changed
	// OpRows and OpHits split Accuracy by the demonstrated action's operation:
	// imitated rows, and those whose argmax is the demonstrated action.
	OpRows, OpHits [env.NumOps]int
}

// OpOf is the operation of an action index of the discrete action space.
func OpOf(action int) env.Op {
	switch {
	case action < env.FirstToolAction:
		return env.OpSegment
	case action < env.FirstAnswerAction:
		return env.OpProperties + env.Op(action-env.FirstToolAction)
	}
	return env.OpAnswer
}

// unlikelihoodEps keeps log(1 − π + ε) finite when π reaches 1.
const unlikelihoodEps = 1e-6

// NewTrainer builds the loss graph for batches of batch pairs, training every
// parameter of p (base and adapters).
func NewTrainer(p *policy.Params, batch int, w Weights, adam optim.AdamConfig) (*Trainer, error) {
	tg, err := policy.NewTrainGraph(p, batch, p.Trainable(false))
	if err != nil {
		return nil, err
	}
	t := &Trainer{tg: tg, weights: w, opt: optim.NewAdam(adam), team: par.NewTeam(1)}
	if t.rowW, err = tg.NewInput("row_weight", batch); err != nil {
		return nil, err
	}
	if t.avoidW, err = tg.NewInput("avoid_weight", batch); err != nil {
		return nil, err
	}
	var m must
	imitate := m.do(G.Sum(m.do(G.HadamardProd(t.rowW, tg.ChosenLogProb))))
	one := G.NewConstant(float32(1))
	notA := m.do(G.Add(m.do(G.Sub(one, m.do(G.Exp(tg.ChosenLogProb)))), G.NewConstant(float32(unlikelihoodEps))))
	avoid := m.do(G.Sum(m.do(G.HadamardProd(t.avoidW, m.do(G.Log(notA))))))
	loss := m.do(G.Neg(m.do(G.Add(imitate, avoid))))
	if m.err != nil {
		return nil, fmt.Errorf("sft loss: %w", m.err)
	}
	if err := tg.SetLoss(loss); err != nil {
		return nil, err
	}
	cfg := p.Config()
	t.obs = make([]float32, batch*cfg.ObsDim())
	t.mask = make([]float32, batch*cfg.Actions)
	t.w, t.wAvoid = make([]float32, batch), make([]float32, batch)
	return t, nil
}

// must keeps the first error of a chain of graph-building calls.
type must struct{ err error }

func (m *must) do(n *G.Node, err error) *G.Node {
	if m.err == nil && err != nil {
		m.err = err
	}
	return n
}

// rowWeight is a pair's loss weight before normalisation.
func (t *Trainer) rowWeight(pr *Pair) float64 {
	switch {
	case pr.Role == env.RoleAvoid:
		return t.weights.Avoid
	case pr.Action >= env.FirstAnswerAction:
		return t.weights.Answer
	}
	return t.weights.Op
}

// SetWorkers sets how many goroutines a Step's graph splits its work over
// (1 at first); the results are the same bits whatever the number.
func (t *Trainer) SetWorkers(n int) {
	t.tg.SetWorkers(n)
	t.opt.SetWorkers(n)
	t.team.SetWorkers(n)
}

// Optimizer is the trainer's Adam, for checkpointing.
func (t *Trainer) Optimizer() *optim.Adam { return t.opt }

// Step runs one update on pairs (at most the batch size; fewer are padded).
func (t *Trainer) Step(pairs []*Pair, lr float64) (Stats, error) {
	B := t.tg.Batch()
	if len(pairs) == 0 || len(pairs) > B {
		return Stats{}, fmt.Errorf("sft step: %d pairs for a batch of %d", len(pairs), B)
	}
	obsDim := len(t.obs) / B
	nA := len(t.mask) / B
	clear(t.obs[len(pairs)*obsDim:]) // the padding rows; the others are decoded below
	clear(t.mask)
	clear(t.w)
	clear(t.wAvoid)
	var total float64
	for i, pr := range pairs {
		if pr.ObsLen() != obsDim {
			return Stats{}, fmt.Errorf("sft step: pair %d has %d features, want %d", i, pr.ObsLen(), obsDim)
		}
	}
	t.team.For(len(pairs), 1, 64, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			pairs[i].Observation(t.obs[i*obsDim : (i+1)*obsDim])
		}
	})
	for i, pr := range pairs {
		t.mask[i*nA+pr.Action] = 1
		w := t.rowWeight(pr)
		if pr.Role == env.RoleAvoid {
			t.wAvoid[i] = float32(w)
		} else {
			t.w[i] = float32(w)
		}
		total += w
	}
	if total == 0 {
		return Stats{}, fmt.Errorf("sft step: every pair has loss weight 0")
	}
	for i := range pairs {
		t.w[i] /= float32(total)
		t.wAvoid[i] /= float32(total)
	}
	if err := t.tg.Run(map[*G.Node][]float32{t.tg.Obs: t.obs, t.tg.ActionMask: t.mask, t.rowW: t.w, t.avoidW: t.wAvoid}); err != nil {
		return Stats{}, err
	}
	st := Stats{Loss: t.tg.LossValue()}
	logits, err := t.tg.Value(t.tg.Logits)
	if err != nil {
		return st, err
	}
	var hits, imitated int
	for i, pr := range pairs {
		if pr.Role == env.RoleAvoid {
			continue
		}
		imitated++
		op := OpOf(pr.Action)
		st.OpRows[op]++
		if policy.Greedy(logits[i*nA:(i+1)*nA]) == pr.Action {
			hits++
			st.OpHits[op]++
		}
	}
	if imitated > 0 {
		st.Accuracy = float64(hits) / float64(imitated)
	}
	res, err := t.opt.Step(t.tg.Params(), lr)
	st.GradNorm = res.GradNorm
	if err == optim.ErrNonFinite {
		st.Skipped = true
		return st, nil
	}
	return st, err
}
