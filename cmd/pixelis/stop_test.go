package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The stop contract (docs/stopping.md), case by case, for the
// headless run and for the console in tmux alike. Each case holds the run at a
// fault point (faults.Pause) where the stop must find it, and waits for the
// run's states — files, lines, exit — never for time.

// stopper is one way of driving a run: headless (signals, control.sock) or
// in the console (keys).
type stopper interface {
	// stop is the first stop: SIGTERM headless, q then y in the console.
	stop()
	// interrupt is SIGINT headless, ctrl+c in the console.
	interrupt()
	// evaluate asks for an evaluation: over control.sock headless, e in the console.
	evaluate()
	// socketStop is stop over control.sock, as `pixelis attach` sends it.
	socketStop()
	// finish waits for the end: the exit code and what the terminal shows.
	finish() (code int, out string)
}

// stopCase is one case of the contract.
type stopCase struct {
	name  string
	cmd   []string // the command and its flags; stopArgs when nil
	args  []string // after the command's run directory
	holds string   // the fault points to hold the run at
	drive func(t *testing.T, s stopper, run stopRun)
	exit  int
	ckpts func(run stopRun, closing closingLine) []string // the checkpoints left, by name; nil: not counted
	check func(t *testing.T, run stopRun, out string)
}

// stopRun is the run a case drives: its directory and its holds.
type stopRun struct {
	dir string
	h   holds
}

func (r stopRun) waitLog(t *testing.T, s string) {
	t.Helper()
	waitFile(t, "console.log", filepath.Join(r.dir, "console.log"), s)
}

func (r stopRun) waitStep(t *testing.T, step int) {
	t.Helper()
	waitFile(t, "step "+strconv.Itoa(step), filepath.Join(r.dir, "metrics.jsonl"), fmt.Sprintf(`"step":%d,`, step))
}

// stopArgs: a long SFT phase, no validation or checkpoint of its own but
// those a case asks for.
var stopArgs = []string{"sft", "--config", "smoke", "--set", "sft.steps=3000", "--set", "sft.eval_every=1000", "--set", "checkpoint.every=0"}

var stopCases = []stopCase{
	{
		name: "one stop",
		drive: func(t *testing.T, s stopper, run stopRun) {
			run.waitStep(t, 10)
			s.stop()
		},
		ckpts: func(_ stopRun, c closingLine) []string { return []string{c.ckpt} },
	},
	{
		// Held at the start of step 8, after the checkpoint of step 5: the
		// second stop ends the run at once, and steps 6 to 8 are lost.
		name: "two stops", args: []string{"--set", "checkpoint.every=5"}, holds: faults.TrainingStep + "#8",
		drive: func(t *testing.T, s stopper, run stopRun) {
			run.h.reached(t, faults.TrainingStep)
			s.interrupt()
			run.waitLog(t, "stopping at the end of this step with a checkpoint")
			s.interrupt()
		},
		exit:  1,
		ckpts: func(stopRun, closingLine) []string { return []string{"step_000005"} },
		check: func(t *testing.T, run stopRun, out string) {
			m := regexp.MustCompile(`at step (\d+): (\d+) steps since checkpoint step_000005 lost`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("the end does not say which steps were lost:\n%s", out)
			}
			step, _ := strconv.Atoi(m[1])
			if lost, _ := strconv.Atoi(m[2]); step < 7 || lost != step-5 || !fileContains(filepath.Join(run.dir, "metrics.jsonl"), fmt.Sprintf(`"step":%d,`, step)) {
				t.Errorf("lost %d steps at step %d, after step_000005", lost, step)
			}
		},
	},
	{
		// The second stop comes while the first one's checkpoint is written:
		// that save finishes whole, then the run ends at once.
		name: "second stop during the stop checkpoint", holds: faults.CheckpointSave,
		drive: func(t *testing.T, s stopper, run stopRun) {
			run.waitStep(t, 10)
			s.stop()
			run.h.reached(t, faults.CheckpointSave)
			s.interrupt()
			run.waitLog(t, "again: stopping at once")
			run.h.release(t, faults.CheckpointSave)
		},
		exit: 1,
		ckpts: func(run stopRun, c closingLine) []string {
			return []string{c.ckpt}
		},
		check: func(t *testing.T, run stopRun, out string) {
			if !regexp.MustCompile(`nothing after checkpoint step_\d+ was lost`).MatchString(out) {
				t.Errorf("the end does not say the save in flight was kept:\n%s", out)
			}
		},
	},
	{
		// The stop comes while step 5's own checkpoint is written: the stop
		// keeps it rather than writing step 5 again.
		name: "stop during a save", args: []string{"--set", "checkpoint.every=5"}, holds: faults.CheckpointSave,
		drive: func(t *testing.T, s stopper, run stopRun) {
			run.h.reached(t, faults.CheckpointSave)
			s.interrupt()
			run.waitLog(t, "stopping at the end of this step")
			run.h.release(t, faults.CheckpointSave)
		},
		ckpts: func(stopRun, closingLine) []string { return []string{"step_000005"} },
	},
	{
		// Held in the data build until its context ends: only the stop ends it.
		name: "stop during the set build", holds: faults.DataBuild,
		drive: func(t *testing.T, s stopper, run stopRun) {
			run.h.reached(t, faults.DataBuild)
			s.stop()
		},
		ckpts: func(stopRun, closingLine) []string { return nil },
		check: func(t *testing.T, run stopRun, out string) {
			if !strings.Contains(out, "stopped at step 0, before any checkpoint") {
				t.Errorf("closing lines:\n%s", out)
			}
			if !fileContains(filepath.Join(run.dir, "events.jsonl"), "stopped on request while building the training set") {
				t.Error("the run does not say it stopped during the build")
			}
		},
	},
	{
		// Held in an evaluation asked for between steps until its context
		// ends: the stop ends it and stops the run there, with a checkpoint.
		name: "stop during evaluation", holds: faults.Evaluation,
		drive: func(t *testing.T, s stopper, run stopRun) {
			run.waitStep(t, 5)
			s.evaluate()
			run.h.reached(t, faults.Evaluation)
			s.stop()
		},
		ckpts: func(_ stopRun, c closingLine) []string { return []string{c.ckpt} },
		check: func(t *testing.T, run stopRun, _ string) {
			events := filepath.Join(run.dir, "events.jsonl")
			if !fileContains(events, "evaluation interrupted by a stop request") || fileContains(events, `"kind":"eval"`) {
				t.Error("the evaluation was not cut short by the stop")
			}
		},
	},
	{
		// Held as the test phase starts, until its context ends; the stop
		// comes over control.sock.
		name: "stop during the test phase", cmd: []string{"run", "--config", "smoke", "--set", "rft.steps=4", "--set", "checkpoint.every=0"},
		holds: faults.TestPhase,
		drive: func(t *testing.T, s stopper, run stopRun) {
			run.h.reached(t, faults.TestPhase)
			s.socketStop()
		},
		check: func(t *testing.T, run stopRun, out string) {
			if _, err := os.Stat(filepath.Join(run.dir, "final_eval.json")); err == nil {
				t.Error("the stopped test phase wrote final_eval.json")
			}
			if !strings.Contains(out, "stopped at step 24 with checkpoint rft_final") {
				t.Errorf("closing lines:\n%s", out)
			}
			if !fileContains(filepath.Join(run.dir, "events.jsonl"), "stopped on request during the test evaluation") {
				t.Error("the run does not say it stopped during the test phase")
			}
		},
	},
}

func (c stopCase) command() []string {
	if c.cmd != nil {
		return c.cmd
	}
	return stopArgs
}

// closingLine is the line a run stopped on request ends with.
type closingLine struct {
	step int
	ckpt string
}

var closingRe = regexp.MustCompile(`stopped at (?:once by a second stop \(.*?\) at )?step (\d+)(?: with checkpoint (\S+);|: nothing after checkpoint (\S+) was lost)?`)

func parseClosing(out string) (closingLine, bool) {
	m := closingRe.FindStringSubmatch(out)
	if m == nil {
		return closingLine{}, false
	}
	step, _ := strconv.Atoi(m[1])
	return closingLine{step: step, ckpt: m[2] + m[3]}, true
}

// checkStopped checks what every case leaves: the exit code, the closing line
// with the resume command, the checkpoints (each whole, none written twice)
// and the run's status.
func checkStopped(t *testing.T, c stopCase, run stopRun, code int, out string) {
	t.Helper()
	if code != c.exit {
		t.Fatalf("exit %d, want %d\n%s", code, c.exit, out)
	}
	noStack(t, out)
	cl, ok := parseClosing(out)
	if !ok || !strings.Contains(out, "pixelis resume "+run.dir) {
		t.Fatalf("no closing line with the resume command:\n%s", out)
	}
	root := filepath.Join(run.dir, "checkpoints")
	infos, _ := ckpt.List(root)
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
		if p := ckpt.Verify(in.Path); len(p) > 0 {
			t.Errorf("checkpoint %s is not whole: %v", in.Name, p)
		}
	}
	slices.Sort(names)
	if c.ckpts != nil {
		if want := c.ckpts(run, cl); !slices.Equal(names, want) {
			t.Errorf("checkpoints %v, want %v", names, want)
		}
	}
	events, _ := os.ReadFile(filepath.Join(run.dir, "events.jsonl"))
	for _, n := range names {
		if k := strings.Count(string(events), `"message":"checkpoint `+n+`"`); k > 1 {
			t.Errorf("%s written %d times", n, k)
		}
	}
	if !fileContains(filepath.Join(run.dir, "status.json"), `"state":"stopped"`) {
		t.Error("status.json does not say stopped")
	}
	if c.check != nil {
		c.check(t, run, out)
	}
}

func TestStopHeadless(t *testing.T) {
	bin := binary(t)
	for _, c := range stopCases {
		t.Run(c.name, func(t *testing.T) {
			run := stopRun{dir: filepath.Join(t.TempDir(), "run"), h: newHolds(t)}
			args := append(append(slices.Clone(c.command()), "--no-tui", "--run-dir", run.dir), c.args...)
			var env []string
			if c.holds != "" {
				env = run.h.env(c.holds)
			}
			s := &headless{t: t, run: run, p: startProcess(t, bin, env, args...)}
			c.drive(t, s, run)
			code, out := s.finish()
			checkStopped(t, c, run, code, out)
		})
	}
}

func TestStopConsole(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range stopCases {
		t.Run(c.name, func(t *testing.T) {
			run := stopRun{dir: filepath.Join(t.TempDir(), "run"), h: newHolds(t)}
			exit := filepath.Join(t.TempDir(), "exit")
			args := append(append([]string{bin}, c.command()...), "--run-dir", run.dir)
			cmd := killOnCleanup(t, append(args, c.args...))
			if c.holds != "" {
				cmd = run.h.shell(c.holds) + cmd
			}
			s := &console{t: t, dir: run.dir, exit: exit, tm: newTmux(t, fmt.Sprintf("%s; echo $? > %s; sleep 600", cmd, exit))}
			s.tm.waitScreen("console", "pixelis · ")
			c.drive(t, s, run)
			code, out := s.finish()
			checkStopped(t, c, run, code, out)
		})
	}
}

// headless drives a run without a console: signals and control.sock.
type headless struct {
	t   *testing.T
	run stopRun
	p   *process
}

func (h *headless) stop()      { h.p.signal(h.t, syscall.SIGTERM) }
func (h *headless) interrupt() { h.p.signal(h.t, syscall.SIGINT) }
func (h *headless) evaluate() {
	if err := telemetry.SendControl(h.run.dir, telemetry.Command{Kind: telemetry.CmdEval}); err != nil {
		h.t.Fatal(err)
	}
}
func (h *headless) socketStop() { socketStop(h.t, h.run.dir) }
func (h *headless) finish() (int, string) {
	code := h.p.exit(h.t)
	return code, h.p.out.String() + h.p.errOut.String()
}

// console drives a run in its console in tmux: keys.
type console struct {
	t    *testing.T
	dir  string
	tm   *tmuxSession
	exit string
}

func (c *console) stop() {
	c.tm.keys("q")
	c.tm.waitScreen("stop question", "stop the run? (y/n/esc)")
	c.tm.keys("y")
}
func (c *console) interrupt()  { c.tm.keys("C-c") }
func (c *console) evaluate()   { c.tm.keys("e") }
func (c *console) socketStop() { socketStop(c.t, c.dir) }

func socketStop(t *testing.T, dir string) {
	t.Helper()
	if err := telemetry.SendControl(dir, telemetry.Command{Kind: telemetry.CmdStop}); err != nil {
		t.Fatal(err)
	}
}

// finish waits for the exit and returns what the terminal shows once the
// console has left it: the closing lines.
func (c *console) finish() (int, string) {
	if !waitFor(3*time.Minute, func() bool { return fileContains(c.exit, "\n") }) {
		c.t.Fatalf("pixelis did not exit:\n%s", c.tm.screen())
	}
	b, _ := os.ReadFile(c.exit)
	code, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	_, screen := c.tm.waitLastLogged(c.dir)
	return code, screen
}
