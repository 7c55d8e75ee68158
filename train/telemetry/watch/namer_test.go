package watch

import (
	"maps"
	"testing"
)

// TRL 0.19 logs both completion_length and completions/mean_length: the newer
// name, written first in mapping.toml, keeps the pixelis name whichever arrives
// first, in one record or across records.
func TestNamerPrecedence(t *testing.T) {
	both := map[string]float64{"completion_length": 250, "completions/mean_length": 256}
	for i := range 50 { // map order varies from run to run
		n := DefaultMapping().Namer(NamerOptions{Trainer: "trl", HFLogs: true})
		if got := n.Map(both)["behavior/traj_len_mean"]; got != 256 {
			t.Fatalf("try %d: traj len %v, want completions/mean_length's 256", i, got)
		}
	}
	n := DefaultMapping().Namer(NamerOptions{HFLogs: true})
	if got := n.Map(map[string]float64{"completion_length": 250}); got["behavior/traj_len_mean"] != 250 {
		t.Fatalf("the older name alone: %v", got)
	}
	if _, keep := n.Name("completions/mean_length"); !keep {
		t.Fatal("the better-ranked name did not take over")
	}
	if _, keep := n.Name("completion_length"); keep {
		t.Fatal("the worse-ranked name kept the pixelis name after the better one came")
	}
	if _, _, took := n.name("completions/mean_length"); took {
		t.Fatal("took reported twice")
	}
}

// A user file's rules rank before the embedded ones.
func TestNamerUserRulesFirst(t *testing.T) {
	m, err := ParseMapping("[trl]\n\"train/completion_length\" = \"behavior/traj_len_mean\"\n")
	if err != nil {
		t.Fatal(err)
	}
	n := m.Namer(NamerOptions{HFLogs: true})
	if got := n.Map(map[string]float64{"completion_length": 250, "completions/mean_length": 256}); got["behavior/traj_len_mean"] != 250 {
		t.Fatalf("user rule did not win: %v", got)
	}
}

func TestNamerKinds(t *testing.T) {
	for _, c := range []struct {
		name    string
		opts    NamerOptions
		records []map[string]float64
		kind    RunKind
		trainer string
	}{
		{"grpo, loss logged first", NamerOptions{}, []map[string]float64{{"train/loss": 0.1}, {"train/reward": 1, "train/rewards/f/mean": 1}}, RunRL, "trl"},
		{"sft", NamerOptions{HFLogs: true}, []map[string]float64{{"loss": 2.1, "grad_norm": 1, "learning_rate": 1e-5}, {"eval_loss": 2}}, RunSFT, "trl"},
		{"dpo", NamerOptions{HFLogs: true}, []map[string]float64{{"loss": 0.69, "rewards/chosen": 0.01, "rewards/rejected": -0.01, "rewards/margins": 0.02, "rewards/accuracies": 0.6}}, RunPreference, "trl"},
		{"kto logs a kl too", NamerOptions{HFLogs: true}, []map[string]float64{{"kl": 0.1, "loss": 0.5}, {"rewards/chosen": 0.2}}, RunPreference, "trl"},
		{"verl grpo", NamerOptions{}, []map[string]float64{{"actor/pg_loss": 0.01, "critic/score/mean": 0.5, "actor/entropy": 0.7}}, RunRL, "verl"},
		{"verl sft", NamerOptions{}, []map[string]float64{{"train/loss": 0.05, "train/lr(1e-3)": 0.002}, {"val/loss": 0.04}}, RunSFT, "verl"},
		{"nothing known", NamerOptions{}, []map[string]float64{{"custom/x": 1}}, "", ""},
	} {
		n := DefaultMapping().Namer(c.opts)
		for _, r := range c.records {
			n.Map(r)
		}
		if n.Kind() != c.kind || n.Trainer() != c.trainer {
			t.Errorf("%s: kind %q trainer %q, want %q %q", c.name, n.Kind(), n.Trainer(), c.kind, c.trainer)
		}
	}
}

func TestNamerPreferenceNames(t *testing.T) {
	n := DefaultMapping().Namer(NamerOptions{HFLogs: true})
	got := n.Map(map[string]float64{"rewards/chosen": 0.0123, "rewards/rejected": -0.0102, "rewards/margins": 0.0025,
		"rewards/accuracies": 0.625, "eval_rewards/margins": 0.003, "log_odds_ratio": -0.7, "eval_loss": 1.2})
	want := map[string]float64{"pref/chosen": 0.0123, "pref/rejected": -0.0102, "pref/margin": 0.0025, "pref/accuracy": 0.625,
		"val/pref/margin": 0.003, "pref/log_odds_ratio": -0.7, "val/loss": 1.2}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestKindRulesChecked(t *testing.T) {
	if _, err := ParseMapping("[kinds]\n\"x/*\" = \"rlhf\"\n"); err == nil {
		t.Fatal("an unknown kind accepted")
	}
	m, err := ParseMapping("[kinds]\n\"my/score\" = \"rl\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if m.KindOf("my/score") != RunRL || m.KindOf("pref/chosen") != RunPreference {
		t.Fatal("user kinds do not extend the default's")
	}
}

func BenchmarkNamerMap(b *testing.B) {
	rec := map[string]float64{"loss": 0.1, "reward": 1, "reward_std": 0.3, "rewards/a/mean": 1, "rewards/a/std": 0, "kl": 0.01,
		"completions/mean_length": 200, "learning_rate": 1e-6, "grad_norm": 0.5, "epoch": 0.1}
	n := DefaultMapping().Namer(NamerOptions{Trainer: "trl", HFLogs: true})
	for b.Loop() {
		n.Map(rec)
	}
}

// pixelis's own TensorBoard log holds reward/final/raw and, for verl's
// dashboards, critic/score/mean, which verl's rule maps to reward/final/raw: the
// run's own name keeps it, and the run reads as pixelis's.
func TestNamerOwnNameWins(t *testing.T) {
	for range 20 {
		n := DefaultMapping().Namer(NamerOptions{})
		got := n.Map(map[string]float64{"reward/final/raw": 0.883, "critic/score/mean": -0.16, "kpi/success_rate_ma100": 0.5,
			"curriculum/weight/final": 1, "reward/total": -0.16, "critic/advantages/max": 1})
		if got["reward/final/raw"] != 0.883 || n.Trainer() != "pixelis" {
			t.Fatalf("final %v, trainer %s", got["reward/final/raw"], n.Trainer())
		}
	}
	n := DefaultMapping().Namer(NamerOptions{})
	if to, keep := n.Name("custom/metric"); to != "custom/metric" || !keep {
		t.Fatalf("an unknown name: %q %v", to, keep)
	}
}
