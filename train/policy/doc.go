// Package policy is the agent's network: a cell encoder shared across the
// coarse-view cells, an MLP trunk over the question-and-results block and the
// cells' mean encoding, a linear action head, and a location head whose small
// scorer is shared across the cells, with optional LoRA adapters on every
// linear layer. It is built twice: as a gorgonia graph for gradients
// (TrainGraph) and as a plain-Go forward pass for rollouts (Inference).
//
// Start with Params (params.go): every weight as a named float32 slice.
// New initialises a network from a Config; Tensors, Assign and Clone move
// weights in and out (checkpoints key on the names); Trainable picks the
// parameters of a training mode — the base weights for SFT, the adapters only
// for RFT with the base frozen. MergeAdapters folds adapters into the base.
//
// # The network
//
//	e_c      = ReLU(cell_c·E + b_e)       for each cell c   cell.enc
//	x        = [global, mean_c e_c]
//	h        = ReLU(… ReLU(x·W₀ + b₀) …)                   trunk.0 … trunk.n−1
//	logits   = h·W_head + b_head                            head
//	z_c      = ReLU(cell_c·U + h·P + b)   for each cell c   loc.cell (U), loc.trunk (P, b)
//	logits_c += z_c·v                     for c < Cells     loc.score (v)
//
// cell_c is the c-th row of CellFeatures floats after the GlobalFeatures block
// of the observation (global); logit c is "segment at cell c" (env's action
// layout). Because U, P and v are shared across cells, the scorer learns "a
// red object here" once instead of once per cell, which a flat MLP cannot.
// The trunk sees the cells only through their mean encoding: a trunk over the
// whole observation memorised the cell rows and answered held-out spatial and
// geometric questions from its own measurements at 0.73 and 0.69, where the
// question-and-results block alone reaches 1.0. A LoRA layer
// computes y = x·W + b + (α/r)·(x·A)·B with B initialised to zero.
//
// # Training
//
// NewTrainGraph builds the forward graph for a fixed batch size and exposes
// Obs, ActionMask (one-hot inputs), Logits, LogProbs, ChosenLogProb and
// Entropy. The caller adds its own inputs with NewInput and composes a scalar
// loss with gorgonia ops, e.g. SFT with per-row weights w (zero for padding):
//
//	w, _ := tg.NewInput("row_weight", B)
//	loss := G.Must(G.Sum(G.Must(G.HadamardProd(w, G.Must(G.Neg(tg.ChosenLogProb))))))
//
// and GRPO's PPO-clip objective with a KL anchor, all in the graph
// (MinBetween/MaxBetween are differentiable; clip against constant vectors
// of the batch length, they do not broadcast scalars):
//
//	ratio   := Exp(ChosenLogProb − old)
//	clipped := MaxBetween(MinBetween(ratio, full(1+ε)), full(1−ε))
//	surr    := MinBetween(ratio ⊙ adv, clipped ⊙ adv)
//	r       := ref − ChosenLogProb;  kl := Exp(r) − r − 1          (k3 estimator)
//	loss    := Sum(w ⊙ (β·kl − surr))
//
// graph_test.go builds exactly these and checks their gradients against
// finite differences. Then SetLoss(loss) once, and per batch Run(feeds) and
// optim.Adam.Step(tg.Params(), lr): Params alias the live weights, so the
// next Run reads the update.
//
// gorgonia pitfalls this package works around: its LogSoftMax shifts by the
// first element (we build a max-shifted one); ByIndices gives wrong gradients
// (we mask and sum); a tape machine re-runs only after Reset (Run does it);
// and G.Grad adds gradient nodes for every operand (∂L/∂Obs, frozen weights),
// which SetLoss prunes before compiling. The layers are internal/nn's Dense
// ops (product, bias, adapter and ReLU in one pass, the bits of gorgonia's
// separate ops), which split their work over SetWorkers goroutines with the
// same bits on any number; nothing may write a TrainGraph's weights during
// Run — rollouts use Inference, which holds its own merged copy refreshed
// after each update.
//
// # Rollouts
//
// Inference.Logits computes the same logits outside gorgonia, with the
// project's BLAS (internal/blas: the observation layer adds only the weight
// rows of non-zero inputs, the other layers are dense products), for any
// number of rows, on the calling goroutine, safely from several goroutines
// at once: run one rollout worker per core. A row's logits do not depend on
// the other rows of the call. Sample, Greedy, LogSoftmax and Entropy
// work on one row of logits in float64; Sample returns the log-probability
// under the temperature-scaled distribution it drew from.
package policy
