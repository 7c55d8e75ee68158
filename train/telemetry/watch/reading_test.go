package watch

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb"
	"github.com/pixelis/pixelis/train/telemetry/tb/tbtest"
)

// state writes a trainer_state.json as the Hugging Face Trainer does, with the
// given log history (raw JSON) and steps.
func state(global, maxSteps int, stop bool, history string) string {
	s := `{"global_step": ` + itoa(global) + `, "max_steps": ` + itoa(maxSteps) + `, "train_batch_size": 8, "logging_steps": 1,
  "log_history": [` + history + `]`
	if stop {
		s += `, "stateful_callbacks": {"TrainerControl": {"args": {"should_training_stop": true}, "attributes": {}}}`
	}
	return s + "}"
}

func itoa(n int) string { return strconv.Itoa(n) }

func openDir(t *testing.T, dir string, now time.Time) (*Feed, history) {
	t.Helper()
	f := openTest(t, dir, Options{}, now)
	var h history
	h.fold(f.Take())
	return f, h
}

func warnings(h history) string {
	var out []string
	for _, e := range h.events {
		if e.Kind == telemetry.EventWarning {
			out = append(out, e.Message)
		}
	}
	return strings.Join(out, "\n")
}

// Python's json.dumps writes NaN and Infinity for non-finite floats (a NaN
// grad_norm when fp16 overflows), and TRL logs null for all-NaN series: the run is
// read, with those values non-finite, and no warning.
func TestTrainerStateNonFinite(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "trainer_state.json"), []byte(state(3, 3, false, `
	  {"step": 1, "loss": 2.5, "grad_norm": NaN},
	  {"step": 2, "loss": Infinity, "grad_norm": -Infinity, "kl": null, "note": "NaN stays a string"},
	  {"step": 3, "loss": 1.5, "grad_norm": 0.5}`)))
	f, h := openDir(t, dir, time.Now())
	if got := h.values["policy/grad_norm"]; !math.IsNaN(got[1]) || !math.IsInf(got[2], -1) || got[3] != 0.5 {
		t.Fatalf("grad_norm %v", got)
	}
	if got := h.values["policy/loss"]; !math.IsInf(got[2], 1) || got[3] != 1.5 {
		t.Fatalf("loss %v", got)
	}
	if got := h.values["policy/kl"]; !math.IsNaN(got[2]) {
		t.Fatalf("null kl read as %v", got)
	}
	if h.snap == nil || h.snap.Step != 3 || h.snap.State != telemetry.StateDone {
		t.Fatalf("snapshot %+v", h.snap)
	}
	if w := warnings(h); !strings.Contains(w, `"note"`) || strings.Count(w, "\n") != 0 {
		t.Fatalf("warnings: %q", w)
	}
	_ = f
}

// Values of the wrong type are warned about once a metric, naming the file, the
// metric and the step; NumPy's repr of a number is read, and said so.
func TestTrainerStateWrongTypes(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "trainer_state.json"), []byte(state(2, 10, false, `
	  {"step": 1, "reward": "np.float64(-0.48)", "lengths": [1, 2], "flag": true, "name": "run-a", "loss": 1},
	  {"step": 2, "reward": "np.float64(-0.25)", "lengths": [3], "loss": 0.5},
	  {"loss": 9}`)))
	_, h := openDir(t, dir, time.Now())
	if got := h.values["reward/total"]; got[1] != -0.48 || got[2] != -0.25 {
		t.Fatalf("reward %v", got)
	}
	w := warnings(h)
	for _, want := range []string{`"reward" at step 1 is a string, "np.float64(-0.48)": read as -0.48`, `"lengths" at step 1 is a list`,
		`"flag" at step 1 is true`, `"name" at step 1 is the string "run-a"`, `without a numeric "step"`} {
		if !strings.Contains(w, want) {
			t.Errorf("no warning %q in\n%s", want, w)
		}
	}
	if n := strings.Count(w, `"lengths"`); n != 1 {
		t.Errorf("lengths warned %d times", n)
	}
}

// checkpoint-N folders are read by their step, not by modification time (a copy
// or a download reorders mtimes).
func TestCheckpointOfTheHighestStep(t *testing.T) {
	dir := t.TempDir()
	hist := func(n int) string {
		var e []string
		for s := 1; s <= n; s++ {
			e = append(e, `{"step": `+itoa(s)+`, "loss": `+itoa(s)+`}`)
		}
		return strings.Join(e, ",")
	}
	put(t, filepath.Join(dir, "checkpoint-8", "trainer_state.json"), []byte(state(8, 30, false, hist(8))))
	put(t, filepath.Join(dir, "checkpoint-30", "trainer_state.json"), []byte(state(30, 30, false, hist(30))))
	old, young := time.Now().Add(-time.Hour), time.Now()
	os.Chtimes(filepath.Join(dir, "checkpoint-30", "trainer_state.json"), old, old)
	os.Chtimes(filepath.Join(dir, "checkpoint-8", "trainer_state.json"), young, young)
	_, h := openDir(t, dir, time.Now())
	if h.snap == nil || h.snap.Step != 30 || h.snap.TotalSteps != 30 || h.snap.State != telemetry.StateDone || len(h.values["policy/loss"]) != 30 {
		t.Fatalf("snapshot %+v, %d losses", h.snap, len(h.values["policy/loss"]))
	}
}

// A run that stopped before its step budget reads as stopped: at once when the
// Trainer was told to stop (should_training_stop), once nothing is written for
// IdleAfter otherwise. A run whose last logged step is short of its global step
// shows the global step.
func TestStoppedEarly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trainer_state.json")
	put(t, path, []byte(state(12, 12, false, `{"step": 5, "loss": 1}, {"step": 10, "loss": 0.5}`)))
	_, h := openDir(t, dir, time.Now())
	if h.snap.Step != 12 || h.snap.State != telemetry.StateDone {
		t.Fatalf("global step 12 of 12: %+v", h.snap)
	}
	put(t, path, []byte(state(100, 200, true, `{"step": 100, "loss": 1}`)))
	_, h = openDir(t, dir, time.Now())
	if h.snap.Step != 100 || h.snap.State != telemetry.StateStopped {
		t.Fatalf("should_training_stop at 100 of 200: %+v", h.snap)
	}
	put(t, path, []byte(state(100, 200, false, `{"step": 100, "loss": 1}`)))
	if _, h = openDir(t, dir, time.Now()); h.snap.State != telemetry.StateRunning {
		t.Fatalf("just written: %s", h.snap.State)
	}
	if _, h = openDir(t, dir, time.Now().Add(time.Hour)); h.snap.State != telemetry.StateStopped {
		t.Fatalf("an hour later: %s", h.snap.State)
	}
}

// A directory holding verl's FileLogger JSONL as metrics.jsonl (as several verl
// projects name it) is verl's, read as such — never taken for a pixelis run.
func TestForeignMetricsJSONL(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "metrics.jsonl"), []byte(`{"step": 1, "data": {"critic/score/mean": 0.25, "actor/entropy": 0.7, "val-core/gsm8k/acc/mean@1": 0.5}}
{"step": 2, "data": {"critic/score/mean": 0.5, "actor/entropy": NaN, "training/note": "x"}}
`))
	if f, err := Detect(dir); err != nil || f != FormatVerlJSONL {
		t.Fatalf("Detect: %q %v", f, err)
	}
	f, h := openDir(t, dir, time.Now())
	if f.Format() != FormatVerlJSONL || f.Trainer() != "verl" || f.RunKind() != RunRL {
		t.Fatalf("format %s trainer %s kind %s", f.Format(), f.Trainer(), f.RunKind())
	}
	if got := h.values["reward/final/raw"]; got[1] != 0.25 || got[2] != 0.5 || !math.IsNaN(h.values["policy/entropy"][2]) || h.values["val/gsm8k/pass@1"][1] != 0.5 {
		t.Fatalf("values %v", h.values)
	}
	if !strings.Contains(warnings(h), `"training/note" is the string "x"`) {
		t.Fatalf("warnings %q", warnings(h))
	}
	// pixelis's own metrics.jsonl is still pixelis's.
	own := t.TempDir()
	put(t, filepath.Join(own, "metrics.jsonl"), []byte(`{"step":1,"phase":"rft","time":"2026-01-01T00:00:00Z","m":{"policy/kl":0.1}}`+"\n"))
	if f, _ := Detect(own); f != FormatPixelis {
		t.Fatalf("pixelis's metrics.jsonl detected as %q", f)
	}
}

// verl's console lines are read from a captured log: Ray's prefix, colour codes
// and NumPy reprs around them, other output between them.
func TestVerlConsoleLog(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "train.log"), []byte("Loading model...\n"+
		"\x1b[36m(TaskRunner pid=7)\x1b[0m step:1 - critic/score/mean:np.float64(0.25) - actor/entropy:0.700 - response_length/mean:512.000\n"+
		"some warning: step:x not a metric line\n"+
		"(TaskRunner pid=7) step:2 - critic/score/mean:0.500 - actor/entropy:nan - training/global_step:2 - perf/note:abc\n"))
	f, h := openDir(t, dir, time.Now())
	if f.Format() != FormatVerlConsole || f.Note() == "" {
		t.Fatalf("format %s note %q", f.Format(), f.Note())
	}
	if h.snap.TotalSteps != 0 || h.snap.State == telemetry.StateDone {
		t.Fatalf("budget %d, state %s before the trainer printed either", h.snap.TotalSteps, h.snap.State)
	}
	if got := h.values["reward/final/raw"]; got[1] != 0.25 || got[2] != 0.5 || h.values["behavior/traj_len_mean"][1] != 512 || !math.IsNaN(h.values["policy/entropy"][2]) {
		t.Fatalf("values %v", h.values)
	}
	if !strings.Contains(warnings(h), `"perf/note" is "abc"`) {
		t.Fatalf("warnings %q", warnings(h))
	}
	// RayPPOTrainer prints its budget as it starts and pprints its end, quoted.
	put(t, filepath.Join(dir, "train.log"), []byte("(TaskRunner pid=7) Total training steps: 2\n"+
		"(TaskRunner pid=7) step:1 - critic/score/mean:0.25\n(TaskRunner pid=7) step:2 - critic/score/mean:0.5\n"+
		"(TaskRunner pid=7) 'Final validation metrics: {}'\n"))
	_, h = openDir(t, dir, time.Now())
	if h.snap.TotalSteps != 2 || h.snap.State != telemetry.StateDone {
		t.Fatalf("budget %d, state %s; want 2, done", h.snap.TotalSteps, h.snap.State)
	}
}

// verl's SFT trainer prints its metrics to the stream its tqdm bar draws on:
// each line follows a bar's "]" (or its last "\r" redraw), and the validation
// loss has a line of its own. Every step is read, the run is verl's SFT, and the
// learning rate it logs in thousandths is shown as the rate itself.
func TestVerlSFTConsoleLog(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "sft.log"), []byte("Number of steps/epoch 2, number of epochs 2, total number of steps 4\n"+
		"Epoch 1/2:   0%|          | 0/2 [00:00<?, ?it/s]step:1 - train/loss:1.25 - train/lr(1e-3):0.004\n"+
		"Epoch 1/2:  50%|#####     | 1/2 [00:13<00:13, 13.1s/it]step:2 - train/loss:0.75 - train/lr(1e-3):0.003\n"+
		"step:2 - val/loss:0.5\n"+
		"Epoch 2/2:   0%|          | 0/2 [00:00<?, ?it/s]\rEpoch 2/2:  50%|#####     | 1/2 [00:13<00:13, 13.2s/it]step:3 - train/loss:0.5 - train/lr(1e-3):0.002\n"+
		"Epoch 2/2:  50%|#####     | 1/2 [00:26<00:13, 13.2s/it]step:4 - train/loss:0.25 - train/lr(1e-3):0.0\n"+
		"step:4 - val/loss:0.375\n"+
		"saved to ckpt/global_step:4 - done:1\n"+ // a path, not a step
		"Final validation metrics: {'val/loss': 0.375}\n"))
	if f, err := Detect(dir); err != nil || f != FormatVerlConsole {
		t.Fatalf("Detect: %q %v", f, err)
	}
	f, h := openDir(t, dir, time.Now())
	if f.Trainer() != "verl" || f.RunKind() != RunSFT {
		t.Fatalf("trainer %s kind %s", f.Trainer(), f.RunKind())
	}
	// The budget it printed, and its end: done at step 4 of 4.
	if snap := h.snap; snap.TotalSteps != 4 || snap.State != telemetry.StateDone {
		t.Errorf("budget %d, state %s; want 4, done", snap.TotalSteps, snap.State)
	}
	want := map[string]map[int]float64{
		"policy/loss": {1: 1.25, 2: 0.75, 3: 0.5, 4: 0.25},
		"policy/lr":   {1: 0.004 * 1e-3, 2: 0.003 * 1e-3, 3: 0.002 * 1e-3, 4: 0},
		"val/loss":    {2: 0.5, 4: 0.375},
	}
	if len(h.values) != len(want) {
		t.Fatalf("metrics %v, want %v", h.values, want)
	}
	for name, steps := range want {
		if !maps.Equal(h.values[name], steps) {
			t.Errorf("%s: %v, want %v", name, h.values[name], steps)
		}
	}
	if w := warnings(h); w != "" {
		t.Errorf("warnings %q", w)
	}
}

// A preference run's names land on pixelis's preference names and make it one.
func TestPreferenceRun(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "trainer_state.json"), []byte(state(2, 2, false, `
	  {"step": 1, "loss": 0.6931, "rewards/chosen": 0.0123, "rewards/rejected": -0.0102, "rewards/margins": 0.0025, "rewards/accuracies": 0.625},
	  {"step": 2, "eval_loss": 0.69, "eval_rewards/margins": 0.003}`)))
	f, h := openDir(t, dir, time.Now())
	if f.RunKind() != RunPreference || h.snap.Kind != "preference" || !strings.Contains(h.snap.Run, "trl · preference") {
		t.Fatalf("kind %s snapshot %+v", f.RunKind(), h.snap)
	}
	if h.values["pref/margin"][1] != 0.0025 || h.values["val/pref/margin"][2] != 0.003 || len(h.values["reward/margins/raw"]) != 0 {
		t.Fatalf("values %v", h.values)
	}
	if s := f.Settings(); !strings.Contains(s, "max_steps = 2") || !strings.Contains(s, "train_batch_size = 8") || strings.Contains(s, "log_history") {
		t.Fatalf("settings %q", s)
	}
}

// TRL 0.19 logs completion_length and completions/mean_length: the console shows
// the newer name's values, whichever comes first in the file.
func TestTwoNamesOneMetric(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "trainer_state.json"), []byte(state(2, 2, false, `
	  {"step": 1, "completion_length": 250, "completions/mean_length": 256, "reward": 1},
	  {"completions/mean_length": 300, "step": 2, "completion_length": 290, "reward": 1}`)))
	_, h := openDir(t, dir, time.Now())
	if got := h.values["behavior/traj_len_mean"]; got[1] != 256 || got[2] != 300 {
		t.Fatalf("traj len %v", got)
	}
}

// --run takes a run's full name or the end of it.
func TestRunBySuffix(t *testing.T) {
	runs := []string{"tensorboard_log/proj/exp_a", "tensorboard_log/proj/exp_b", "other/exp_b"}
	if r, err := chooseRun(".", runs, "exp_a"); err != nil || r != runs[0] {
		t.Fatalf("exp_a: %q %v", r, err)
	}
	if r, err := chooseRun(".", runs, "proj/exp_b"); err != nil || r != runs[1] {
		t.Fatalf("proj/exp_b: %q %v", r, err)
	}
	if _, err := chooseRun(".", runs, "exp_b"); err == nil || !strings.Contains(err.Error(), "names 2 runs") {
		t.Fatalf("ambiguous: %v", err)
	}
	if _, err := chooseRun(".", runs, "nope"); err == nil || !strings.Contains(err.Error(), "the runs are") {
		t.Fatalf("unknown: %v", err)
	}
}

// A pixelis run's tb/ is read from the run directory around it.
func TestPixelisTensorBoardDir(t *testing.T) {
	run := t.TempDir()
	put(t, filepath.Join(run, telemetry.StatusFile), []byte(`{"run":"r","phase":"rft","state":"done","step":5,"total_steps":5}`))
	put(t, filepath.Join(run, "tb", "events.out.tfevents.1.host"), nil)
	if f, err := Detect(filepath.Join(run, "tb")); err != nil || f != FormatPixelisTB {
		t.Fatalf("Detect: %q %v", f, err)
	}
	f := openTest(t, filepath.Join(run, "tb"), Options{}, time.Now())
	if f.Trainer() != "pixelis" || !strings.Contains(f.Note(), "showing the run") {
		t.Fatalf("trainer %s note %q", f.Trainer(), f.Note())
	}
}

// A long TensorBoard history is shown before it is read: the first update holds
// its newest step and a sample spanning the whole run, Loading says how far the
// full read is, and the history read in full then replaces the glance.
func TestLongHistoryGlanceThenFill(t *testing.T) {
	defer func(a, n, s, tail, fill int64) {
		glanceAbove, glanceSpans, glanceSpan, glanceTail, fillPerPoll = a, n, s, tail, fill
	}(glanceAbove, glanceSpans, glanceSpan, glanceTail, fillPerPoll)
	glanceAbove, glanceSpans, glanceSpan, glanceTail, fillPerPoll = 64<<10, 32, 1<<10, 2<<10, 64<<10
	dir := t.TempDir()
	var recs [][]byte
	const steps = 20000
	for s := range steps {
		for _, tag := range []string{"actor/entropy", "critic/score/mean", "custom/x"} {
			recs = append(recs, tbtest.Record(tbtest.Simple(1.7e9+float64(s), int64(s), tag, float64(s%97))))
		}
	}
	put(t, filepath.Join(dir, tb.FilePrefix+"1.host"), tbtest.Cat(recs...))
	f := openTest(t, dir, Options{MaxPoints: 1000}, time.Unix(1.7e9+steps, 0))
	var h history
	h.fold(f.Take())
	got := h.steps("reward/final/raw")
	if len(got) < 32 || got[0] > steps/16 || got[len(got)-1] != steps-1 || len(got) > steps/4 {
		t.Fatalf("glance: %d steps from %d to %d", len(got), got[0], got[len(got)-1])
	}
	if h.snap == nil || h.snap.Step != steps-1 {
		t.Fatalf("glance snapshot %+v", h.snap)
	}
	if done, total := f.Loading(); total == 0 || done >= total {
		t.Fatalf("loading %d of %d after the glance", done, total)
	}
	for polls := 0; f.loadingMore(); polls++ {
		if polls > 1000 {
			t.Fatal("the full read does not end")
		}
		f.poll()
	}
	u := f.Take()
	h.fold(u)
	got = h.steps("reward/final/raw")
	if !u.Reset || got[0] != 0 || got[len(got)-1] != steps-1 || len(got) > 1000 {
		t.Fatalf("after the full read: reset %v, %d steps from %d to %d", u.Reset, len(got), got[0], got[len(got)-1])
	}
	for _, s := range got {
		if h.values["reward/final/raw"][s] != float64(s%97) {
			t.Fatalf("step %d holds %v", s, h.values["reward/final/raw"][s])
		}
	}
}

// verl's settings reach the run view: the config its console log pretty-prints
// as it starts, or Hydra's config.yaml beside a JSONL log.
func TestVerlSettings(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "train.log"), []byte("(TaskRunner pid=7) {'actor_rollout_ref': {'actor': {'clip_ratio': 0.2,\n"+
		"(TaskRunner pid=7)                                  'ppo_epochs': 1}},\n"+
		"(TaskRunner pid=7)  'trainer': {'total_epochs': 15}}\n"+
		"(TaskRunner pid=7) step:1 - critic/score/mean:0.5\n"))
	f, _ := openDir(t, dir, time.Now())
	if s := f.Settings(); !strings.Contains(s, "'clip_ratio': 0.2,") || !strings.Contains(s, "'total_epochs': 15}}") || strings.Contains(s, "step:1") {
		t.Fatalf("console settings %q", s)
	}
	dir = t.TempDir()
	put(t, filepath.Join(dir, "logs", "metrics.jsonl"), []byte(`{"step": 1, "data": {"reward_extra_info/acc/mean": 0.5, "reward_extra_info/format": 1}}`+"\n"))
	put(t, filepath.Join(dir, ".hydra", "config.yaml"), []byte("trainer:\n  total_epochs: 3\n"))
	f, h := openDir(t, filepath.Join(dir, "logs", "metrics.jsonl"), time.Now())
	if s := f.Settings(); !strings.Contains(s, "total_epochs: 3") {
		t.Fatalf("hydra settings %q", s)
	}
	// reward_extra_info components fill the reward pane without a --map file.
	if h.values["reward/acc/raw"][1] != 0.5 || h.values["reward/format/raw"][1] != 1 {
		t.Fatalf("values %v", h.values)
	}
}

// A TensorBoard run's settings reach the run view: the hyperparameters of a session
// start, in the run's own file (Lightning) or in a subdirectory of the run
// (SummaryWriter.add_hparams), and the Trainer's arguments its TensorBoardCallback
// writes as the text "args"; their max_steps is the run's step budget, and the
// Trainer's end-of-training log ends the run.
func TestTensorBoardSettings(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "runs", "May28_19-22-17_host")
	args := `{"output_dir": "out", "max_steps": 3, "learning_rate": 5e-06, "lr_scheduler_kwargs": {}, "report_to": ["tensorboard"]}`
	put(t, filepath.Join(run, tb.FilePrefix+"1748457577.host.1.0"), tbtest.Records(
		tbtest.Version(1),
		tbtest.SummaryEvent(1, 0, tbtest.TextValue("args", args), tbtest.TextValue("model_config", `{"model_type": "qwen2"}`)),
		tbtest.SummaryEvent(1, 0, tbtest.TextValue("notes", "plain prose, not settings")),
		tbtest.SummaryEvent(1, 0, tbtest.HParamsValue(tbtest.HParam{Name: "beta", Value: 0.1}, tbtest.HParam{Name: "loss_type", Value: "sigmoid"})),
		tbtest.Simple(2, 1, "train/loss", 0.69), tbtest.Simple(3, 2, "train/loss", 0.6), tbtest.Simple(4, 3, "train/loss", 0.5),
	))
	put(t, filepath.Join(run, "1748457600.123", tb.FilePrefix+"1748457600.host.1.1"), tbtest.Records(
		tbtest.Version(5),
		tbtest.SummaryEvent(5, 0, tbtest.HParamsExperimentValue("seed")),
		tbtest.SummaryEvent(5, 0, tbtest.HParamsValue(tbtest.HParam{Name: "seed", Value: 3407.0}, tbtest.HParam{Name: "bf16", Value: true})),
	))
	f := openTest(t, filepath.Join(root, "runs"), Options{Run: "May28_19-22-17_host"}, time.Unix(1e9, 0))
	var h history
	h.fold(f.Take())
	s := f.Settings()
	for _, want := range []string{
		"[args, a text in the event files]\nlearning_rate = 5e-06\nlr_scheduler_kwargs = {}\nmax_steps = 3\noutput_dir = \"out\"\nreport_to = [\"tensorboard\"]",
		"[model_config, a text in the event files]\nmodel_type = \"qwen2\"",
		"seed = 3407", "bf16 = true",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("settings lack %q:\n%s", want, s)
		}
	}
	// The run's own session start and its subdirectory's, merged.
	if !strings.HasPrefix(s, "[hparams, from the event files]\nbeta = 0.1\nbf16 = true\nloss_type = \"sigmoid\"\nseed = 3407\n\n") || strings.Contains(s, "prose") {
		t.Errorf("settings:\n%s", s)
	}
	if h.snap == nil || h.snap.TotalSteps != 3 || h.snap.State != StateIdle {
		t.Fatalf("snapshot %+v", h.snap)
	}
	// train() ends: the Trainer logs train_runtime, and the run is done.
	fh, err := os.OpenFile(filepath.Join(run, tb.FilePrefix+"1748457577.host.1.0"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(tbtest.Records(tbtest.Simple(6, 3, "train/train_runtime", 120.5, "train/train_loss", 0.6))); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	f.poll()
	h.fold(f.Take())
	if h.snap.State != telemetry.StateDone {
		t.Fatalf("state %s after train() ended", h.snap.State)
	}
}
