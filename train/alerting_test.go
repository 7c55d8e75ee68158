package train

import (
	"context"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/telemetry"
)

// alertSets are the -set arguments of a smoke run whose one detector fires
// at RFT step 3 with action, and never in SFT: the runaway rule over RFT's
// throughput with a bound every step exceeds (its value is wall-clock; the
// step it fires at is not).
func alertSets(action string, more ...string) []string {
	var sets []string
	for _, name := range detectorTables() {
		sets = append(sets, "alerts."+name+".enabled="+boolText(name == alerts.KLRunaway))
	}
	sets = append(sets, "alerts.kl_runaway.metric=perf/episodes_per_s", "alerts.kl_runaway.max=1e-9", "alerts.kl_runaway.growth=0",
		"alerts.kl_runaway.window=4", "alerts.kl_runaway.baseline=1", "alerts.kl_runaway.action="+action)
	return append(sets, more...)
}

// detectorTables are the [alerts] tables, read from the config type.
func detectorTables() []string {
	var out []string
	var buf strings.Builder
	if err := configs.Encode(&buf, configs.Default()); err != nil {
		panic(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "[alerts."); ok {
			out = append(out, strings.TrimSuffix(name, "]"))
		}
	}
	return out
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// alertSink records the run and answers a pause with a resume once the
// alert's pause has been reported, and sends a stop without a checkpoint
// once the run has recorded step stop (0: never).
type alertSink struct {
	memSink
	cmds chan telemetry.Command
	stop int
}

func (s *alertSink) Record(p telemetry.Point) {
	s.memSink.Record(p)
	if p.Step == s.stop {
		s.cmds <- telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true}
	}
}

func (s *alertSink) Emit(e telemetry.Event) {
	s.memSink.Emit(e)
	if e.Kind == telemetry.EventAlertAction && e.Data["action"] == "pause" {
		s.cmds <- telemetry.Command{Kind: telemetry.CmdResume}
	}
}

func (s *alertSink) ofKind(kind string) []telemetry.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []telemetry.Event
	for _, e := range s.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func alertRun(t *testing.T, cfg *configs.Config, dir, resume string, sink *alertSink) error {
	t.Helper()
	r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseSFT, PhaseRFT}, Sink: sink, Commands: sink.cmds, Resume: resume})
	if err != nil {
		t.Fatal(err)
	}
	return r.Run(context.Background())
}

// Each action takes effect on a real run at the boundary after the fire:
// RFT step 3 fires, step 4 runs as the action left the run.
func TestAlertActionsTakeEffect(t *testing.T) {
	type check func(t *testing.T, s *alertSink, m map[int]map[string]float64, err error, sft int)
	tests := []struct {
		action string
		sets   []string
		check  check
	}{
		{"raise", []string{"alerts.kl_runaway.weight=curiosity", "alerts.kl_runaway.amount=0.25"}, func(t *testing.T, s *alertSink, m map[int]map[string]float64, err error, sft int) {
			before, after := m[sft+3]["curriculum/weight/curiosity"], m[sft+4]["curriculum/weight/curiosity"]
			if after != before+0.25 {
				t.Errorf("curiosity weight %v at the fire, %v after: want raised by 0.25", before, after)
			}
			ed := s.ofKind(telemetry.EventEdit)
			if len(ed) != 1 || ed[0].Data["source"] != edit.SourceAlert || ed[0].Step != sft+3 {
				t.Errorf("edits %v, want one from the alert at step %d", ed, sft+3)
			}
		}},
		{"rollback", nil, func(t *testing.T, s *alertSink, m map[int]map[string]float64, err error, sft int) {
			if st := m[sft+3]["curriculum/stage"]; st != 1 {
				t.Fatalf("stage %v at the fire, want 1 (the second)", st)
			}
			if st := m[sft+4]["curriculum/stage"]; st != 0 {
				t.Errorf("stage %v after the rollback, want 0", st)
			}
		}},
		{"checkpoint", nil, func(t *testing.T, s *alertSink, m map[int]map[string]float64, err error, sft int) {
			var manual []telemetry.Event
			for _, e := range s.ofKind(telemetry.EventCheckpoint) {
				if e.Data["kind"] == string(ckpt.KindManual) {
					manual = append(manual, e)
				}
			}
			if len(manual) != 1 || manual[0].Step != sft+3 {
				t.Errorf("manual checkpoints %v, want one at step %d", manual, sft+3)
			}
		}},
		{"pause", nil, func(t *testing.T, s *alertSink, m map[int]map[string]float64, err error, sft int) {
			var resumed bool
			for _, e := range s.ofKind(telemetry.EventCommand) {
				resumed = resumed || e.Message == "resumed" && e.Step == sft+3
			}
			if !resumed {
				t.Errorf("the run was not paused at step %d (no resume from the pause): %v", sft+3, s.ofKind(telemetry.EventCommand))
			}
		}},
		{"stop", nil, func(t *testing.T, s *alertSink, m map[int]map[string]float64, err error, sft int) {
			if !errors.Is(err, ErrStopped) {
				t.Fatalf("run ended with %v, want ErrStopped", err)
			}
			if _, ok := m[sft+4]; ok {
				t.Errorf("step %d ran after the stop", sft+4)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			cfg := smoke(t, alertSets(tt.action, tt.sets...)...)
			sink := &alertSink{cmds: make(chan telemetry.Command, 8)}
			err := alertRun(t, cfg, t.TempDir(), "", sink)
			if tt.action != "stop" && err != nil {
				t.Fatal(err)
			}
			sft := cfg.SFT.Steps
			fires := sink.ofKind(telemetry.EventAlert)
			if len(fires) != 1 || fires[0].Step != sft+3 || fires[0].Data["state"] != alerts.StateFire {
				t.Fatalf("alerts %v, want one fire at step %d", fires, sft+3)
			}
			acts := sink.ofKind(telemetry.EventAlertAction)
			if len(acts) != 1 || acts[0].Data["action"] != tt.action || acts[0].Step != sft+3 {
				t.Fatalf("actions %v, want one %s at step %d", acts, tt.action, sft+3)
			}
			tt.check(t, sink, byStep(sink.points), err, sft)
		})
	}
}

// A run stopped by an alert, at a step whose periodic checkpoint was taken
// with the stop still to do, resumes from its stop's checkpoint and runs to
// the end: it neither stops again nor fires again.
func TestAlertStopResumes(t *testing.T) {
	cfg := smoke(t, alertSets("stop")...)
	sft := cfg.SFT.Steps
	dir := t.TempDir()
	first := &alertSink{cmds: make(chan telemetry.Command, 8)}
	if err := alertRun(t, cfg, dir, "", first); !errors.Is(err, ErrStopped) {
		t.Fatalf("first run ended with %v, want ErrStopped", err)
	}
	stopped := first.ofKind(telemetry.EventCommand)
	if len(stopped) == 0 || stopped[len(stopped)-1].Data["checkpoint"] == nil {
		t.Fatalf("the stop names no checkpoint: %v", stopped)
	}
	second := &alertSink{cmds: make(chan telemetry.Command, 8)}
	if err := alertRun(t, cfg, dir, stopped[len(stopped)-1].Data["checkpoint"].(string), second); err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if as := second.ofKind(telemetry.EventAlert); len(as) != 0 {
		t.Errorf("the resumed run fired again: %v", as)
	}
	if acts := second.ofKind(telemetry.EventAlertAction); len(acts) != 0 {
		t.Errorf("the resumed run acted again: %v", acts)
	}
	if _, ok := byStep(second.points)[sft+cfg.RFT.Steps]; !ok {
		t.Errorf("the resumed run did not reach step %d", sft+cfg.RFT.Steps)
	}
}

// A run killed after an alert fired but before its action (the periodic
// checkpoint of RFT step 3 is taken between the two) and resumed from that
// checkpoint goes on exactly as the run never interrupted: the action is
// carried out once, the alert does not fire again, every later metric is
// the same.
func TestAlertResumeIsExact(t *testing.T) {
	cfg := smoke(t, alertSets("raise", "alerts.kl_runaway.weight=coherence", "alerts.kl_runaway.amount=0.5", "run.workers=2")...)
	sft := cfg.SFT.Steps
	if cfg.Checkpoint.Every != 3 {
		t.Fatalf("checkpoint.every %d: the test needs the periodic checkpoint at the fire's step 3", cfg.Checkpoint.Every)
	}
	full := &alertSink{cmds: make(chan telemetry.Command, 8)}
	if err := alertRun(t, cfg, t.TempDir(), "", full); err != nil {
		t.Fatal(err)
	}
	if n := len(full.ofKind(telemetry.EventEdit)); n != 1 {
		t.Fatalf("the uninterrupted run made %d edits, want 1", n)
	}

	dir := t.TempDir()
	first := &alertSink{cmds: make(chan telemetry.Command, 8), stop: sft + 3}
	// The stop without a checkpoint waits at the boundary where the action
	// is carried out first: drop that run's edit by resuming from the
	// checkpoint saved before it, as a kill there would.
	if err := alertRun(t, cfg, dir, "", first); !errors.Is(err, ErrStopped) {
		t.Fatalf("first run ended with %v, want ErrStopped", err)
	}
	latest := filepath.Join(dir, "checkpoints", ckpt.StepName(int64(sft+3)))
	if _, err := os.Stat(latest); err != nil {
		t.Fatal(err)
	}
	second := &alertSink{cmds: make(chan telemetry.Command, 8)}
	if err := alertRun(t, cfg, dir, latest, second); err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if n := len(second.ofKind(telemetry.EventAlert)); n != 0 {
		t.Errorf("the resumed run fired %d alerts again: %v", n, second.ofKind(telemetry.EventAlert))
	}
	if ed := second.ofKind(telemetry.EventEdit); len(ed) != 1 || ed[0].Step != sft+3 || ed[0].Data["source"] != edit.SourceAlert {
		t.Errorf("the resumed run's edits %v, want the pending raise once, at step %d", ed, sft+3)
	}
	want, got := byStep(full.points), byStep(second.points)
	for step := sft + 4; step <= sft+cfg.RFT.Steps; step++ {
		for name, wv := range want[step] {
			if wallClock(name) {
				continue
			}
			if gv, ok := got[step][name]; !ok || !(gv == wv || math.IsNaN(gv) && math.IsNaN(wv)) {
				t.Fatalf("step %d %s: resumed %v, uninterrupted %v", step, name, gv, wv)
			}
		}
	}
}

// A step that hangs is a stall: the clock fires it while the step runs, the
// alert command gets the alert as JSON, and the step's end clears it.
func TestStallAlertFiresDuringAHungStep(t *testing.T) {
	defer func(tick time.Duration) { alertTick = tick }(alertTick)
	alertTick = 10 * time.Millisecond
	out := filepath.Join(t.TempDir(), "alert.json")
	sets := []string{"alerts.stall.factor=2", "alerts.stall.min_seconds=5", "alerts.stall.window=10",
		`alerts.command=["sh", "-c", "cat > ` + out + `"]`}
	for _, name := range detectorTables() {
		if name != alerts.Stall {
			sets = append(sets, "alerts."+name+".enabled=false")
		}
	}
	cfg := smoke(t, sets...)
	sink := &alertSink{cmds: make(chan telemetry.Command, 8)}
	r, err := New(cfg, Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT}, Sink: sink, Commands: sink.cmds})
	if err != nil {
		t.Fatal(err)
	}
	r.beforeUpdate = func(phase string, step int, _ *float64) {
		if step != 15 {
			return
		}
		deadline := time.Now().Add(time.Minute)
		for len(sink.ofKind(telemetry.EventAlert)) == 0 {
			if time.Now().After(deadline) {
				t.Error("no stall alert within a minute of a hung step")
				return
			}
			time.Sleep(5 * time.Millisecond) // polling the sink for the clock's event
		}
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	as := sink.ofKind(telemetry.EventAlert)
	if len(as) != 2 || as[0].Data["state"] != alerts.StateFire || as[0].Data["detector"] != alerts.Stall || as[1].Data["state"] != alerts.StateClear {
		t.Fatalf("alerts %v, want a stall's fire and clear", as)
	}
	b, err := os.ReadFile(out) // the run waited for its command before it ended
	if err != nil || !strings.Contains(string(b), `"detector":"stall"`) {
		t.Errorf("the command's input %q (%v), want the alert as JSON", b, err)
	}
}

// An alert command that fails is a warning; the run goes on.
func TestAlertCommandFailureIsAWarning(t *testing.T) {
	cfg := smoke(t, alertSets("warn", `alerts.command=["sh", "-c", "echo no notifier >&2; exit 3"]`)...)
	sink := &alertSink{cmds: make(chan telemetry.Command, 8)}
	if err := alertRun(t, cfg, t.TempDir(), "", sink); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(sink.ofKind(telemetry.EventWarning), func(e telemetry.Event) bool {
		return strings.Contains(e.Message, "alert kl_runaway: command sh failed") && strings.Contains(e.Message, "no notifier")
	})
	if i < 0 {
		t.Errorf("no warning of the failed command: %v", sink.ofKind(telemetry.EventWarning))
	}
}

// reward/<c>/abs is the batch mean of what each component adds to a
// trajectory's total in size: |w·z|, the priced ones with w = 1.
func TestContributions(t *testing.T) {
	bd := reward.Breakdown{Names: []string{reward.NameFinal, reward.NameCuriosity, reward.NameCost}, Trajs: []reward.TrajReward{
		{Norm: map[string]float64{reward.NameFinal: 1, reward.NameCuriosity: -2, reward.NameCost: -0.4}},
		{Norm: map[string]float64{reward.NameFinal: -1, reward.NameCuriosity: 4, reward.NameCost: 0}},
	}}
	m := map[string]float64{}
	contributions(bd, map[string]float64{reward.NameFinal: 1, reward.NameCuriosity: 0.5}, m)
	want := map[string]float64{"reward/final/abs": 1, "reward/curiosity/abs": 1.5, "reward/cost/abs": 0.2}
	if !maps.Equal(m, want) {
		t.Errorf("got %v, want %v", m, want)
	}
}
