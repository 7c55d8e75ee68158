package runs

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// commandsAt is a run's sink, its files' recorder, that sends commands once
// the run has recorded a run-wide step: they wait in the channel for the next
// step boundary, so they apply at the same step in every run.
type commandsAt struct {
	*telemetry.Recorder
	at   map[int][]telemetry.Command
	cmds chan telemetry.Command
}

func (s *commandsAt) Record(p telemetry.Point) {
	s.Recorder.Record(p)
	for _, c := range s.at[p.Step] {
		s.cmds <- c
	}
	delete(s.at, p.Step) // an evaluation's point at the same step sends nothing again
}

// forks starts the forks of the runs of a test in this process, one after
// another, as `pixelis resume` in a process of their own would.
type forks struct {
	t    *testing.T
	dirs []string
}

func (f *forks) start(p train.ForkPoint) (string, error) {
	dir, err := MakeFork(p)
	if err == nil {
		f.dirs = append(f.dirs, dir)
	}
	return dir, err
}

// runOwn trains cfg's SFT and RFT in dir as a new run, sending the commands
// of at after their steps; its forks are made with f.
func runOwn(t *testing.T, cfg *configs.Config, dir string, at map[int][]telemetry.Command, f *forks) {
	t.Helper()
	opt := train.Options{RunDir: dir, Phases: []string{train.PhaseSFT, train.PhaseRFT}}
	if err := withSink(dir, at, &opt, f, func(opt train.Options) error { return trainRun(cfg, opt) }); err != nil {
		t.Fatalf("run %s: %v", dir, err)
	}
}

// resumeFork trains a fork's run directory on as `pixelis resume` does.
func resumeFork(t *testing.T, dir string, at map[int][]telemetry.Command, f *forks) {
	t.Helper()
	info, err := rundir.ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	Place(cfg, dir)
	point, err := PlanResume(cfg, dir, info, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := point.Rewind(dir); err != nil {
		t.Fatal(err)
	}
	opt := train.Options{RunDir: dir, Phases: info.Phases, Init: info.Init, Resume: point.Checkpoint}
	if err := withSink(dir, at, &opt, f, func(opt train.Options) error { return trainRun(cfg, opt) }); err != nil {
		t.Fatalf("fork %s: %v", dir, err)
	}
}

func trainRun(cfg *configs.Config, opt train.Options) error {
	r, err := train.New(cfg, opt)
	if err != nil {
		return err
	}
	return r.Run(context.Background())
}

// withSink runs run with opt wired to dir's recorder, the commands of at
// and, when f is set, its forks.
func withSink(dir string, at map[int][]telemetry.Command, opt *train.Options, f *forks, run func(train.Options) error) error {
	rec, err := telemetry.NewRecorder(dir)
	if err != nil {
		return err
	}
	defer rec.Close()
	sink := &commandsAt{Recorder: rec, at: at, cmds: make(chan telemetry.Command, 8)}
	opt.Sink, opt.Commands = sink, sink.cmds
	if f != nil {
		opt.Fork = f.start
	}
	return run(*opt)
}

// metrics reads a run directory's metrics.jsonl by run-wide step, leaving out
// evaluations on request and what measures the wall clock.
func metrics(t *testing.T, dir string) map[int]map[string]float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, telemetry.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]map[string]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p telemetry.Point
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if p.Phase == telemetry.PhaseEval {
			continue
		}
		if out[p.Step] == nil {
			out[p.Step] = map[string]float64{}
		}
		for k, v := range p.Metrics {
			if !strings.HasPrefix(k, "perf/") && !strings.HasPrefix(k, "timing_s/") {
				out[p.Step][k] = v
			}
		}
	}
	return out
}

// sameMetrics fails unless got and want hold the same values at every step in [from, to].
func sameMetrics(t *testing.T, what string, got, want map[int]map[string]float64, from, to int) {
	t.Helper()
	for step := from; step <= to; step++ {
		if len(want[step]) == 0 || len(got[step]) != len(want[step]) {
			t.Fatalf("%s: step %d has %d metrics, want %d", what, step, len(got[step]), len(want[step]))
		}
		for name, wv := range want[step] {
			if gv, ok := got[step][name]; !ok || !(gv == wv || math.IsNaN(gv) && math.IsNaN(wv)) {
				t.Fatalf("%s: step %d %s = %v, want %v", what, step, name, gv, wv)
			}
		}
	}
}

func forkCmd(edits ...telemetry.FieldValue) telemetry.Command {
	return telemetry.Command{Kind: telemetry.CmdFork, Edits: edits}
}

// A fork with no edit is its parent step for step: its metrics.jsonl, from
// the fork step on, is the parent's (the same checkpoint, the same data and
// sampling streams), and before it holds the parent's history. The parent
// with a fork taken is the run without one. A fork's record names its
// parent, its step and its edits; a fork's edit applies at its first step,
// as an edit event; and a fork of that fork is that fork, step for step.
func TestForkIsItsParentStepForStep(t *testing.T) {
	cfg, err := configs.Resolve("smoke", []string{"run.workers=2"})
	if err != nil {
		t.Fatal(err)
	}
	sft, last := cfg.SFT.Steps, cfg.SFT.Steps+cfg.RFT.Steps
	k := sft + 2
	base := t.TempDir()
	alone := filepath.Join(base, "alone")
	runOwn(t, cfg, alone, nil, nil)
	want := metrics(t, alone)

	parent := filepath.Join(base, "parent")
	f := &forks{t: t}
	kl := cfg.RFT.KLCoef*2 + 0.05
	runOwn(t, cfg, parent, map[int][]telemetry.Command{k: {forkCmd(), forkCmd(telemetry.FieldValue{Field: "kl_coef", Value: kl})}}, f)
	sameMetrics(t, "the parent", metrics(t, parent), want, 1, last)
	if len(f.dirs) != 2 || f.dirs[0] != parent+"-fork-22" || f.dirs[1] != parent+"-fork-22-2" {
		t.Fatalf("forks %v, want %s-fork-22 and -fork-22-2", f.dirs, parent)
	}

	plain, edited := f.dirs[0], f.dirs[1]
	resumeFork(t, plain, nil, nil)
	sameMetrics(t, "the fork with no edit", metrics(t, plain), want, 1, last)
	// Paired by validation task with its parent, the fork with no edit differs by nothing.
	c, ok, err := CompareFork(plain)
	greedy, _ := c.KPI("val greedy")
	pass1, _ := c.KPI("val pass@1")
	if err != nil || !ok || c.Parent != parent || c.Step != k || len(c.Vals) != 2 || len(c.KPIs) != 2 || greedy.N != 2*cfg.RFT.ValTasks ||
		greedy.Mean != 0 || greedy.CI95 != 0 || pass1.Mean != 0 || pass1.CI95 != 0 {
		t.Fatalf("CompareFork(the fork with no edit) = %+v, %v, %v; want validations at RFT steps 3 and 6, every difference 0", c, ok, err)
	}
	if _, ok, err := CompareFork(parent); ok || err != nil {
		t.Fatalf("CompareFork(the parent): ok %v, %v; want not a fork", ok, err)
	}

	info, err := rundir.ReadInfo(edited)
	if err != nil {
		t.Fatal(err)
	}
	if fk := info.Fork; fk == nil || fk.Parent != parent || fk.Step != k || len(fk.Edits) != 1 || fk.Edits[0] != (rundir.ForkEdit{Field: "kl_coef", Value: kl}) {
		t.Fatalf("run.json's fork: %+v", info.Fork)
	}
	ff := &forks{t: t}
	resumeFork(t, edited, map[int][]telemetry.Command{k + 2: {forkCmd()}}, ff)
	got := metrics(t, edited)
	sameMetrics(t, "the edited fork before its edit", got, want, 1, k)
	if got[k+1]["policy/loss"] == want[k+1]["policy/loss"] && got[k+1]["policy/kl"] == want[k+1]["policy/kl"] {
		t.Errorf("the edited fork's step %d is its parent's: the edit did not apply", k+1)
	}
	if !eventSays(t, edited, telemetry.EventEdit, `"source":"fork"`) {
		t.Errorf("the edited fork has no edit event from the fork")
	}
	if info, _ := rundir.ReadInfo(edited); info.Fork == nil || len(info.Edits) == 0 {
		t.Errorf("the fork's run.json after it trained: %+v", info)
	}

	if len(ff.dirs) != 1 || ff.dirs[0] != edited+"-fork-24" {
		t.Fatalf("fork of the fork: %v", ff.dirs)
	}
	resumeFork(t, ff.dirs[0], nil, nil)
	sameMetrics(t, "the fork of the fork", metrics(t, ff.dirs[0]), got, 1, last)
}

// eventSays reports whether a run's events.jsonl has an event of kind whose line holds s.
func eventSays(t *testing.T, dir, kind, s string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, telemetry.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"kind":"`+kind+`"`) && strings.Contains(line, s) {
			return true
		}
	}
	return false
}
