package grpo

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/policy"
)

// The statistics an update reports equal their formulas over the rows: the
// clip ratio is the weighted share of rows whose ratio left the clip range in
// the direction of their advantage, KL and entropy are weighted means. A
// learning rate of 0 leaves the policy where rowsFor measured it, so every
// ratio is e^{shift} exactly. Checked with several chunks and with one padded
// chunk, for both KL estimators.
func TestUpdateStatsMatchFormulas(t *testing.T) {
	for _, est := range []string{"k1", "k3"} {
		p := tinyPolicy(t)
		c := LossConfig{ClipLow: 0.2, ClipHigh: 0.28, KLCoef: 0.05, KLEstimator: est}
		rows := rowsFor(t, p, 20)
		inf := policy.NewInference(p)
		logits := make([]float32, p.Config().Actions)
		var clip, kl, ent, wsum float64
		for i, r := range rows {
			rho := math.Exp([]float64{0.6, -0.5, 0.05, 0.4, -0.3}[i%5])
			w := float64(r.W)
			wsum += w
			if (r.Adv > 0 && rho > 1+c.ClipHigh) || (r.Adv < 0 && rho < 1-c.ClipLow) {
				clip += w
			}
			inf.Logits(r.Obs, 1, logits)
			lp := policy.LogSoftmax(logits)[r.Action]
			d := float64(r.Ref) - lp
			if est == "k1" {
				kl += w * -d
			} else {
				kl += w * (math.Exp(d) - d - 1)
			}
			ent += w * policy.Entropy(logits)
		}
		want := Stats{ClipRatio: clip / wsum, KL: kl / wsum, Entropy: ent / wsum}
		for _, batch := range []int{4, 32} {
			u, err := NewUpdater(p, batch, p.Trainable(true), c, optim.DefaultAdam())
			if err != nil {
				t.Fatal(err)
			}
			got, err := u.Update(rows, 1, 1, 0, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.ClipRatio-want.ClipRatio) > 1e-6 || math.Abs(got.KL-want.KL) > 1e-4 || math.Abs(got.Entropy-want.Entropy) > 1e-4 {
				t.Errorf("%s, graph batch %d: clip %.4f KL %.5f entropy %.4f, want %.4f %.5f %.4f",
					est, batch, got.ClipRatio, got.KL, got.Entropy, want.ClipRatio, want.KL, want.Entropy)
			}
		}
	}
}

// Rollouts sampled at a temperature record log-probs of softmax(logits/T). The
// update's graph computes the same distribution, so before any step every ratio
// is 1 (nothing clipped) and the KL to an identical reference is 0; a graph at
// T = 1 would see ratios away from 1 for the same rows.
func TestUpdateAtSamplingTemperature(t *testing.T) {
	p := tinyPolicy(t)
	const T = 0.6
	rows := rowsFor(t, p, 24)
	inf := policy.NewInference(p)
	logits := make([]float32, p.Config().Actions)
	for i := range rows {
		inf.Logits(rows[i].Obs, 1, logits)
		lp := float32(policy.TemperedLogSoftmax(logits, T)[rows[i].Action])
		rows[i].Old, rows[i].Ref = lp, lp
	}
	clipAt := func(temp float64) Stats {
		c := LossConfig{ClipLow: 0.2, ClipHigh: 0.28, KLCoef: 0.05, KLEstimator: "k3", Temperature: temp}
		u, err := NewUpdater(p, 8, p.Trainable(true), c, optim.DefaultAdam())
		if err != nil {
			t.Fatal(err)
		}
		st, err := u.Update(rows, 1, 1, 0, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := clipAt(T); st.ClipRatio != 0 || math.Abs(st.KL) > 1e-6 {
		t.Errorf("graph at T=%v: clip ratio %v, KL %v; want 0 and 0", T, st.ClipRatio, st.KL)
	}
	if st := clipAt(1); st.ClipRatio == 0 {
		t.Errorf("graph at T=1 on rows sampled at T=%v clipped nothing; the test cannot tell the temperatures apart", T)
	}
}
