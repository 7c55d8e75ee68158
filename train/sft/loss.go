package sft

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
)

// Weights of the two kinds of action in the loss. The paper upweights the
// operation (and argument) tokens over the answer; here an action is one token.
type Weights struct {
	Op, Answer float64
}

// Trainer is the imitation loss over a fixed-size batch of pairs:
//
//	L = − Σᵢ wᵢ · log π(aᵢ|sᵢ) / Σᵢ wᵢ,   wᵢ = Weights.Op or Weights.Answer by aᵢ's kind
//
// (a masked mean over valid rows: padding rows have wᵢ = 0).
type Trainer struct {
	tg      *policy.TrainGraph
	rowW    *G.Node
	weights Weights
	opt     *optim.Adam

	obs, mask, w []float32
}

// Stats of one update.
type Stats struct {
	Loss     float64
	Accuracy float64 // share of rows whose argmax is the expert action
	GradNorm float64
	Skipped  bool // the gradient was non-finite; the weights were not changed
}

// NewTrainer builds the loss graph for batches of batch pairs, training every
// parameter of p (base and adapters).
func NewTrainer(p *policy.Params, batch int, w Weights, adam optim.AdamConfig) (*Trainer, error) {
	if w.Op < 0 || w.Answer < 0 || w.Op+w.Answer == 0 {
		return nil, fmt.Errorf("sft: loss weights op=%v answer=%v must be >= 0 and not both 0", w.Op, w.Answer)
	}
	tg, err := policy.NewTrainGraph(p, batch, p.Trainable(false))
	if err != nil {
		return nil, err
	}
	rowW, err := tg.NewInput("row_weight", batch)
	if err != nil {
		return nil, err
	}
	prod, err := G.HadamardProd(rowW, tg.ChosenLogProb)
	if err != nil {
		return nil, fmt.Errorf("sft loss: %w", err)
	}
	sum, err := G.Sum(prod)
	if err != nil {
		return nil, fmt.Errorf("sft loss: %w", err)
	}
	loss, err := G.Neg(sum)
	if err != nil {
		return nil, fmt.Errorf("sft loss: %w", err)
	}
	if err := tg.SetLoss(loss); err != nil {
		return nil, err
	}
	cfg := p.Config()
	return &Trainer{
		tg: tg, rowW: rowW, weights: w, opt: optim.NewAdam(adam),
		obs:  make([]float32, batch*cfg.ObsDim()),
		mask: make([]float32, batch*cfg.Actions),
		w:    make([]float32, batch),
	}, nil
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
	clear(t.obs)
	clear(t.mask)
	clear(t.w)
	var total float64
	for i, pr := range pairs {
		copy(t.obs[i*obsDim:(i+1)*obsDim], pr.Obs)
		t.mask[i*nA+pr.Action] = 1
		w := t.weights.Op
		if pr.Action >= env.FirstAnswerAction {
			w = t.weights.Answer
		}
		t.w[i] = float32(w)
		total += w
	}
	if total == 0 {
		return Stats{}, fmt.Errorf("sft step: every pair has loss weight 0")
	}
	for i := range pairs {
		t.w[i] /= float32(total)
	}
	if err := t.tg.Run(map[*G.Node][]float32{t.tg.Obs: t.obs, t.tg.ActionMask: t.mask, t.rowW: t.w}); err != nil {
		return Stats{}, err
	}
	st := Stats{Loss: t.tg.LossValue()}
	logits, err := t.tg.Value(t.tg.Logits)
	if err != nil {
		return st, err
	}
	var hits int
	for i, pr := range pairs {
		if policy.Greedy(logits[i*nA:(i+1)*nA]) == pr.Action {
			hits++
		}
	}
	st.Accuracy = float64(hits) / float64(len(pairs))
	res, err := t.opt.Step(t.tg.Params(), lr)
	st.GradNorm = res.GradNorm
	if err == optim.ErrNonFinite {
		st.Skipped = true
		return st, nil
	}
	return st, err
}
