package tui

import (
	"context"
	"io"
	"slices"

	"github.com/pixelis/pixelis/train/telemetry"
)

// Run kinds as telemetry.Snapshot.Kind names them, for runs of other trainers.
const (
	kindRL         = "rl"
	kindSFT        = "sft"
	kindPreference = "preference"
)

// The status-line fields of watched runs, by kind (pixelis's own runs pick theirs
// by phase).
var (
	plainFieldsWatchRL = []plainField{
		{label: "reward", metrics: []string{"reward/total"}, format: "%+.3f"},
		{label: "final", metrics: []string{"reward/final/raw"}, format: "%+.3f"},
		{label: "kl", metrics: []string{"policy/kl"}, format: "%.4f"},
		{label: "entropy", metrics: []string{"policy/entropy"}, format: "%.3f"},
		{label: "len", metrics: []string{"behavior/traj_len_mean"}, format: "%.1f"},
		{label: "loss", metrics: []string{"policy/loss"}, format: "%.4f"},
		{label: "grad", metrics: []string{"policy/grad_norm"}, format: "%.3f"},
		{label: "lr", metrics: []string{"policy/lr"}, format: "%.1e"},
	}
	plainFieldsWatchSFT = []plainField{
		{label: "loss", metrics: []string{"sft/loss", "policy/loss"}, format: "%.4f"},
		{label: "eval_loss", metrics: []string{"val/loss"}, format: "%.4f"},
		{label: "acc", metrics: []string{"sft/accuracy"}, format: "%.3f"},
		{label: "grad", metrics: []string{"policy/grad_norm"}, format: "%.3f"},
		{label: "lr", metrics: []string{"policy/lr"}, format: "%.2e"},
	}
	plainFieldsPreference = []plainField{
		{label: "loss", metrics: []string{"policy/loss"}, format: "%.4f"},
		{label: "chosen", metrics: []string{"pref/chosen"}, format: "%+.4g"},
		{label: "rejected", metrics: []string{"pref/rejected"}, format: "%+.4g"},
		{label: "margin", metrics: []string{"pref/margin"}, format: "%+.4g"},
		{label: "acc", metrics: []string{"pref/accuracy"}, format: "%.3f"},
		{label: "lr", metrics: []string{"policy/lr"}, format: "%.1e"},
	}
)

// plainFields are the status-line fields of a snapshot: by its kind for a run of
// another trainer, else by its phase.
func plainFields(s telemetry.Snapshot) []plainField {
	switch {
	case s.Kind == kindRL:
		return plainFieldsWatchRL
	case s.Kind == kindSFT:
		return plainFieldsWatchSFT
	case s.Kind == kindPreference:
		return plainFieldsPreference
	case s.Phase == telemetry.PhaseSFT:
		return plainFieldsSFT
	case s.Phase == telemetry.PhaseTTRL:
		return plainFieldsTTRL
	}
	return plainFieldsRFT(s)
}

// PlainWatch prints a watched run as plain lines, as runs print them under
// --no-tui: what the feed says about how it reads the run, a status line for
// every logged step, every event (at its step), and a line when the run's state
// changes. It returns when the run has ended (done, stopped, failed, or idle:
// nothing written for a long while) or ctx ends, having printed everything read;
// without follow, once it has printed what the files held when it started.
func PlainWatch(ctx context.Context, feed telemetry.Feed, w io.Writer, follow bool) error {
	p := &plainSink{w: w, every: 1}
	if n, ok := feed.(interface{ Note() string }); ok && n.Note() != "" {
		p.write(n.Note())
	}
	var meta telemetry.Snapshot // the newest snapshot: the run, its kind and budget
	for {
		u := feed.Take()
		if u.Snapshot != nil {
			if meta.Run == "" {
				p.write("run " + u.Snapshot.Run)
			}
			meta = *u.Snapshot
		}
		printUpdate(p, u, meta)
		if !follow || meta.State.Ended() || meta.State == "idle" {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-feed.Ready():
		}
	}
}

// printUpdate prints an update's points and events in step order, then its state.
func printUpdate(p *plainSink, u telemetry.Update, meta telemetry.Snapshot) {
	events := slices.Clone(u.Events)
	slices.SortStableFunc(events, func(a, b telemetry.Event) int { return a.Step - b.Step })
	for _, pt := range u.Points {
		for len(events) > 0 && events[0].Step <= pt.Step {
			p.Emit(events[0])
			events = events[1:]
		}
		s := meta
		s.Step, s.Metrics, s.Phase, s.State = pt.Step, pt.Named(), pt.Phase, telemetry.StateRunning
		s.StepsPerS = 0
		p.write(plainLine(s))
	}
	for _, e := range events {
		p.Emit(e)
	}
	if u.Snapshot != nil && meta.State != telemetry.StateRunning && meta.State != "" && meta.State != p.lastState {
		p.write(plainStateLine(meta))
		p.lastState = meta.State
	}
}
