package grpo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/policy"
)

func tinyPolicy(t *testing.T) *policy.Params {
	t.Helper()
	cfg := policy.Config{Hidden: []int{6}, LocHidden: 3, CellEmbed: 3, LoRARank: 2, LoRAAlpha: 2,
		GlobalFeatures: 4, Cells: 3, CellFeatures: 2, Actions: 6}
	p, err := policy.New(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	// Non-zero adapters, so the gradient flows through both A and B.
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tn := range p.Tensors() {
		if len(tn.Name) > 6 && tn.Name[len(tn.Name)-6:] == "lora_B" {
			for i := range tn.Data {
				tn.Data[i] = float32(rng.NormFloat64() * 0.5)
			}
		}
	}
	return p
}

// rowsFor builds rows whose old/ref log-probs sit away from the current policy's,
// so that some ratios are clipped and the KL term is not zero.
func rowsFor(t *testing.T, p *policy.Params, n int) []Row {
	t.Helper()
	cfg := p.Config()
	rng := rand.New(rand.NewPCG(5, 6))
	inf := policy.NewInference(p)
	rows := make([]Row, n)
	logits := make([]float32, cfg.Actions)
	for i := range rows {
		obs := make([]float32, cfg.ObsDim())
		for j := range obs {
			obs[j] = float32(rng.NormFloat64())
		}
		inf.Logits(obs, 1, logits)
		a := i % cfg.Actions
		lp := policy.LogSoftmax(logits)[a]
		adv := []float32{1.5, -0.8, 0.6, -1.2}[i%4]
		shift := []float64{0.6, -0.5, 0.05, 0.4, -0.3}[i%5] // ratio e^{shift}: clipped for |shift| large
		rows[i] = Row{Obs: obs, Action: a, Adv: adv, Old: float32(lp - shift), Ref: float32(lp - 0.3*shift + 0.1), W: 1 / float32(n)}
	}
	return rows
}

// The graph's loss equals the formula computed by hand in float64 from the
// inference path's log-probabilities, for both KL estimators.
func TestObjectiveMatchesFormula(t *testing.T) {
	for _, est := range []string{"k1", "k3"} {
		p := tinyPolicy(t)
		c := LossConfig{ClipLow: 0.2, ClipHigh: 0.28, KLCoef: 0.1, KLEstimator: est, EntropyCoef: 0.01}
		u, err := NewUpdater(p, 8, p.Trainable(true), c, optim.DefaultAdam())
		if err != nil {
			t.Fatal(err)
		}
		rows := rowsFor(t, p, 5)
		idx := []int{0, 1, 2, 3, 4}
		if _, err := u.chunk(rows, idx, 1); err != nil {
			t.Fatal(err)
		}
		got := u.tg.LossValue()
		inf := policy.NewInference(p)
		logits := make([]float32, p.Config().Actions)
		var want float64
		for _, r := range rows {
			inf.Logits(r.Obs, 1, logits)
			lps := policy.LogSoftmax(logits)
			lp := lps[r.Action]
			var ent float64
			for _, l := range lps {
				ent -= math.Exp(l) * l
			}
			rho := math.Exp(lp - float64(r.Old))
			A := float64(r.Adv)
			pg := -math.Min(rho*A, math.Max(math.Min(rho, 1.28), 0.8)*A)
			var kl float64
			if est == "k1" {
				kl = lp - float64(r.Ref)
			} else {
				d := float64(r.Ref) - lp
				kl = math.Exp(d) - d - 1
			}
			want += float64(r.W) * (pg + 0.1*kl - 0.01*ent)
		}
		if math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
			t.Fatalf("%s: graph loss %v, formula %v", est, got, want)
		}
	}
}

// The gradient of the whole objective with respect to every adapter weight
// matches central finite differences.
func TestObjectiveGradientFiniteDifferences(t *testing.T) {
	for _, temp := range []float64{1, 0.6} {
		t.Run(fmt.Sprintf("T=%v", temp), func(t *testing.T) { objectiveGradientCheck(t, temp) })
	}
}

func objectiveGradientCheck(t *testing.T, temperature float64) {
	p := tinyPolicy(t)
	c := LossConfig{ClipLow: 0.2, ClipHigh: 0.28, KLCoef: 0.2, KLEstimator: "k3", EntropyCoef: 0.05, Temperature: temperature}
	u, err := NewUpdater(p, 6, p.Trainable(true), c, optim.DefaultAdam())
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsFor(t, p, 6)
	idx := []int{0, 1, 2, 3, 4, 5}
	if _, err := u.chunk(rows, idx, 1); err != nil {
		t.Fatal(err)
	}
	var grads [][]float32
	for _, prm := range u.tg.Params() {
		grads = append(grads, append([]float32(nil), prm.Grad...))
	}
	lossAt := func() float64 {
		if _, err := u.chunk(rows, idx, 1); err != nil {
			t.Fatal(err)
		}
		return u.tg.LossValue()
	}
	const eps = 1e-2
	checked := 0
	for i, prm := range u.tg.Params() {
		for j := range prm.Data {
			orig := prm.Data[j]
			prm.Data[j] = orig + eps
			lp := lossAt()
			prm.Data[j] = orig - eps
			lm := lossAt()
			prm.Data[j] = orig
			num := (lp - lm) / (2 * eps)
			an := float64(grads[i][j])
			if math.Abs(num-an) > 2e-3+5e-2*math.Abs(num) {
				t.Errorf("%s[%d]: analytic %.6f, numeric %.6f", prm.Name, j, an, num)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d weights checked", checked)
	}
}

// An update moves only the adapters: the frozen base stays bit-identical.
func TestUpdateTrainsAdaptersOnly(t *testing.T) {
	p := tinyPolicy(t)
	base := map[string][]float32{}
	for _, tn := range p.Tensors() {
		base[tn.Name] = append([]float32(nil), tn.Data...)
	}
	c := LossConfig{ClipLow: 0.2, ClipHigh: 0.2, KLCoef: 0.05, KLEstimator: "k3"}
	u, err := NewUpdater(p, 4, p.Trainable(true), c, optim.DefaultAdam())
	if err != nil {
		t.Fatal(err)
	}
	st, err := u.Update(rowsFor(t, p, 10), 2, 2, 1e-2, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if st.Updates != 4 {
		t.Fatalf("updates %d, want 2 epochs × 2 minibatches", st.Updates)
	}
	adapters := map[string]bool{}
	for _, n := range p.Trainable(true) {
		adapters[n] = true
	}
	moved := 0
	for _, tn := range p.Tensors() {
		same := true
		for i, v := range tn.Data {
			if v != base[tn.Name][i] {
				same = false
			}
		}
		if !adapters[tn.Name] && !same {
			t.Errorf("frozen %s changed", tn.Name)
		}
		if adapters[tn.Name] && !same {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no adapter moved")
	}
}

// A minibatch whose gradient is not finite is refused: no weight changes.
func TestUpdateRefusesNonFiniteGradients(t *testing.T) {
	p := tinyPolicy(t)
	rows := rowsFor(t, p, 4)
	rows[1].Obs = append([]float32(nil), rows[1].Obs...)
	rows[1].Obs[0] = float32(math.Inf(1))
	before := map[string][]float32{}
	for _, tn := range p.Tensors() {
		before[tn.Name] = append([]float32(nil), tn.Data...)
	}
	u, err := NewUpdater(p, 4, p.Trainable(true), LossConfig{ClipLow: 0.2, ClipHigh: 0.2, KLCoef: 0.1, KLEstimator: "k3"}, optim.DefaultAdam())
	if err != nil {
		t.Fatal(err)
	}
	st, err := u.Update(rows, 1, 1, 1e-2, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped != 1 || st.Updates != 0 {
		t.Fatalf("updates %d skipped %d, want the one minibatch refused", st.Updates, st.Skipped)
	}
	for _, tn := range p.Tensors() {
		for i, v := range tn.Data {
			if v != before[tn.Name][i] {
				t.Fatalf("%s changed after a refused update", tn.Name)
			}
		}
	}
}
