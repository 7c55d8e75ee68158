package sft

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
)

func smallPolicy(t *testing.T) *policy.Params {
	t.Helper()
	p, err := policy.New(policy.Config{Hidden: []int{8}, LocHidden: 4, CellEmbed: 4, LoRARank: 2, LoRAAlpha: 2}.WithEnvLayout(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func randomPairs(actions ...int) []*Pair {
	rng := rand.New(rand.NewPCG(3, 4))
	ps := make([]*Pair, len(actions))
	for i, a := range actions {
		obs := make([]float32, env.ObsDim)
		for j := range obs {
			obs[j] = float32(rng.Float64())
		}
		ps[i] = &Pair{Obs: obs, Action: a}
	}
	return ps
}

// The loss is the weighted mean of −log π over the imitated pairs and of
// −log(1 − π + ε) over the avoided one, answers weighted apart from
// operations, computed here by hand from the inference path.
func TestLossIsWeightedImitationAndUnlikelihood(t *testing.T) {
	p := smallPolicy(t)
	tr, err := NewTrainer(p, 4, Weights{Op: 1, Answer: 3, Avoid: 0.5}, optim.DefaultAdam())
	if err != nil {
		t.Fatal(err)
	}
	pairs := randomPairs(5, env.FirstAnswerAction+1, env.FirstToolAction+2, env.FirstAnswerAction+3) // segment, answer, tool, avoided answer
	pairs[3].Role = env.RoleAvoid
	inf := policy.NewInference(p)
	logits := make([]float32, p.Config().Actions)
	var want, wsum float64
	for i, pr := range pairs {
		inf.Logits(pr.Obs, 1, logits)
		w := []float64{1, 3, 1, 0.5}[i]
		lp := policy.LogSoftmax(logits)[pr.Action]
		if pr.Role == env.RoleAvoid {
			want += w * -math.Log(1-math.Exp(lp)+unlikelihoodEps)
		} else {
			want += w * -lp
		}
		wsum += w
	}
	want /= wsum
	st, err := tr.Step(pairs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(st.Loss-want) > 1e-4*math.Max(1, want) {
		t.Fatalf("loss %v, by hand %v", st.Loss, want)
	}
}

// Training on a fixed batch drives its loss down and its accuracy up; only base
// weights move (adapters are for RFT).
func TestStepLearnsBaseOnly(t *testing.T) {
	p := smallPolicy(t)
	before := map[string][]float32{}
	for _, tn := range p.Tensors() {
		before[tn.Name] = slices.Clone(tn.Data)
	}
	tr, err := NewTrainer(p, 4, Weights{Op: 1, Answer: 1}, optim.DefaultAdam())
	if err != nil {
		t.Fatal(err)
	}
	pairs := randomPairs(3, 17, env.FirstAnswerAction, env.FirstToolAction)
	first, err := tr.Step(pairs, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	var last Stats
	for i := 0; i < 300; i++ {
		if last, err = tr.Step(pairs, 1e-2); err != nil {
			t.Fatal(err)
		}
	}
	if !(last.Loss < first.Loss/4) || last.Accuracy != 1 {
		t.Fatalf("loss %v → %v, accuracy %v: did not learn a fixed batch", first.Loss, last.Loss, last.Accuracy)
	}
	lora := map[string]bool{}
	for _, n := range p.Trainable(true) {
		lora[n] = true
	}
	for _, tn := range p.Tensors() {
		if lora[tn.Name] && !slices.Equal(tn.Data, before[tn.Name]) {
			t.Errorf("adapter %s changed during SFT", tn.Name)
		}
	}
}

// A batch whose gradient is not finite is refused and changes no weight.
func TestNonFiniteBatchNeverReachesTheWeights(t *testing.T) {
	p := smallPolicy(t)
	tr, err := NewTrainer(p, 2, Weights{Op: 1, Answer: 1}, optim.DefaultAdam())
	if err != nil {
		t.Fatal(err)
	}
	pairs := randomPairs(1, 2)
	pairs[0].Obs[0] = float32(math.Inf(1))
	before := map[string][]float32{}
	for _, tn := range p.Tensors() {
		before[tn.Name] = slices.Clone(tn.Data)
	}
	st, err := tr.Step(pairs, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Skipped {
		t.Fatalf("a non-finite batch was applied: %+v", st)
	}
	for _, tn := range p.Tensors() {
		if !slices.Equal(tn.Data, before[tn.Name]) {
			t.Fatalf("%s changed after a refused batch", tn.Name)
		}
	}
}

// A batch whose rows all weigh 0 is refused (configs.Validate keeps op and
// answer weights from both being 0).
func TestTrainerRefusesAWeightlessBatch(t *testing.T) {
	tr, err := NewTrainer(smallPolicy(t), 2, Weights{Op: 0, Answer: 1}, optim.DefaultAdam())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Step(randomPairs(3, 4), 1e-2); err == nil {
		t.Error("a batch of operations with operation weight 0 accepted")
	}
}

// Unlikelihood pushes an avoided action's probability down.
func TestAvoidedActionLosesProbability(t *testing.T) {
	p := smallPolicy(t)
	tr, err := NewTrainer(p, 2, Weights{Op: 1, Answer: 1, Avoid: 1}, optim.DefaultAdam())
	if err != nil {
		t.Fatal(err)
	}
	pairs := randomPairs(env.FirstAnswerAction + 2)
	pairs[0].Role = env.RoleAvoid
	prob := func() float64 {
		logits := make([]float32, p.Config().Actions)
		policy.NewInference(p).Logits(pairs[0].Obs, 1, logits)
		return math.Exp(policy.LogSoftmax(logits)[pairs[0].Action])
	}
	before := prob()
	for range 50 {
		if _, err := tr.Step(pairs, 1e-2); err != nil {
			t.Fatal(err)
		}
	}
	if after := prob(); !(after < before/4) {
		t.Fatalf("π(avoided) %v → %v", before, after)
	}
}

// OpOf follows the action space's layout: cells, the four tools, answers.
func TestOpOf(t *testing.T) {
	cases := map[int]env.Op{
		0: env.OpSegment, env.NumCells - 1: env.OpSegment,
		env.FirstToolAction: env.OpProperties, env.FirstToolAction + 1: env.OpZoom,
		env.FirstToolAction + 2: env.OpReadText, env.FirstToolAction + 3: env.OpTrack,
		env.FirstAnswerAction: env.OpAnswer, env.NumActions() - 1: env.OpAnswer,
	}
	for a, want := range cases {
		if got := OpOf(a); got != want {
			t.Errorf("OpOf(%d) = %s, want %s", a, got, want)
		}
	}
}
