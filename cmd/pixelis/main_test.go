package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/runs"
)

// run runs the CLI in-process and returns its exit code and output.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	return code, out.String(), errOut.String()
}

func TestUsageErrorsExitTwoWithoutStackTrace(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.jsonl")
	if err := os.WriteFile(corrupt, []byte("{\"sample_id\": 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "Usage: pixelis COMMAND"},
		{"unknown command", []string{"train"}, `unknown command "train"`},
		{"out of range", []string{"config", "print", "--set", "rft.group_size=1"}, "rft.group_size: must be >= 2, got 1"},
		{"lora rank 0", []string{"config", "print", "--set", "policy.lora_rank=0"}, "policy.lora_rank: must be >= 1, got 0"},
		{"negative loss weight", []string{"config", "print", "--set", "sft.op_weight=-1"}, "sft.op_weight: must be >= 0, got -1"},
		{"threshold out of range", []string{"config", "print", "--set", "sft.curriculum.rollback_threshold=0.5"}, "rollback_threshold: must be in [-1, 0], got 0.5"},
		{"unknown key", []string{"sft", "--set", "sft.stepz=3"}, "unknown key sft.stepz"},
		{"removed key", []string{"config", "print", "--set", "eval.greedy=false"}, "--set eval.greedy=false: removed: nothing read it; the test evaluation always reports greedy pass@1"},
		{"missing data file", []string{"sft", "--no-tui", "--run-dir", filepath.Join(dir, "r1"), "--set", "data.train_file=" + filepath.Join(dir, "none.jsonl")}, "data.train_file: open"},
		{"corrupt data file", []string{"sft", "--no-tui", "--run-dir", filepath.Join(dir, "r2"), "--set", "data.train_file=" + corrupt}, "cota line 1"},
		{"rft without sft", []string{"rft", "--no-tui", "--run-dir", filepath.Join(dir, "r3")}, "run `pixelis sft` first"},
		{"resume nothing", []string{"resume", filepath.Join(dir, "nope")}, "is not a pixelis run directory"},
		{"bad seed", []string{"sft", "--seed", "x"}, `--seed "x": must be a non-negative integer`},
		{"bad flag", []string{"sft", "--bogus"}, "flag provided but not defined: -bogus"},
		{"held-out expert without a reason", []string{"serve", "--heldout-expert", "yes"}, `--heldout-expert "yes": say why`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != exitBadUsage {
				t.Fatalf("exit %d, want 2\nstdout %s\nstderr %s", code, out, errOut)
			}
			if !strings.Contains(out+errOut, c.want) {
				t.Fatalf("output lacks %q:\n%s%s", c.want, out, errOut)
			}
			if strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, "panic") {
				t.Fatalf("stack trace in output:\n%s", errOut)
			}
		})
	}
	for _, r := range []string{"r1", "r2", "r3"} {
		if _, err := os.Stat(filepath.Join(dir, r)); err == nil {
			t.Errorf("a refused command created its run directory %s", r)
		}
	}
}

// config print writes TOML that loads back to the same config.
func TestConfigPrintRoundTrips(t *testing.T) {
	code, out, errOut := run(t, "config", "print", "--config", "smoke", "--set", "rft.lr=0.0005")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := configs.Resolve("smoke", []string{"rft.lr=0.0005"})
	if err != nil {
		t.Fatal(err)
	}
	if back.Hash() != want.Hash() {
		t.Fatal("printed config does not load back to the same config")
	}
}

// data gen writes CoTA JSONL that data show reads back.
func TestDataGenAndShow(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.jsonl")
	code, out, errOut := run(t, "data", "gen", "--n", "30", "--out", file, "--split", "val")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "wrote 30 val samples") || !strings.Contains(out, "temporal_tracking") {
		t.Fatalf("summary:\n%s", out)
	}
	code, out, errOut = run(t, "data", "show", file, "--index", "1")
	if code != 0 || !strings.Contains(out, "ANSWER") {
		t.Fatalf("exit %d, output:\n%s%s", code, out, errOut)
	}
	if code, _, _ := run(t, "data", "show", file, "--index", "30"); code != exitBadUsage {
		t.Fatalf("index past the end: exit %d, want 2", code)
	}
}

// data gen --chat writes the samples also as chat conversations and tasks,
// one line a sample, with the images they name (train/chat tests the rows).
func TestDataGenChat(t *testing.T) {
	dir := t.TempDir()
	chatDir := filepath.Join(dir, "chat")
	code, out, errOut := run(t, "data", "gen", "--config", "smoke", "--n", "6", "--out", filepath.Join(dir, "d.jsonl"), "--chat", chatDir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "wrote them as chat conversations to "+chatDir) {
		t.Fatalf("output:\n%s", out)
	}
	for _, name := range []string{"conversations.jsonl", "tasks.jsonl"} {
		b, err := os.ReadFile(filepath.Join(chatDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n != 6 {
			t.Fatalf("%s: %d lines, want 6", name, n)
		}
	}
	if imgs, _ := filepath.Glob(filepath.Join(chatDir, "images", "train-*-0.png")); len(imgs) != 6 {
		t.Fatalf("%d first views, want 6: %v", len(imgs), imgs)
	}
}

// -h on a command prints how it is called, what it does and its flags, and
// exits 0, like help.
func TestCommandHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"run", "sft", "rft", "resume", "eval", "analyze", "attach", "watch", "export", "experiment", "serve"} {
		code, out, errOut := run(t, cmd, "-h")
		u := usages[cmd]
		if code != exitOK || !strings.Contains(out, "Usage: "+u.synopsis) || !strings.Contains(out, strings.SplitN(u.about, "\n", 2)[0]) || errOut != "" {
			t.Errorf("%s -h: exit %d\n%s%s", cmd, code, out, errOut)
		}
	}
}

// writeFinishedRun makes a run directory whose default config ran sft, rft and test to the end:
// its run.json, config.toml and final_eval.json.
func writeFinishedRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"phases":["sft","rft","test"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var conf bytes.Buffer
	if err := configs.Encode(&conf, configs.Default()); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"config.toml": conf.Bytes(), "final_eval.json": []byte("{}")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The CLI's exit codes and messages: help for every command and subcommand,
// a bad flag reported once, --set errors blamed on the --set, the version.
func TestCLIMessages(t *testing.T) {
	finishedRun := writeFinishedRun(t)
	cases := []struct {
		name   string
		args   []string
		code   int
		out    []string // in stdout
		errOut []string // in stderr
		never  []string // in neither
	}{
		{"attach -h names RUN_DIR", []string{"attach", "-h"}, 0, []string{"Usage: pixelis attach RUN_DIR", "leaving the console never stops the run"}, nil, nil},
		{"ckpt inspect -h", []string{"ckpt", "inspect", "-h"}, 0, []string{"Usage: pixelis ckpt inspect PATH", "manifest"}, nil, []string{"no such file"}},
		{"ckpt verify --help", []string{"ckpt", "verify", "--help"}, 0, []string{"Usage: pixelis ckpt verify PATH"}, nil, nil},
		{"data -h", []string{"data", "-h"}, 0, []string{"Usage: pixelis data SUBCOMMAND", "gen", "show", "probe"}, nil, nil},
		{"data gen -h", []string{"data", "gen", "-h"}, 0, []string{"Usage: pixelis data gen --out FILE", "-split"}, nil, nil},
		{"ckpt -h", []string{"ckpt", "-h"}, 0, []string{"Usage: pixelis ckpt SUBCOMMAND", "inspect", "verify"}, nil, nil},
		{"config -h", []string{"config", "-h"}, 0, []string{"Usage: pixelis config SUBCOMMAND", "print"}, nil, nil},
		{"config print -h", []string{"config", "print", "-h"}, 0, []string{"Usage: pixelis config print", "-set"}, nil, nil},
		{"data alone", []string{"data"}, 2, nil, []string{"data needs a subcommand"}, nil},
		{"ckpt alone", []string{"ckpt"}, 2, nil, []string{"ckpt needs a subcommand"}, nil},
		{"ckpt bad subcommand", []string{"ckpt", "show", "x"}, 2, nil, []string{`unknown ckpt subcommand "show"`}, nil},
		{"help run", []string{"help", "run"}, 0, []string{"Usage: pixelis run [flags]", "-phases"}, nil, []string{"Commands:"}},
		{"help data", []string{"help", "data"}, 0, []string{"Usage: pixelis data SUBCOMMAND"}, nil, nil},
		{"help unknown", []string{"help", "bogus"}, 2, nil, []string{`unknown command "bogus"`}, nil},
		{"help", []string{"help"}, 0, []string{"Commands:", "watch"}, nil, nil},
		{"version", []string{"--version"}, 0, []string{"pixelis "}, nil, nil},
		{"version word", []string{"version"}, 0, []string{"pixelis "}, nil, nil},
		{"--set at fault", []string{"config", "print", "--set", "rft.lr=fast"}, 2, nil, []string{`--set rft.lr=fast: must be a number, got string "fast"`}, []string{"default (embedded)"}},
		{"--set breaking a rule", []string{"config", "print", "--set", "rft.group_size=1"}, 2, nil,
			[]string{"with --set rft.group_size=1:", "rft.group_size: must be >= 2, got 1"}, nil},
		// Commands that write no run have no --run-dir to ignore.
		{"eval has no run directory", []string{"eval", "--run-dir", "x"}, 2, nil, []string{"flag provided but not defined: -run-dir"}, nil},
		{"eval -h", []string{"eval", "-h"}, 0, []string{"-ckpt"}, nil, []string{"-run-dir"}},
		{"resume a finished run", []string{"resume", finishedRun, "--no-tui"}, 2, nil,
			[]string{"finished: its last phase is done (final_eval.json), so there is nothing to resume", "--from"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, c.code, out, errOut)
			}
			for _, w := range c.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.errOut {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			for _, w := range c.never {
				if strings.Contains(out+errOut, w) {
					t.Errorf("output has %q:\n%s%s", w, out, errOut)
				}
			}
		})
	}
	// A resume of a finished run changed nothing but the run lock it took to
	// read the run safely.
	ents, _ := os.ReadDir(finishedRun)
	var names []string
	for _, e := range ents {
		if e.Name() != runs.LockFile {
			names = append(names, e.Name())
		}
	}
	if len(names) != 3 {
		t.Errorf("the finished run's directory holds %v after the refused resume", names)
	}
}

// An unknown flag is reported once, with where to look.
func TestUnknownFlagOnce(t *testing.T) {
	code, out, errOut := run(t, "sft", "--bogus")
	if code != exitBadUsage || strings.Count(out+errOut, "flag provided but not defined: -bogus") != 1 ||
		!strings.Contains(errOut, "see 'pixelis sft -h'") || strings.Contains(out+errOut, "Usage:") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// A duration flag given a bare number, or no duration at all, names the flag
// and what it wants (it said only "parse error"), exit 2.
func TestDurationFlagsSayWhatTheyWant(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"launch", "--grace", "3", "--", "python3"}, `pixelis launch: --grace "3": want a duration with its unit, such as 3s or 3m (see 'pixelis launch -h')`},
		{[]string{"launch", "--ack-timeout=soon", "--", "python3"}, `--ack-timeout "soon": want a duration with its unit, such as 30s, 2m or 1m30s`},
		{[]string{"launch", "--grace", "-3", "--", "python3"}, `--grace "-3": want a duration with its unit, such as 30s, 2m or 1m30s`},
	} {
		code, out, errOut := run(t, c.args...)
		if code != exitBadUsage || !strings.Contains(errOut, c.want) || strings.Contains(out+errOut, "parse error") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// `ckpt verify` checks an adapter export too: a run's is ok, one holding a
// NaN is refused with the tensor named.
func TestVerifyAdapterExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errOut := run(t, "run", "--no-tui", "--config", "smoke", "--run-dir", dir); code != 0 {
		t.Fatalf("smoke run: exit %d: %s", code, errOut)
	}
	good := filepath.Join(dir, "adapters", "rft_adapters_full")
	if code, out, errOut := run(t, "ckpt", "verify", good); code != 0 || !strings.Contains(out, "ok (an adapter export") {
		t.Fatalf("verify %s: exit %d\n%s%s", good, code, out, errOut)
	}
	a, err := ckpt.ReadAdapter(good)
	if err != nil {
		t.Fatal(err)
	}
	a.Layers[0].A[0] = float32(math.NaN())
	bad := filepath.Join(t.TempDir(), "bad")
	if err := ckpt.ExportAdapter(bad, a); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "ckpt", "verify", bad); code != 1 || !strings.Contains(errOut, "lora_A.weight") {
		t.Fatalf("verify of a NaN adapter: exit %d: %s", code, errOut)
	}
}

// SFT imitates training tasks outside RFT's range only: a data file of test
// or validation tasks, or of tasks RFT is rewarded on, is refused with exit 2
// naming the file and the line, before the run directory exists.
func TestSFTRefusesHeldOutData(t *testing.T) {
	dir := t.TempDir()
	gen := func(split string) string {
		path := filepath.Join(dir, split+".jsonl")
		if code, _, errOut := run(t, "data", "gen", "--config", "smoke", "--n", "4", "--split", split, "--out", path); code != 0 {
			t.Fatalf("data gen --split %s: exit %d: %s", split, code, errOut)
		}
		return path
	}
	test, val, trainFile := gen("test"), gen("val"), gen("train")
	cases := []struct {
		name, file string
		set        []string
		want       string
	}{
		{"test split", test, nil, test + " line 1: sample test-000000 is of the test split"},
		{"val split", val, nil, val + " line 1: sample val-000000 is of the val split"},
		{"rft range", trainFile, []string{"--set", "data.train_tasks=2", "--set", "rft.task_pool=100"}, trainFile + " line 3: sample train-000002 is training task 2, in RFT's task range [2, 102)"},
		// A batch beyond what the file's 4 trajectories can give.
		{"batch beyond the file", trainFile, []string{"--set", "sft.batch_size=49"}, trainFile + ": sft.batch_size: must be at most 48, the most pairs the training set can give (data.train_file: 4 trajectories"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runDir := filepath.Join(dir, fmt.Sprintf("run%d", i))
			args := append([]string{"sft", "--config", "smoke", "--no-tui", "--run-dir", runDir, "--set", "data.train_file=" + c.file}, c.set...)
			code, out, errOut := run(t, args...)
			if code != exitBadUsage || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, want 2 with %q\nstdout %s\nstderr %s", code, c.want, out, errOut)
			}
			if _, err := os.Stat(runDir); err == nil {
				t.Error("the refused run created its directory")
			}
		})
	}
	// Training tasks outside RFT's range are accepted: the run gets past the check.
	code, _, errOut := run(t, "sft", "--config", "smoke", "--no-tui", "--run-dir", filepath.Join(dir, "ok"), "--set", "data.train_file="+trainFile, "--set", "sft.steps=1", "--set", "sft.warmup_steps=0")
	if code != 0 {
		t.Fatalf("a file of training tasks was refused: exit %d: %s", code, errOut)
	}
}
