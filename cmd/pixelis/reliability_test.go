package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/internal/lockfile"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train/rundir"
)

// noStack fails the test when output holds a Go stack dump.
func noStack(t *testing.T, out string) {
	t.Helper()
	if strings.Contains(out, "goroutine ") || strings.Contains(out, "panic:") || strings.Contains(out, ".go:") {
		t.Fatalf("stack dump in the output:\n%s", out)
	}
}

// Sizes far beyond the machine's memory are refused before anything is
// created, naming the key (they used to crash with an out-of-memory dump,
// exit 2, after creating the run and its control socket). A batch beyond its
// training set is refused on any machine (a billion pairs passed the estimate
// where the memory was not limited, then died of it under a limit).
func TestAbsurdSizesAreRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ set, key string }{
		{"sft.batch_size=1000000000", "sft.batch_size: must be at most 2400, the most pairs the training set can give"},
		{"policy.hidden=[100000000]", "policy.hidden: must fit in memory"},
		{"rft.group_size=1000000000", "rft.group_size: must fit in memory"},
		{"run.max_memory_gb=0.01", "run.max_memory_gb: must fit in memory"}, // even smoke needs more than 10 MiB
	} {
		runDir := filepath.Join(dir, strings.NewReplacer("=", "_", "[", "", "]", "").Replace(c.set))
		code, out, errOut := run(t, "run", "--no-tui", "--config", "smoke", "--run-dir", runDir, "--set", c.set)
		if code != exitBadUsage || !strings.Contains(errOut, c.key) {
			t.Errorf("%s: exit %d\n%s%s", c.set, code, out, errOut)
		}
		noStack(t, out+errOut)
		if _, err := os.Stat(runDir); err == nil {
			t.Errorf("%s: the refused run created %s", c.set, runDir)
		}
	}
	// eval and analyze check their own sizes.
	code, _, errOut := run(t, "eval", "--config", "smoke", "--ckpt", filepath.Join(dir, "none"), "--samples", "100000000")
	if code != exitBadUsage || !strings.Contains(errOut, "--samples: must fit in memory") {
		t.Errorf("eval --samples: exit %d: %s", code, errOut)
	}
}

// A panic in a worker goroutine of a run ends the command with exit code 1 and
// one line naming the crash log, which holds the stack; the run's files record
// the failure.
func TestCrashExitsOneWithoutStack(t *testing.T) {
	defer faults.Set(func(_ context.Context, point string) {
		if point == faults.RolloutWorker {
			panic("injected fault")
		}
	})()
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--set", "run.workers=2", "--run-dir", dir)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	log := filepath.Join(dir, CrashFile)
	if want := "pixelis sft: training crashed: internal error: injected fault; the stack is in " + log + "\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	noStack(t, out+errOut)
	b, err := os.ReadFile(log)
	if err != nil || !bytes.Contains(b, []byte("faults.At")) || !bytes.Contains(b, []byte("all goroutines:")) {
		t.Errorf("crash log: %v\n%.400s", err, b)
	}
	if !fileContains(filepath.Join(dir, "events.jsonl"), `"kind":"error"`) {
		t.Error("events.jsonl does not record the failure")
	}
}

// A run directory another process holds is refused at once with the holder's
// pid, by run and by resume, and the refused resume cuts nothing back (it used
// to truncate the run's files before failing).
func TestRunDirectoryLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--set", "checkpoint.every=5", "--run-dir", dir); code != 0 {
		t.Fatalf("sft: exit %d: %s", code, errOut)
	}
	from := filepath.Join(dir, "checkpoints", "step_000010")
	before, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	held, err := lockfile.Acquire(filepath.Join(dir, runs.LockFile), "pixelis run")
	if err != nil {
		t.Fatal(err)
	}
	pid := "pid " + strconv.Itoa(os.Getpid())
	for _, args := range [][]string{
		{"resume", dir, "--no-tui", "--from", from},
		{"rft", "--no-tui", "--config", "smoke", "--set", "checkpoint.every=5", "--run-dir", dir},
		{"run", "--no-tui", "--config", "smoke", "--run-dir", dir},
	} {
		code, _, errOut := run(t, args...)
		if code != exitBadUsage || !strings.Contains(errOut, pid) || !strings.Contains(errOut, "live process") {
			t.Errorf("%s on a held directory: exit %d: %s", args[0], code, errOut)
		}
	}
	after, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if !bytes.Equal(before, after) {
		t.Error("a refused resume changed metrics.jsonl")
	}
	held.Release()
	if code, _, errOut := run(t, "resume", dir, "--no-tui", "--from", from); code != 0 {
		t.Fatalf("resume once released: exit %d: %s", code, errOut)
	}
}

// nanCheckpoint writes a copy of src with every policy weight NaN, its manifest
// consistent with that (what a run that saved diverged weights leaves).
func nanCheckpoint(t *testing.T, src, dst string) {
	t.Helper()
	l, err := ckpt.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range l.Tensors["policy.safetensors"] {
		for i := range tn.Data {
			tn.Data[i] = float32(math.NaN())
		}
	}
	m := l.Manifest
	if _, err := ckpt.Save(filepath.Dir(dst), ckpt.Checkpoint{Name: filepath.Base(dst), Phase: m.Phase, Step: m.Step, Stage: m.Stage,
		StageIndex: m.StageIndex, Kind: ckpt.KindManual, ConfigHash: m.ConfigHash, Files: l.Tensors, State: l.State}); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint of NaN weights with a consistent manifest is refused by ckpt
// verify, resume, eval and analyze, each naming the file and the tensor.
func TestNaNCheckpointIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--run-dir", dir); code != 0 {
		t.Fatalf("sft: exit %d: %s", code, errOut)
	}
	bad := filepath.Join(dir, "checkpoints", "step_000020")
	nanCheckpoint(t, filepath.Join(dir, "checkpoints", rundir.SFTFinal), bad)
	want := `policy.safetensors: non-finite: tensor "`
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"ckpt", "verify", bad}, exitFailed},
		{[]string{"resume", dir, "--no-tui", "--from", bad}, exitFailed},
		{[]string{"eval", "--ckpt", bad}, exitBadUsage},
		{[]string{"analyze", "--model", "nan=" + bad, "--out", filepath.Join(t.TempDir(), "a")}, exitFailed},
	} {
		code, out, errOut := run(t, c.args...)
		if code != c.code || !strings.Contains(errOut, want) || !strings.Contains(errOut, "NaN or infinite") {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.args[0], code, c.code, out, errOut)
		}
	}
}

// sft.lr = 1e30 used to blow the weights up at step 1, skip every later update
// and exit 0 with ruined checkpoints; the divergence guard refuses the update
// and ends the run with exit code 1, saving nothing.
func TestDivergedRunExitsOne(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errOut := run(t, "run", "--no-tui", "--config", "smoke", "--set", "sft.lr=1e30", "--run-dir", dir)
	if code != exitFailed || !strings.Contains(errOut, "sft step 1: the run diverged") || !strings.Contains(errOut, "divergence.max_norm_growth") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoints")); err == nil {
		t.Error("the diverged run saved a checkpoint")
	}
}

// Config limits and ranges, each refused with exit code 2 and its key.
func TestConfigLimitsAndRanges(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.toml")
	if err := os.WriteFile(huge, bytes.Repeat([]byte("# padding\n"), 200_000), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
		only bool // the only problem reported
	}{
		{"file too large", []string{"config", "print", "--config", huge}, huge + ": 2000000 bytes, more than the 1 MiB a config file may have", true},
		{"--set too large", []string{"config", "print", "--set", "run.name=" + strings.Repeat("x", 70_000)}, "more than the 64 KiB one --set may have", true},
		{"rate threshold above 1", []string{"config", "print", "--set", "curriculum.stages[0].exit[0].value=1.5"},
			"curriculum.stages[0].exit[0].value: must be in [0, 1] (the range of success_rate_ma100), got 1.5", true},
		{"rate threshold below 0", []string{"config", "print", "--set", "curriculum.stages[0].exit[0].value=-0.3"},
			"curriculum.stages[0].exit[0].value: must be in [0, 1] (the range of success_rate_ma100), got -0.3", true},
		{"adapter wider than its layer", []string{"config", "print", "--set", "policy.hidden=[32]", "--set", "policy.lora_rank=1000"},
			"policy.lora_rank: must be <= 14", true},
		{"kpi window 0", []string{"config", "print", "--set", "curriculum.kpi_window=0"}, "curriculum.kpi_window: must be >= 1, got 0", true},
		{"run.dir under a file", []string{"run", "--no-tui", "--config", "smoke", "--set", "run.dir=" + filepath.Join(file, "runs")},
			"run.dir: cannot create the run directory " + filepath.Join(file, "runs"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != exitBadUsage || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, want 2 and %q\n%s%.2000s", code, c.want, out, errOut)
			}
			// One problem: the error names it on its one line (or one line after the file's).
			if lines := strings.Count(strings.TrimSpace(errOut), "\n"); c.only && lines > 2 {
				t.Errorf("%d lines for one problem:\n%s", lines+1, errOut)
			}
		})
	}
}

// analyze on a metrics.jsonl of nothing but garbage fails (it used to exit 0
// and report the run as finished).
func TestAnalyzeRefusesGarbageMetrics(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte("garbage\n\x00\x01\n{\"x\":1}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(`{"step":9,"time":"2026-11-22T11:10:54Z","kind":"phase","message":"run finished"}`+"\n"), 0o644)
	code, out, errOut := run(t, "analyze", "--run", dir, "--out", filepath.Join(t.TempDir(), "a"))
	if code != exitFailed || !strings.Contains(errOut, "none of its 3 lines") || strings.Contains(out, "finished") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}

// When the run's files can no longer be written (a full disk), the console
// says so at once, before the run ends, and the end says how much was lost.
func TestFullDiskIsReportedAtOnce(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", filepath.Join(dir, "metrics.jsonl")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--run-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	warn := strings.Index(out, "the run's files are no longer written")
	done := strings.Index(out, "SFT done")
	if warn < 0 || done < 0 || warn > done {
		t.Fatalf("the warning is not shown before the phase ends:\n%s", out)
	}
	if !strings.Contains(errOut, "metric points and") || !strings.Contains(errOut, "were not written") {
		t.Errorf("the end does not count what was lost: %s", errOut)
	}
}

// A command other than training stops on a cancelled context and says it was
// interrupted (exit 1).
func TestInterruptedCommandSaysSo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--run-dir", dir); code != 0 {
		t.Fatalf("sft: exit %d: %s", code, errOut)
	}
	var out, errOut bytes.Buffer
	ctx, cancel := contextCancelled()
	defer cancel()
	code := Main(ctx, []string{"eval", "--ckpt", filepath.Join(dir, "checkpoints", rundir.SFTFinal)}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	if code != exitFailed || errOut.String() != "pixelis eval: interrupted\n" {
		t.Fatalf("exit %d: %q", code, errOut.String())
	}
}

func contextCancelled() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}
