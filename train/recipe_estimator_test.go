package train

import (
	"context"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/footprint"
	"github.com/pixelis/pixelis/train/grpo"
)

// The recipe of docs/architecture.md, "An advantage estimator": an estimator
// added through grpo's table alone (grpo.RegisterEstimator, what a row of
// train/grpo/estimator.go does) is a value of rft.estimator that configs
// accepts (a slip is refused with the list), and a run trains with the
// advantages it computes; without a critic, the memory estimate has none.
func TestRecipeEstimator(t *testing.T) {
	unregister, err := grpo.RegisterEstimator(grpo.Estimator{Name: "constant", Doc: "Â_t = 0.5 on every action",
		Estimate: func(in grpo.Input) (grpo.Advantage, error) {
			a := grpo.Advantage{Steps: make([][]float64, len(in.Steps)), Returns: make([][]float64, len(in.Steps))}
			for i, r := range in.Steps {
				a.Steps[i] = make([]float64, len(r))
				for t := range r {
					a.Steps[i][t] = 0.5
				}
				a.Returns[i] = a.Steps[i]
			}
			return a, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unregister)

	if _, err := configs.Resolve("smoke", []string{"rft.estimator=constnt"}); err == nil || !strings.Contains(err.Error(), `"constant"`) {
		t.Errorf("a slip of the new estimator's name: %v", err)
	}
	cfg := smoke(t, "rft.estimator=constant")
	fm, err := footprint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, term := range fm.RFT().Terms {
		if strings.HasPrefix(term.What, "the critic") {
			t.Errorf("the memory estimate counts a critic for an estimator without one: %s", term.What)
		}
	}
	sink := &memSink{}
	r, err := New(cfg, Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT, PhaseRFT}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := sink.points[len(sink.points)-1].Metrics
	if got := last["critic/advantages/mean"]; got != 0.5 {
		t.Errorf("critic/advantages/mean = %v, want the estimator's 0.5", got)
	}
}
