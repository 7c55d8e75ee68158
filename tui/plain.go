package tui

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/pixelis/pixelis/train/telemetry"
)

// Plain returns the headless printer used with --no-tui (and whenever
// stdout is not a terminal): one line per published snapshot, one line per
// event prefixed with its step, no escape codes. Record does nothing: the
// per-step points go to the JSONL recorder, not the console. It is safe for
// concurrent use.
func Plain(w io.Writer) telemetry.Sink { return &plainSink{w: w} }

type plainSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *plainSink) Record(telemetry.Point) {}

func (p *plainSink) Publish(s telemetry.Snapshot) { p.write(plainLine(s)) }

func (p *plainSink) Emit(e telemetry.Event) {
	msg := clean(e.Message)
	if msg == "" {
		msg = e.Kind
	}
	p.write(fmt.Sprintf("[%s] %s: %s", eventStep(e), e.Kind, msg))
}

func (p *plainSink) write(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A console that went away must not stop training: errors are dropped.
	_, _ = io.WriteString(p.w, line+"\n")
}

// plainLine is one snapshot as text:
//
//	step 1240/3000 rft stage 2/3 Phase2_Learn_Coherence | reward final +0.71 coh +0.12 … | success_ma100 0.740 kl 0.0120 … | 4.1 it/s eta 7m
func plainLine(s telemetry.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d/%d %s", s.Step, s.TotalSteps, s.Phase)
	cur := s.Curriculum
	if n := len(cur.Stages); n > 0 && cur.Current >= 0 && cur.Current < n {
		word := "stage"
		if cur.Kind == "data" {
			word = "data"
		}
		fmt.Fprintf(&b, " %s %d/%d %s", word, cur.Current+1, n, strings.ReplaceAll(clean(cur.Stages[cur.Current].Name), " ", "_"))
	}
	if s.State != "" && s.State != telemetry.StateRunning {
		fmt.Fprintf(&b, " state %s", s.State)
	}
	// Each field is a label and the metric names to try, first found wins.
	group := func(fields ...[2]string) {
		var parts []string
		seen := map[string]bool{}
		for _, f := range fields {
			if v, ok := s.Metrics[f[1]]; ok && !seen[f[0]] {
				seen[f[0]] = true
				parts = append(parts, f[0]+" "+plainVal(f[1], v))
			}
		}
		if len(parts) > 0 {
			b.WriteString(" | " + strings.Join(parts, " "))
		}
	}
	if s.Phase == telemetry.PhaseSFT {
		group(
			[2]string{"loss", "sft/loss"}, [2]string{"loss", "policy/loss"},
			[2]string{"acc", "sft/accuracy"}, [2]string{"acc", "policy/accuracy"},
			[2]string{"val_pass@1", "val/all/pass@1"}, [2]string{"val_greedy", "val/all/greedy"},
			[2]string{"lr", "policy/lr"},
		)
	} else {
		group(
			[2]string{"final", "reward/final/raw"},
			[2]string{"coh", "reward/coherence/raw"},
			[2]string{"cur", "reward/curiosity/raw"},
			[2]string{"pen", "reward/penalty/raw"},
		)
		group(
			[2]string{"success_ma100", "kpi/success_rate_ma100"},
			[2]string{"kl", "policy/kl"},
			[2]string{"filter", "grpo/filter_rate"},
			[2]string{"traj_len", "behavior/traj_len_mean"},
			[2]string{"rapr", "behavior/rapr"},
			[2]string{"val_pass@1", "val/all/pass@1"},
		)
	}
	var tail []string
	if s.StepsPerS > 0 {
		tail = append(tail, fmt.Sprintf("%.1f it/s", s.StepsPerS))
		if s.TotalSteps > s.Step && runActive(&s) {
			tail = append(tail, "eta "+fmtDuration(float64(s.TotalSteps-s.Step)/s.StepsPerS))
		}
	}
	if len(tail) > 0 {
		b.WriteString(" | " + strings.Join(tail, " "))
	}
	return b.String()
}

// plainVal formats a value for the plain line: rewards signed, learning
// rates in exponent form, the rest with fmtVal.
func plainVal(name string, v float64) string {
	switch {
	case strings.HasPrefix(name, "reward/"):
		return strings.TrimSpace(fmtSigned(v))
	case name == "policy/lr":
		return fmt.Sprintf("%.1e", v)
	}
	return fmtVal(v)
}

// eventStep is where an event happened as the header counts steps: "rft 120"
// within a phase, the run-wide step otherwise.
func eventStep(e telemetry.Event) string {
	if e.Phase != "" {
		return fmt.Sprintf("%s %d", e.Phase, e.PhaseStep)
	}
	return fmt.Sprintf("step %d", e.Step)
}
