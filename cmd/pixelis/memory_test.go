package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/footprint"
	"github.com/pixelis/pixelis/train/rundir"
)

// rssTolerance bounds the measured peak resident memory of a phase against
// its estimate: the estimate counts the live heap at the phase's peak (on the
// high side) and the runtime; the collector lets the heap grow to about twice
// its live size before it collects (GOGC=100), and returns freed pages to the
// system lazily. Outside these bounds the estimate no longer follows what the
// trainer allocates.
const (
	rssAtLeast = 0.5 // × the estimate
	rssAtMost  = 2.0
)

// The memory estimate of each phase holds against the peak resident memory
// (getrusage's ru_maxrss) of a real run of that phase alone, for the smoke
// config, the default config and a large one. The default and large runs take
// few steps: no size the estimate reads depends on the number of steps, and
// the test evaluation streams its tasks 32 at a time (eval.tasks is lowered
// for time, not memory); PPO's critic is run on the smoke config. About 21
// CPU-seconds in all.
func TestMemoryEstimateHoldsAgainstPeakRSS(t *testing.T) {
	bin := binary(t)
	// ttrl.gate = 0: every task's vote passes, so the TTRL step trains on all
	// its rows, the peak the estimate is for (an untrained model's votes
	// rarely pass the default gate, and a step that passes none trains on none).
	short := []string{"sft.steps=4", "sft.warmup_steps=0", "sft.eval_every=4", "rft.steps=1", "rft.warmup_steps=0", "rft.test_freq=1",
		"ttrl.steps=1", "ttrl.gate=0", "eval.tasks=256"}
	for _, c := range []struct {
		name, config string
		sets         []string
		phases       []string
	}{
		{"smoke", "smoke", nil, []string{train.PhaseSFT, train.PhaseRFT, train.PhaseTTRL, train.PhaseTest}},
		{"smoke-ppo", "smoke", []string{"rft.estimator=ppo"}, []string{train.PhaseSFT, train.PhaseRFT}}, // the critic
		{"default", "", short, []string{train.PhaseSFT, train.PhaseRFT, train.PhaseTTRL, train.PhaseTest}},
		// A large SFT batch (32 chunks), large RFT groups (768 episodes a step,
		// two GRPO graphs of 512 rows) and a larger training set than smoke's.
		{"large", "", append(slices.Clone(short), "data.train_tasks=4000", "sft.batch_size=4096", "rft.tasks_per_step=48",
			"rft.group_size=16", "rft.val_tasks=100"), []string{train.PhaseSFT, train.PhaseRFT}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := configs.Resolve(c.config, c.sets)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "--no-tui"}
			if c.config != "" {
				args = append(args, "--config", c.config)
			}
			for _, s := range c.sets {
				args = append(args, "--set", s)
			}
			dir := t.TempDir()
			for _, phase := range c.phases {
				est, err := train.EstimateMemory(cfg, []string{phase})
				if err != nil {
					t.Fatal(err)
				}
				runDir := filepath.Join(dir, phase)
				rss := runPhase(t, bin, append(slices.Clone(args), "--run-dir", runDir), dir, phase)
				ratio := rss / est[0].Bytes()
				t.Logf("%s: estimated %s, peak resident %s (%.2f×)", phase, footprint.FormatBytes(est[0].Bytes()), footprint.FormatBytes(rss), ratio)
				if ratio < rssAtLeast || ratio > rssAtMost {
					t.Errorf("%s: peak resident %s is %.2f× the estimate %s, outside [%g, %g]×",
						phase, footprint.FormatBytes(rss), ratio, footprint.FormatBytes(est[0].Bytes()), rssAtLeast, rssAtMost)
				}
			}
		})
	}
}

// runPhase runs phase alone in its run directory, started from the models the
// phases before it saved under dir/<phase>/checkpoints, and returns its peak
// resident memory in bytes.
func runPhase(t *testing.T, bin string, args []string, dir, phase string) float64 {
	t.Helper()
	runDir := args[len(args)-1]
	args = append(args, "--phases", phase)
	final := func(p, name string) string { return filepath.Join(dir, p, "checkpoints", name) }
	switch phase {
	case train.PhaseRFT:
		args = append(args, "--init", final(train.PhaseSFT, rundir.SFTFinal))
	case train.PhaseTTRL:
		args = append(args, "--init", final(train.PhaseRFT, rundir.RFTFinal))
	case train.PhaseTest: // the SFT and RFT models, where the test phase looks for them
		for _, m := range [][2]string{{train.PhaseSFT, rundir.SFTFinal}, {train.PhaseRFT, rundir.RFTFinal}} {
			if err := os.CopyFS(filepath.Join(runDir, "checkpoints", m[1]), os.DirFS(final(m[0], m[1]))); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pixelis %v: %v\n%s", args, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no resource usage for a child process on this system")
	}
	return float64(ru.Maxrss) * 1024 // KiB on Linux
}
