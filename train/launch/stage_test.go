package launch_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

var allComponents = []string{"final", "coherence", "curiosity", "cost"}

// curriculumRun runs the test trainer to its end under the test curriculum
// and returns its metrics by step.
func curriculumRun(t *testing.T, args ...string) (string, map[int]map[string]float64) {
	t.Helper()
	dir := t.TempDir()
	spec := launch.Spec{Curriculum: curriculumConfig(t, "testdata/curriculum.toml")}
	l := launchChild(t, dir, spec, append([]string{"--components", strings.Join(allComponents, ","), "--steps", "90"}, args...)...)
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	return dir, metrics(dir)
}

// checkTotals holds every step's logged reward/total to the sum of its raw
// components weighted by the weights metrics.jsonl records for it.
func checkTotals(t *testing.T, m map[int]map[string]float64) {
	t.Helper()
	for step, p := range m {
		if _, ok := p["reward/total"]; !ok {
			continue
		}
		sum := 0.0
		for _, c := range allComponents {
			w, ok := p["curriculum/weight/"+c]
			if !ok {
				t.Fatalf("step %d records no weight of %s: %v", step, c, p)
			}
			sum += w * p["reward/"+c+"/raw"]
		}
		if math.Abs(sum-p["reward/total"]) > 1e-9 {
			t.Errorf("step %d: Σ weight·raw = %v with the recorded weights, the trainer logged reward/total %v", step, sum, p["reward/total"])
		}
	}
}

// stageSteps is the first step each stage index is recorded at.
func stageSteps(m map[int]map[string]float64) map[int]int {
	first := map[int]int{}
	for step, p := range m {
		st, ok := p["curriculum/stage"]
		if !ok {
			continue
		}
		if f, seen := first[int(st)]; !seen || step < f {
			first[int(st)] = step
		}
	}
	return first
}

// A stage decided at step N is sent to apply from N+1; under lockstep the
// trainer has not begun N+1 when it arrives, takes it there and says so;
// metrics.jsonl records for each step the weights it ran with, so each
// step's total is its weighted components.
func TestStageAppliesFromTheStepAfterItsDecision(t *testing.T) {
	dir, m := curriculumRun(t, "--step-time", "0")
	adv := stageEvents(t, dir)
	if len(adv) != 2 {
		t.Fatalf("stage advances %v, want 2", adv)
	}
	first := stageSteps(m)
	for i, step := range adv {
		if first[i+1] != step+1 {
			t.Errorf("stage %d decided at step %d is recorded from step %d, want %d", i+2, step, first[i+1], step+1)
		}
		took := fmt.Sprintf("the trainer took stage %d from step %d", i+2, step+1)
		if !hasEvent(dir, telemetry.EventCommand, took) {
			t.Errorf("no event %q", took)
		}
	}
	if w := m[adv[0]]["curriculum/weight/coherence"]; w != 0 {
		t.Errorf("the deciding step %d records coherence weight %v: it ran with stage 1's 0", adv[0], w)
	}
	checkTotals(t, m)
}

// A trainer that changes weights only at a generation batch (every 4th
// step) applies a stage later than its earliest step, and its ack and
// metrics say when: the files hold the weights each step used.
func TestStageAtTheTrainersNextChance(t *testing.T) {
	dir, m := curriculumRun(t, "--step-time", "0", "--apply-every", "4")
	adv := stageEvents(t, dir)
	first := stageSteps(m)
	for i, step := range adv {
		want := step + 1
		for (want-1)%4 != 0 {
			want++
		}
		if first[i+1] != want {
			t.Errorf("stage %d decided at step %d is recorded from step %d, want %d (the next generation batch)", i+2, step, first[i+1], want)
		}
		if !hasEvent(dir, telemetry.EventCommand, fmt.Sprintf("the trainer took stage %d from step %d", i+2, want)) {
			t.Errorf("no ack of stage %d from step %d", i+2, want)
		}
	}
	checkTotals(t, m)
}

// A version-1 trainer is still taken: its stage is recorded from the first
// step whose metrics follow its ack, which is the step it first ran with it.
func TestVersion1TrainerIsTaken(t *testing.T) {
	dir, m := curriculumRun(t, "--step-time", "0.005")
	if len(stageEvents(t, dir)) != 2 {
		t.Fatal("the stages did not advance")
	}
	if b := status(t, dir); b.State != telemetry.StateDone {
		t.Errorf("state %s", b.State)
	}
	checkTotals(t, m)
}

// The same seed gives the same metrics however fast either side runs: the
// trainer flat out, and slowed to a step every 20 ms.
func TestStagesDoNotDependOnTiming(t *testing.T) {
	_, fast := curriculumRun(t, "--step-time", "0", "--seed", "7")
	_, slow := curriculumRun(t, "--step-time", "0.02", "--seed", "7")
	if len(fast) != len(slow) {
		t.Fatalf("%d steps against %d", len(fast), len(slow))
	}
	for step, p := range fast {
		for k, v := range p {
			if slow[step][k] != v {
				t.Fatalf("step %d: %s = %v flat out, %v slowed", step, k, v, slow[step][k])
			}
		}
	}
}

// stageEvents are the steps of the run's stage advances, in order.
func stageEvents(t *testing.T, dir string) []int {
	var out []int
	for _, e := range events(dir) {
		if e.Kind == telemetry.EventStageAdvance {
			out = append(out, e.Step)
		}
	}
	return out
}

func hasEvent(dir, kind, msg string) bool {
	for _, e := range events(dir) {
		if e.Kind == kind && strings.Contains(e.Message, msg) {
			return true
		}
	}
	return false
}

// A version-2 ack of a stage without from_step is taken as naming the
// earliest step, and said.
func TestStageAckWithoutStepIsSaid(t *testing.T) {
	dir, m := curriculumRun(t, "--step-time", "0", "--ack-without-step")
	adv := stageEvents(t, dir)
	if len(adv) == 0 {
		t.Fatal("no stage advance")
	}
	want := fmt.Sprintf("without from_step: taken as step %d", adv[0]+1)
	if !hasEvent(dir, telemetry.EventWarning, want) {
		t.Errorf("no warning %q", want)
	}
	if first := stageSteps(m)[1]; first != adv[0]+1 {
		t.Errorf("stage 2 recorded from step %d, want %d", first, adv[0]+1)
	}
}
