package sft

import (
	"errors"
	"fmt"
	"unsafe"

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
//
// A batch larger than ChunkRows is computed in equal chunks (see ChunkRows):
// L is a sum over rows, so ∇L = Σ_chunks ∇L_chunk with every wᵢ normalised
// by the whole batch's Σᵢ wᵢ.
type Trainer struct {
	lanes   []*lane // lanes[0] always; lanes[1] once SetWorkers asks for two workers and a batch has two chunks
	build   func() (*lane, error)
	chunk   int // rows per graph
	batch   int // pairs per Step at most
	weights Weights
	opt     *optim.Adam
	grads   *optim.GradSum // the batch's gradient, summed over its chunks in order
	team    *par.Team      // a lone chunk's observations are decoded on it
	workers int
}

// ChunkRows is the most rows one graph computes: a larger batch is cut into
// chunks of equal size (the last padded), each chunk's gradient is computed
// alone and the chunks are summed in their order. With two or more workers two
// chunks run at once on two graphs (lanes), one core each; the bits of a step
// do not depend on the number of workers.
const ChunkRows = 128

// Chunks is how a Trainer for batches of batch pairs cuts a full batch: into
// n chunks of rows pairs each (the last padded), no more than ChunkRows each.
func Chunks(batch int) (n, rows int) { return chunking(batch, ChunkRows) }

func chunking(batch, most int) (n, rows int) {
	n = (batch + most - 1) / most
	return n, (batch + n - 1) / n
}

// Batch is the draw of one SFT step: the indices of its pairs in the training
// set and the pairs. NewBatch allocates both at their full size once, so a
// step never grows them (growing a slice holds the old and the new array at
// once) and BatchBytes is what they hold.
type Batch struct {
	Idx   []int
	Pairs []*Pair
}

// NewBatch is an empty Batch for batches of size pairs.
func NewBatch(size int) *Batch {
	return &Batch{Idx: make([]int, 0, size), Pairs: make([]*Pair, 0, size)}
}

// BatchBytes is what a step of size pairs holds beside the trainer's graphs:
// its Batch and the list of its chunks Trainer.Step cuts (see Chunks).
func BatchBytes(size int) float64 {
	n, _ := Chunks(size)
	perPair := unsafe.Sizeof(int(0)) + unsafe.Sizeof((*Pair)(nil))
	return float64(size)*float64(perPair) + float64(n)*float64(unsafe.Sizeof([]*Pair(nil)))
}

// lane is one loss graph over the policy's weights (read in place, so every
// lane sees each optimiser step) with the buffers its inputs are laid out in.
type lane struct {
	tg                   *policy.TrainGraph
	rowW, avoidW         *G.Node // imitated and avoided rows' weights
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
	return newTrainer(p, batch, ChunkRows, w, adam)
}

// newTrainer is NewTrainer with chunks of at most chunkRows rows.
func newTrainer(p *policy.Params, batch, chunkRows int, w Weights, adam optim.AdamConfig) (*Trainer, error) {
	if batch <= 0 {
		return nil, fmt.Errorf("sft: batch %d must be positive", batch)
	}
	_, chunk := chunking(batch, chunkRows)
	build := func() (*lane, error) { return newLane(p, chunk) }
	first, err := build()
	if err != nil {
		return nil, err
	}
	t := &Trainer{lanes: []*lane{first}, build: build, chunk: chunk, batch: batch, weights: w,
		opt: optim.NewAdam(adam), team: par.NewTeam(1), workers: 1}
	t.grads = optim.NewGradSum(first.tg.Params())
	return t, nil
}

// newLane builds the loss graph for chunks of rows pairs.
func newLane(p *policy.Params, rows int) (*lane, error) {
	tg, err := policy.NewTrainGraph(p, rows, p.Trainable(false))
	if err != nil {
		return nil, err
	}
	l := &lane{tg: tg}
	if l.rowW, err = tg.NewInput("row_weight", rows); err != nil {
		return nil, err
	}
	if l.avoidW, err = tg.NewInput("avoid_weight", rows); err != nil {
		return nil, err
	}
	var m must
	imitate := m.do(G.Sum(m.do(G.HadamardProd(l.rowW, tg.ChosenLogProb))))
	one := G.NewConstant(float32(1))
	notA := m.do(G.Add(m.do(G.Sub(one, m.do(G.Exp(tg.ChosenLogProb)))), G.NewConstant(float32(unlikelihoodEps))))
	avoid := m.do(G.Sum(m.do(G.HadamardProd(l.avoidW, m.do(G.Log(notA))))))
	loss := m.do(G.Neg(m.do(G.Add(imitate, avoid))))
	if m.err != nil {
		return nil, fmt.Errorf("sft loss: %w", m.err)
	}
	if err := tg.SetLoss(loss); err != nil {
		return nil, err
	}
	cfg := p.Config()
	l.obs = make([]float32, rows*cfg.ObsDim())
	l.mask = make([]float32, rows*cfg.Actions)
	l.w, l.wAvoid = make([]float32, rows), make([]float32, rows)
	return l, nil
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

// SetWorkers sets how many goroutines a Step uses (1 at first): with two or
// more, two chunks of a batch run at once on two lanes. Each lane's graph, and
// a lone chunk's, splits its ops over half the workers (see
// grpo.Updater.SetWorkers for why not all). The results are the same bits
// whatever the number.
func (t *Trainer) SetWorkers(n int) {
	t.workers = max(n, 1)
	for _, l := range t.lanes {
		l.tg.SetWorkers(t.laneWorkers())
	}
	t.opt.SetWorkers(n)
	t.grads.SetWorkers(n)
	t.team.SetWorkers(n)
}

// laneWorkers is how many goroutines a lane's graph splits its ops over.
func (t *Trainer) laneWorkers() int { return max(t.workers/2, 1) }

// Optimizer is the trainer's Adam, for checkpointing.
func (t *Trainer) Optimizer() *optim.Adam { return t.opt }

// Step runs one update on pairs (at most the batch size; fewer are padded).
func (t *Trainer) Step(pairs []*Pair, lr float64) (Stats, error) {
	if len(pairs) == 0 || len(pairs) > t.batch {
		return Stats{}, fmt.Errorf("sft step: %d pairs for a batch of %d", len(pairs), t.batch)
	}
	obsDim := len(t.lanes[0].obs) / t.chunk
	var total float64
	for i, pr := range pairs {
		if pr.ObsLen() != obsDim {
			return Stats{}, fmt.Errorf("sft step: pair %d has %d features, want %d", i, pr.ObsLen(), obsDim)
		}
		total += t.rowWeight(pr)
	}
	if total == 0 {
		return Stats{}, fmt.Errorf("sft step: every pair has loss weight 0")
	}
	chunks := make([][]*Pair, 0, (len(pairs)+t.chunk-1)/t.chunk) // at full size: see BatchBytes
	for lo := 0; lo < len(pairs); lo += t.chunk {
		chunks = append(chunks, pairs[lo:min(lo+t.chunk, len(pairs))])
	}
	lanes, err := t.lanesFor(len(chunks))
	if err != nil {
		return Stats{}, err
	}
	t.grads.Clear()
	var st Stats
	var hits, imitated int
	for c := 0; c < len(chunks); c += len(lanes) {
		group := chunks[c:min(c+len(lanes), len(chunks))]
		results, err := t.runLanes(lanes[:len(group)], group, total)
		if err != nil {
			return st, err
		}
		for i, r := range results { // in the chunks' order
			st.Loss += r.loss
			hits += r.hits
			imitated += r.imitated
			for op := range st.OpRows {
				st.OpRows[op] += r.opRows[op]
				st.OpHits[op] += r.opHits[op]
			}
			t.grads.Add(lanes[i].tg.Params())
		}
	}
	if imitated > 0 {
		st.Accuracy = float64(hits) / float64(imitated)
	}
	res, err := t.grads.Step(t.opt, t.lanes[0].tg.Params(), lr)
	st.GradNorm = res.GradNorm
	if err == optim.ErrNonFinite {
		st.Skipped = true
		return st, nil
	}
	return st, err
}

// lanesFor returns the lanes a batch of n chunks runs on.
func (t *Trainer) lanesFor(n int) ([]*lane, error) {
	if t.workers < 2 || n < 2 {
		return t.lanes[:1], nil
	}
	if len(t.lanes) == 1 {
		l, err := t.build()
		if err != nil {
			return nil, fmt.Errorf("sft: a second lane: %w", err)
		}
		l.tg.SetWorkers(t.laneWorkers())
		t.lanes = append(t.lanes, l)
	}
	return t.lanes, nil
}

// chunkResult is what one chunk adds to a step's Stats.
type chunkResult struct {
	loss           float64
	hits, imitated int
	opRows, opHits [env.NumOps]int
}

// runLanes runs chunk i on lane i, at once when there are two, and returns
// their results in order; total is the batch's Σᵢ wᵢ.
func (t *Trainer) runLanes(lanes []*lane, chunks [][]*Pair, total float64) ([]chunkResult, error) {
	results := make([]chunkResult, len(chunks))
	if len(chunks) == 1 {
		r, err := t.run(lanes[0], chunks[0], total, t.team)
		results[0] = r
		return results, err
	}
	var errs [2]error
	par.NewTeam(len(chunks)).Do(
		func() { results[0], errs[0] = t.run(lanes[0], chunks[0], total, nil) },
		func() { results[1], errs[1] = t.run(lanes[1], chunks[1], total, nil) },
	)
	return results, errors.Join(errs[0], errs[1])
}

// run lays pairs out in the lane's inputs (padded with zero-weight rows), runs
// its graph, and returns the chunk's loss and accuracy counts; the gradient is
// left in the graph's buffers. team decodes the observations (nil: this
// goroutine).
func (t *Trainer) run(l *lane, pairs []*Pair, total float64, team *par.Team) (chunkResult, error) {
	B := l.tg.Batch()
	obsDim := len(l.obs) / B
	nA := len(l.mask) / B
	clear(l.obs[len(pairs)*obsDim:]) // the padding rows; the others are decoded below
	clear(l.mask)
	clear(l.w)
	clear(l.wAvoid)
	team.For(len(pairs), 1, 64, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			pairs[i].Observation(l.obs[i*obsDim : (i+1)*obsDim])
		}
	})
	for i, pr := range pairs {
		l.mask[i*nA+pr.Action] = 1
		w := t.rowWeight(pr)
		if pr.Role == env.RoleAvoid {
			l.wAvoid[i] = float32(w)
		} else {
			l.w[i] = float32(w)
		}
	}
	for i := range pairs {
		l.w[i] /= float32(total)
		l.wAvoid[i] /= float32(total)
	}
	if err := l.tg.Run(map[*G.Node][]float32{l.tg.Obs: l.obs, l.tg.ActionMask: l.mask, l.rowW: l.w, l.avoidW: l.wAvoid}); err != nil {
		return chunkResult{}, err
	}
	r := chunkResult{loss: l.tg.LossValue()}
	logits, err := l.tg.Value(l.tg.Logits)
	if err != nil {
		return r, err
	}
	for i, pr := range pairs {
		if pr.Role == env.RoleAvoid {
			continue
		}
		r.imitated++
		op := OpOf(pr.Action)
		r.opRows[op]++
		if policy.Greedy(logits[i*nA:(i+1)*nA]) == pr.Action {
			r.hits++
			r.opHits[op]++
		}
	}
	return r, nil
}
