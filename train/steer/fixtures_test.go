package steer

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pixelis/pixelis/configs"
)

// exampleDeclaration is what the PyTorch example declares: pixelis's reward
// components and the episode counts.
var exampleDeclaration = Declaration{
	Components: []string{"final", "coherence", "curiosity", "penalty", "cost"},
	Reports:    []string{ReportEpisodes, ReportSuccesses},
}

// rollbackCurriculum is a [curriculum] section whose first advance is undone:
// short windows, a check every step, a rollback on a fall of 0.1 within 5 checks.
const rollbackCurriculum = `
[curriculum]
kpi_window = 10
min_samples = 0
eval_every = 1
rollback_metric = "success_rate_ma10"
rollback_drop = 0.1
rollback_window = 5
backoff = 2.0

[[curriculum.stages]]
name = "Goal"
weights = { final = 1.0, coherence = 0.0, curiosity = 0.0 }

[[curriculum.stages.exit]]
kind = "threshold"
metric = "success_rate_ma10"
op = ">"
value = 0.6

[[curriculum.stages]]
name = "Coherence"
weights = { final = 1.0, coherence = 0.5, curiosity = 0.0 }

[[curriculum.stages.exit]]
kind = "patience"
metric = "combined_score_ma10"
op = ">"
value = 0.9
n = 3

[[curriculum.stages]]
name = "Curiosity"
weights = { final = 1.0, coherence = 0.5, curiosity = 0.2 }
`

// loadConfig reads a TOML text over the defaults, as `--config FILE` does.
func loadConfig(t testing.TB, text string) *configs.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// stepReport is one step as a child reports it.
type stepReport struct {
	step                int
	episodes, successes int
	final, coherence    float64
	total               float64
}

// metrics is the report under the launch channel's names, with unrelated
// metrics beside them as a real trainer logs.
func (r stepReport) metrics() map[string]float64 {
	return map[string]float64{
		ReportEpisodes: float64(r.episodes), ReportSuccesses: float64(r.successes),
		"reward/final/raw": r.final, "reward/coherence/raw": r.coherence, ReportTotal: r.total,
		"reward/penalty/raw": -0.05, "policy/loss": 0.3, "policy/kl": 0.01,
	}
}

// batch is the report as the built-in trainer's rolledOut.kpis computes it
// from its episodes (train/rft_metrics.go).
func (r stepReport) batch() map[string]float64 {
	return map[string]float64{"success_rate": float64(r.successes) / float64(r.episodes),
		"reward_final": r.final, "coherence": r.coherence, "combined_score": r.total}
}

// driftingStream is a training run's worth of steps from first on, for both
// curricula of these tests: a success rate of 0.45 that collapses to 0 just
// after the default curriculum's steps guard advances (a rollback there),
// then short bursts of success followed by failure (advances undone under
// kpi_window 10), then climbs to 0.98; a coherence that rises and levels
// off; a total reward that follows both; noise from rng.
func driftingStream(rng *rand.Rand, first, n int) []stepReport {
	out := make([]stepReport, n)
	for i := range out {
		var p float64
		switch {
		case i < 100:
			p = 0.45
		case i < 130:
			p = 0
		case i < 250:
			// 20 steps at 0.5, 3 at 1, 10 at 0: success_rate_ma10 passes 0.6
			// on the ones and falls below 0.55 three steps later.
			if c := (i - 130) % 33; c < 20 {
				p = 0.5
			} else if c < 23 {
				p = 1
			} else {
				p = 0
			}
		default:
			p = min(0.98, 0.5+float64(i-250)/200)
		}
		eps := 16 + rng.IntN(49)
		succ := 0
		for range eps {
			if rng.Float64() < p {
				succ++
			}
		}
		coh := min(0.5, float64(i)/400) + 0.02*rng.NormFloat64()
		final := float64(succ) / float64(eps)
		out[i] = stepReport{step: first + i, episodes: eps, successes: succ, final: final, coherence: coh,
			total: final + 0.5*coh + 0.05*rng.NormFloat64()}
	}
	return out
}
