package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/rundir"
)

// BenchmarkSoakKillResume is the kill-and-resume soak: a run is killed with
// SIGKILL 50 times (SOAK_KILLS) at random points — while the training set is
// built, while a checkpoint is being saved, a few steps into an attempt — with
// an occasional SIGTERM between, resumed after each, and must end bit-exact
// with an uninterrupted run of the same config: every metric of every step,
// the sampled trajectories, the test results and the final weights. It takes
// minutes, so it is a benchmark, outside the default test run:
//
//	go test ./cmd/pixelis -run '^$' -bench SoakKillResume -benchtime 1x -timeout 60m
//
// SOAK_SEED seeds the choice of kill points (their timing follows the machine);
// the seed used is logged.
func BenchmarkSoakKillResume(b *testing.B) {
	for range b.N {
		soak(b)
	}
}

// soakArgs is the soak's run: the smoke pipeline made longer, with a training
// set that takes a few seconds to build and a checkpoint after every step.
var soakArgs = []string{"--no-tui", "--config", "smoke", "--set", "data.train_tasks=4000", "--set", "sft.steps=150",
	"--set", "rft.steps=60", "--set", "checkpoint.every=1", "--set", "run.workers=2"}

// soakOutput is a bytes.Buffer a running process and the test share.
type soakOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *soakOutput) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *soakOutput) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func soak(b *testing.B) {
	kills := 50
	if n, err := strconv.Atoi(os.Getenv("SOAK_KILLS")); err == nil && n > 0 {
		kills = n
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("SOAK_SEED"), 10, 64); err == nil {
		seed = s
	}
	b.Logf("SOAK_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	tmp := b.TempDir()
	bin := filepath.Join(tmp, "pixelis")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	start := time.Now()
	whole := filepath.Join(tmp, "whole")
	if out, err := exec.Command(bin, append([]string{"run", "--run-dir", whole}, soakArgs...)...).CombinedOutput(); err != nil {
		b.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	wholeTime := time.Since(start)
	build := buildTime(b, whole)

	dir := filepath.Join(tmp, "killed")
	metrics := filepath.Join(dir, "metrics.jsonl")
	k := &soakKiller{b: b, rng: rng, dir: dir, metrics: metrics, build: build, counts: map[string]int{}}
	counts := k.counts
	start = time.Now()
	for counts["kill"] < kills {
		if _, err := os.Stat(filepath.Join(dir, "final_eval.json")); err == nil {
			break // finished before every kill was spent
		}
		args := append([]string{"run", "--run-dir", dir}, soakArgs...)
		if _, err := os.Stat(filepath.Join(dir, "run.json")); err == nil {
			args = []string{"resume", dir, "--no-tui"}
		}
		k.attempts++
		k.attempt(bin, args)
	}
	if _, err := os.Stat(filepath.Join(dir, "final_eval.json")); err != nil {
		if out, err := exec.Command(bin, "resume", dir, "--no-tui").CombinedOutput(); err != nil {
			b.Fatalf("final resume: %v\n%s", err, out)
		}
	}
	soakTime := time.Since(start)
	diffs := countRunDiffs(b, whole, dir)
	b.ReportMetric(float64(counts["kill"]), "kills")
	b.ReportMetric(float64(k.terms), "sigterms")
	b.ReportMetric(float64(k.attempts), "attempts")
	b.ReportMetric(float64(diffs), "diffs")
	b.Logf("%d SIGKILLs (%d during the data build, %d during a checkpoint save, %d elsewhere in a step; aimed: %d at the build or an attempt's start, %d at a save, %d a few steps in) and %d SIGTERMs over %d attempts in %v (uninterrupted run %v, its data build %v); %d differences",
		counts["kill"], counts["during the data build"], counts["during a save"], counts["elsewhere"], counts["build"], counts["save"], counts["steps"],
		k.terms, k.attempts, soakTime.Round(time.Second), wholeTime.Round(time.Second), build.Round(time.Millisecond), diffs)
	if counts["kill"] < kills {
		b.Errorf("the run finished after %d kills of %d", counts["kill"], kills)
	}
	if diffs > 0 {
		b.Fatalf("the resumed run differs from the uninterrupted one in %d places", diffs)
	}
}

// soakKiller runs the soak's attempts on one run directory, each killed at a point chosen at
// random, and counts where the kills landed.
type soakKiller struct {
	b               *testing.B
	rng             *rand.Rand
	dir, metrics    string
	build           time.Duration // the uninterrupted run's data build
	counts          map[string]int
	attempts, terms int
}

// attempt runs pixelis with args until it finishes or is killed (or sent SIGTERM) where the mode
// drawn for it aims.
func (k *soakKiller) attempt(bin string, args []string) {
	var out soakOutput
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		k.b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	before := countLines(k.metrics)
	mode := []string{"build", "build", "save", "save", "steps", "term"}[k.rng.IntN(6)]
	if mode == "term" && k.rng.IntN(2) == 0 {
		mode = "steps" // SIGTERM in one attempt of twelve
	}
	ready := k.readyFunc(mode, &out, before)
	killed := false
wait:
	for {
		select {
		case err := <-done:
			if err != nil {
				k.b.Fatalf("attempt %d (%s) failed: %v\n%s", k.attempts, strings.Join(args, " "), err, out.String())
			}
			break wait
		case <-time.After(time.Millisecond):
			if !ready() {
				continue
			}
			if mode == "term" {
				cmd.Process.Signal(syscall.SIGTERM)
				if err := <-done; err != nil {
					k.b.Fatalf("attempt %d: SIGTERM: %v\n%s", k.attempts, err, out.String())
				}
				k.terms++
				break wait
			}
			// Where the kill lands, as far as the files and the output tell.
			o := out.String()
			building := strings.Contains(o, "building the training set") && !strings.Contains(o, " pairs from ")
			inSave := saving(filepath.Join(k.dir, "checkpoints"))
			cmd.Process.Kill()
			if err := <-done; err != nil { // nil: it finished before the signal
				killed = true
				switch {
				case building:
					k.counts["during the data build"]++
				case inSave:
					k.counts["during a save"]++
				default:
					k.counts["elsewhere"]++
				}
			}
			break wait
		}
	}
	if killed {
		k.counts["kill"]++
		k.counts[mode]++
	}
}

// readyFunc reports when an attempt reached the point where mode kills it; before is the number
// of metrics lines when the attempt started.
func (k *soakKiller) readyFunc(mode string, out *soakOutput, before int) func() bool {
	var ready func() bool
	switch mode {
	case "build": // a random moment of building the training set (in RFT, of the attempt's start)
		frac := k.rng.Float64()
		var since time.Time
		var delay time.Duration
		ready = func() bool {
			if since.IsZero() {
				switch o := out.String(); {
				case strings.Contains(o, "building the training set"):
					since, delay = time.Now(), time.Duration(frac*float64(k.build))
				case strings.Contains(o, "RFT resumed"):
					since, delay = time.Now(), time.Duration(frac*float64(300*time.Millisecond))
				}
			}
			return !since.IsZero() && time.Since(since) >= delay
		}
	case "save": // as soon as a checkpoint is seen half written, renamed or pointed at
		ready = func() bool { return countLines(k.metrics) > before && saving(filepath.Join(k.dir, "checkpoints")) }
	default: // a few recorded steps into the attempt, then a moment more
		steps, delay := 1+k.rng.IntN(5), time.Duration(k.rng.IntN(60))*time.Millisecond
		var since time.Time
		ready = func() bool {
			if since.IsZero() && countLines(k.metrics) >= before+steps {
				since = time.Now()
			}
			return !since.IsZero() && time.Since(since) >= delay
		}
	}
	return ready
}

// buildTime is how long the run in runDir took to build its training set.
func buildTime(b *testing.B, runDir string) time.Duration {
	data, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	var from, to time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			Time    time.Time `json:"time"`
			Message string    `json:"message"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch {
		case strings.Contains(e.Message, "building the training set") && from.IsZero():
			from = e.Time
		case strings.Contains(e.Message, " pairs from ") && to.IsZero():
			to = e.Time
		}
	}
	if from.IsZero() || to.Before(from) {
		b.Fatalf("%s: no data build in events.jsonl", runDir)
	}
	return to.Sub(from)
}

// saving reports whether a checkpoint save is in flight in root: a temporary
// directory, an old copy moved aside or a new latest pointer not yet renamed.
func saving(root string) bool {
	es, err := os.ReadDir(root)
	if err != nil {
		return false
	}
	for _, e := range es {
		if n := e.Name(); strings.HasPrefix(n, ".tmp-") || strings.HasPrefix(n, ".prev-") || strings.HasPrefix(n, ".latest-") {
			return true
		}
	}
	return false
}

// countRunDiffs counts the differences between two run directories that must be
// bit-exact: metrics of every step (wall-clock ones aside), the steps of the
// sampled trajectories, final_eval.json's scores and the final checkpoints'
// weights. It logs the first few.
func countRunDiffs(b *testing.B, want, got string) int {
	diffs := 0
	report := func(format string, args ...any) {
		if diffs < 10 {
			b.Logf(format, args...)
		}
		diffs++
	}
	wm, gm := readMetrics(b, want), readMetrics(b, got)
	if len(wm) != len(gm) {
		report("%d steps recorded, uninterrupted %d", len(gm), len(wm))
	}
	for step, w := range wm {
		for k, v := range w {
			if fmt.Sprint(gm[step][k]) != fmt.Sprint(v) {
				report("step %d %s = %v, uninterrupted %v", step, k, gm[step][k], v)
			}
		}
	}
	if a, c := sampleLines(b, want), sampleLines(b, got); !slices.Equal(a, c) {
		report("samples.jsonl: %d lines, uninterrupted %d", len(c), len(a))
	}
	var fw, fg rollout.FinalEval
	readJSON(b, filepath.Join(want, "final_eval.json"), &fw)
	readJSON(b, filepath.Join(got, "final_eval.json"), &fg)
	fw.Time, fg.Time = time.Time{}, time.Time{}
	if a, c := mustJSON(b, fw), mustJSON(b, fg); a != c {
		report("final_eval.json differs:\n%s\nuninterrupted:\n%s", c, a)
	}
	for _, name := range []string{rundir.SFTFinal, rundir.RFTFinal} {
		lw, err := ckpt.Load(filepath.Join(want, "checkpoints", name))
		if err != nil {
			b.Fatal(err)
		}
		lg, err := ckpt.Load(filepath.Join(got, "checkpoints", name))
		if err != nil {
			report("%s: %v", name, err)
			continue
		}
		for file, ts := range lw.Tensors {
			gs := lg.Tensors[file]
			if len(gs) != len(ts) {
				report("%s/%s: %d tensors, uninterrupted %d", name, file, len(gs), len(ts))
				continue
			}
			for i, tn := range ts {
				if !sameBits(tn.Data, gs[i].Data) || !bytes.Equal(tn.Raw, gs[i].Raw) {
					report("%s/%s: tensor %s differs", name, file, tn.Name)
				}
			}
		}
	}
	return diffs
}

func sameBits(a, c []float32) bool {
	if len(a) != len(c) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(c[i]) {
			return false
		}
	}
	return true
}

// sampleLines is samples.jsonl without its wall-clock fields.
func sampleLines(b *testing.B, runDir string) []string {
	data, err := os.ReadFile(filepath.Join(runDir, "samples.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func readJSON(b *testing.B, path string, v any) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
}

func mustJSON(b *testing.B, v any) string {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}
