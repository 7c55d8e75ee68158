package steer

import (
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/curriculum"
	"github.com/pixelis/pixelis/train/setup"
)

// curricula are the real [curriculum] sections the stream tests run: the
// default config's and the rollback one of these tests.
func curricula(t *testing.T) map[string]*configs.Config {
	return map[string]*configs.Config{"default": configs.Default(), "rollback": loadConfig(t, rollbackCurriculum)}
}

var fullDeclaration = Declaration{
	Components: []string{"final", "coherence", "curiosity", "penalty", "cost"},
	Reports:    []string{ReportEpisodes, ReportSuccesses, ReportTotal},
}

// builtInStages runs the stream through the built-in GRPO trainer's
// curriculum logic, line for line as train/rft.go's stepOnce does it: the
// tracker observes the step's batch means, samples grow by the step's
// episodes, and at step % eval_every == 0 the manager checks the KPIs.
// It returns the stage after every step and every decision.
func builtInStages(t *testing.T, cfg *configs.Config, stream []stepReport) ([]int, []curriculum.Decision, []map[string]float64) {
	cur, err := curriculum.NewManager(setup.RewardCurriculumConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	kpi, err := curriculum.NewTracker(setup.TrackerConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	var stages []int
	var decisions []curriculum.Decision
	var kpiSeq []map[string]float64
	samples := 0
	for _, r := range stream {
		samples += r.episodes
		if err := kpi.Observe(r.batch()); err != nil {
			t.Fatal(err)
		}
		kpis := kpi.KPIs()
		if r.step%cfg.Curriculum.EvalEvery == 0 {
			decisions = append(decisions, cur.Check(r.step, samples, kpis)...)
		}
		stages = append(stages, cur.Stage())
		kpiSeq = append(kpiSeq, kpis)
	}
	return stages, decisions, kpiSeq
}

// The same metric stream gives the same stages, decisions (with their
// reasons) and KPIs through the built-in trainer's logic and through a
// Steerer fed the child's messages.
func TestSameStagesAsTheBuiltInTrainer(t *testing.T) {
	for name, cfg := range curricula(t) {
		for seed := range uint64(4) {
			stream := driftingStream(rand.New(rand.NewPCG(seed, 7)), 1, 600)
			wantStages, wantDecisions, wantKPIs := builtInStages(t, cfg, stream)
			s := newSteerer(t, cfg, fullDeclaration)
			var decisions []curriculum.Decision
			for i, r := range stream {
				u := observe(t, s, r.step, r.metrics())
				decisions = append(decisions, u.Decisions...)
				if got := s.Current().Index; got != wantStages[i] {
					t.Fatalf("%s seed %d step %d: stage %d, built-in %d", name, seed, r.step, got, wantStages[i])
				}
				if !maps.Equal(u.KPIs, wantKPIs[i]) {
					t.Fatalf("%s seed %d step %d: KPIs %v, built-in %v", name, seed, r.step, u.KPIs, wantKPIs[i])
				}
			}
			if !reflect.DeepEqual(decisions, wantDecisions) {
				t.Fatalf("%s seed %d: decisions\n%+v\nbuilt-in\n%+v", name, seed, decisions, wantDecisions)
			}
			if len(wantDecisions) < 2 {
				t.Fatalf("%s seed %d: the stream made %d decisions; it should exercise the curriculum", name, seed, len(wantDecisions))
			}
			if !hasKind(wantDecisions, curriculum.KindRollback) {
				t.Fatalf("%s seed %d: no rollback in %+v", name, seed, wantDecisions)
			}
		}
	}
}

func hasKind(ds []curriculum.Decision, kind string) bool {
	for _, d := range ds {
		if d.Kind == kind {
			return true
		}
	}
	return false
}

// Saving at a checkpoint, restoring into a new Steerer from the run
// directory and feeding the steps after it gives what the uninterrupted
// Steerer gave at every later step, and the same final state — for
// checkpoints at every 37th step, through advances and rollbacks.
func TestResumeEqualsUninterrupted(t *testing.T) {
	for name, cfg := range curricula(t) {
		stream := driftingStream(rand.New(rand.NewPCG(3, 7)), 201, 600) // a child whose RL steps start at 201
		whole := newSteerer(t, cfg, fullDeclaration)
		var updates []Update
		for _, r := range stream {
			updates = append(updates, observe(t, whole, r.step, r.metrics()))
		}
		if !hasKind(whole.cur.History(), curriculum.KindAdvance) {
			t.Fatalf("%s: no advance in the stream", name)
		}
		for cut := 0; cut < len(stream); cut += 37 {
			dir := t.TempDir()
			first := newSteerer(t, cfg, fullDeclaration)
			for _, r := range stream[:cut] {
				observe(t, first, r.step, r.metrics())
			}
			step := stream[cut].step - 1
			if err := first.SaveState(dir, step); err != nil {
				t.Fatal(err)
			}
			resumed := newSteerer(t, cfg, fullDeclaration)
			if err := resumed.Load(dir, step); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resumed.Current(), first.Current()) || !maps.Equal(resumed.Metrics(), first.Metrics()) {
				t.Fatalf("%s cut %d: restored stage %+v metrics %v, saved %+v %v", name, cut, resumed.Current(), resumed.Metrics(), first.Current(), first.Metrics())
			}
			for i, r := range stream[cut:] {
				u := observe(t, resumed, r.step, r.metrics())
				w := updates[cut+i]
				if !reflect.DeepEqual(u.Decisions, w.Decisions) || !maps.Equal(u.KPIs, w.KPIs) || !maps.Equal(u.Metrics, w.Metrics) || !reflect.DeepEqual(u.Stage, w.Stage) {
					t.Fatalf("%s cut %d step %d: resumed %+v, uninterrupted %+v", name, cut, r.step, u, w)
				}
			}
			if !reflect.DeepEqual(resumed.State(), whole.State()) || !reflect.DeepEqual(resumed.Curriculum(), whole.Curriculum()) {
				t.Fatalf("%s cut %d: final state differs", name, cut)
			}
		}
	}
}

// The state file keeps the newest checkpoints and refuses what it cannot
// restore exactly.
func TestStateFile(t *testing.T) {
	dir := t.TempDir()
	cfg := configs.Default()
	s := newSteerer(t, cfg, fullDeclaration)
	for step := 1; step <= 30; step++ {
		observe(t, s, step, stepReport{step: step, episodes: 8, successes: 4}.metrics())
		if err := s.SaveState(dir, step); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveState(dir, 29); err == nil || !strings.Contains(err.Error(), "step 30 is already counted") {
		t.Fatalf("saving behind the last step: %v", err)
	}
	other := newSteerer(t, cfg, fullDeclaration)
	if err := other.Load(dir, 20); err == nil || !strings.Contains(err.Error(), "no curriculum state for step 20") {
		t.Fatalf("loading a step no longer kept: %v", err)
	}
	if err := other.Load(dir, 25); err != nil || other.State().Progress.Last != 25 {
		t.Fatalf("load step 25: %v, last %d", err, other.State().Progress.Last)
	}
	fewer := newSteerer(t, cfg, exampleDeclaration)
	if err := fewer.Load(dir, 30); err == nil || !strings.Contains(err.Error(), "declared") {
		t.Fatalf("restoring onto another declaration: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveState(dir, 30); err == nil {
		t.Fatal("a damaged state file was overwritten")
	}
}
