package launch_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

func curriculumConfig(t *testing.T, path string) *configs.Config {
	t.Helper()
	cfg, err := configs.Resolve(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The reward curriculum runs on the trainer's metrics: its KPIs are the
// moving averages of what the trainer logged, the stages advance on them,
// and each new stage goes to the trainer, which acknowledges it.
func TestCurriculumOnTrainerMetrics(t *testing.T) {
	dir := t.TempDir()
	spec := launch.Spec{Curriculum: curriculumConfig(t, "testdata/curriculum.toml")}
	l := launchChild(t, dir, spec, "--components", "final,coherence,curiosity,cost", "--steps", "150", "--step-time", "0")
	adv := l.waitEvent(t, telemetry.EventStageAdvance, "stage 1→2")
	l.waitEvent(t, telemetry.EventCommand, "the trainer took stage 2")
	l.waitEvent(t, telemetry.EventStageAdvance, "stage 2→3")
	l.waitEvent(t, telemetry.EventCommand, "the trainer took stage 3")
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	m := metrics(dir)
	// success_rate_ma5 at the advance is the mean of the last 5 steps' successes/episodes the trainer sent.
	sum := 0.0
	for s := adv.Step - 4; s <= adv.Step; s++ {
		sum += m[s]["successes"] / m[s]["episodes"]
	}
	got := m[adv.Step]["kpi/success_rate_ma5"]
	if math.Abs(got-sum/5) > 1e-12 || got <= 0.5 {
		t.Errorf("kpi/success_rate_ma5 at step %d = %v, the trainer's last 5 success rates average %v", adv.Step, got, sum/5)
	}
	if w := m[adv.Step+1]["curriculum/weight/coherence"]; w != 0.2 {
		t.Errorf("coherence weight after the advance %v, want 0.2", w)
	}
	st := status(t, dir)
	if st.Curriculum.Current != 2 || len(st.Curriculum.Stages) != 3 || len(st.Curriculum.History) != 2 {
		t.Errorf("curriculum in status.json: %+v", st.Curriculum)
	}
}

// A curriculum that weighs a component the trainer never declared refuses
// it at the handshake, naming the component.
func TestCurriculumRefusesUndeclaredComponent(t *testing.T) {
	dir := t.TempDir()
	spec := launch.Spec{Curriculum: curriculumConfig(t, "testdata/curriculum.toml")}
	l := launchChild(t, dir, spec, "--components", "final,cost")
	err := l.wait(t)
	var r *launch.RefusedError
	if !errors.As(err, &r) || !strings.Contains(r.Reason, `"coherence"`) {
		t.Fatalf("Run = %v, want refused naming coherence", err)
	}
}
