package tui

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry/tb"
	"github.com/pixelis/pixelis/train/telemetry/tb/tbtest"
	"github.com/pixelis/pixelis/train/telemetry/watch"
)

// writeRun writes files (path → contents) into a new directory with their
// modification time fixed, and returns it.
func writeRun(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	when := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(path, when, when)
	}
	return dir
}

// watchDir is the console of `pixelis watch` on dir at w×h.
func watchDir(t *testing.T, dir string, w, h int) *harness {
	t.Helper()
	feed, err := watch.Open(context.Background(), dir, watch.Options{Interval: time.Hour, Now: func() time.Time { return corpusClock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { feed.Close() })
	hs := newHarness(t, newFakeFeed(false), Options{Color: "never", Role: RoleWatch, RunDir: "run"}, w, h)
	hs.m.feed = feed
	hs.send(feedMsg(feed.Take()))
	return hs
}

// A DPO run of TRL's DPOTrainer, built from the names the trainer logs (no
// published DPO log with a licence that permits copying it was found).
func dpoState() string {
	var e []string
	for s := 1; s <= 40; s++ {
		x := float64(s)
		e = append(e, fmt.Sprintf(`{"step": %d, "loss": %g, "rewards/chosen": %g, "rewards/rejected": %g, "rewards/margins": %g, "rewards/accuracies": %g, "logps/chosen": %g, "learning_rate": 5e-07}`,
			s, 0.6931-0.002*x, 0.0004*x, -0.0003*x, 0.0007*x, 0.5+0.005*x, -310+x))
		if s%20 == 0 {
			e = append(e, fmt.Sprintf(`{"step": %d, "eval_loss": %g, "eval_rewards/margins": %g, "eval_rewards/accuracies": %g}`, s, 0.69-0.001*x, 0.0006*x, 0.55))
		}
	}
	return `{"global_step": 40, "max_steps": 40, "train_batch_size": 4, "eval_steps": 20, "log_history": [` + strings.Join(e, ",\n") + `]}`
}

// A preference run gets its own pane: chosen, rejected, margin and accuracy to 4
// significant digits (a margin of 0.0028 shows as such, not as 0.00), the eval
// set's beside them, and no reward bars.
func TestPreferenceScreen(t *testing.T) {
	dir := writeRun(t, map[string]string{"trainer_state.json": dpoState()})
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		hs := watchDir(t, dir, sz[0], sz[1])
		frame := hs.frame()
		checkGeometry(t, frame, sz[0], sz[1])
		golden(t, fmt.Sprintf("watch_dpo_%dx%d", sz[0], sz[1]), frame)
		first := strings.Join(hs.m.pane(paneReward), "\n")
		for _, want := range []string{"Preference", "chosen", "rejected", "margin", "+0.028", "accuracy", "0.7", "+0.024"} {
			if !strings.Contains(first, want) {
				t.Errorf("%dx%d: preference pane lacks %q:\n%s", sz[0], sz[1], want, first)
			}
		}
		if strings.ContainsAny(first, "█▌▐") {
			t.Errorf("preference pane draws bars:\n%s", first)
		}
		if sz[0] >= 120 && !strings.Contains(frame, "trl · preference") {
			t.Errorf("header does not say preference:\n%s", frame)
		}
	}
}

// An SFT run's first pane shows its loss and, as its validation, the eval loss
// with the lowest so far.
func TestSFTScreenOfAWatchedRun(t *testing.T) {
	hs := corpusHarness(t, "hf-sft-nlcli", 120, 40)
	first := strings.Join(hs.m.pane(paneReward), "\n")
	for _, want := range []string{"Training · SFT", "loss", "eval loss", "lowest 0.1382 at step 250"} {
		if !strings.Contains(first, want) {
			t.Errorf("SFT pane lacks %q:\n%s", want, first)
		}
	}
	if kpi := strings.Join(hs.m.pane(paneKPI), "\n"); !strings.Contains(kpi, "eval loss") {
		t.Errorf("KPI pane lacks the eval loss:\n%s", kpi)
	}
}

// verlSFTLog is a console log of verl's SFT trainer (verl/trainer/
// fsdp_sft_trainer.py) as its lines come: the budget it prints, each step's
// metrics glued to the tqdm bar that shares the stream, the validation loss every
// 10 steps on a line of its own, and the end. The values are made here (the one
// published log of this trainer found carries no licence that permits copying it):
// 40 steps, lr 1e-5 after 4 warmup steps then cosine, logged as train/lr(1e-3).
// It returns the log and what each metric holds at each step, in pixelis's names
// and units.
func verlSFTLog() (string, map[string]map[int]float64) {
	const steps, perEpoch, warmup, lr = 40, 20, 4, 1e-5
	want := map[string]map[int]float64{"policy/loss": {}, "policy/lr": {}, "val/loss": {}}
	var b strings.Builder
	fmt.Fprintf(&b, "Number of steps/epoch %d, number of epochs %d, total number of steps %d\n", perEpoch, steps/perEpoch, steps)
	for s := 1; s <= steps; s++ {
		done := (s - 1) % perEpoch
		fmt.Fprintf(&b, "Epoch %d/%d: %3d%%|%-10s| %d/%d [00:%02d<00:%02d,  6.50s/it]", (s-1)/perEpoch+1, steps/perEpoch,
			100*done/perEpoch, strings.Repeat("█", 10*done/perEpoch), done, perEpoch, done, perEpoch-done)
		rate := lr * float64(s) / warmup // the warmup, then a cosine to 0
		if s > warmup {
			rate = lr * 0.5 * (1 + math.Cos(math.Pi*float64(s-warmup)/float64(steps-warmup)))
		}
		loss := strconv.FormatFloat(1.2*math.Exp(-float64(s)/10)+0.05, 'g', -1, 64)
		lr3 := strconv.FormatFloat(rate*1e3, 'g', -1, 64)
		fmt.Fprintf(&b, "step:%d - train/loss:%s - train/lr(1e-3):%s\n", s, loss, lr3)
		want["policy/loss"][s], _ = strconv.ParseFloat(loss, 64)
		x, _ := strconv.ParseFloat(lr3, 64)
		want["policy/lr"][s] = x * 1e-3
		if s%10 == 0 {
			val := strconv.FormatFloat(1.3*math.Exp(-float64(s)/12)+0.07, 'g', -1, 64)
			fmt.Fprintf(&b, "step:%d - val/loss:%s\n", s, val)
			want["val/loss"][s], _ = strconv.ParseFloat(val, 64)
		}
	}
	fmt.Fprintf(&b, "Saving checkpoint to: ./models/sft/global_step_%d\nFinal validation metrics: {'val/loss': %v}\n", steps, want["val/loss"][steps])
	return b.String(), want
}

// A verl SFT run (its console log): verl's SFT, its budget and end, its loss and
// eval loss, its learning rate as the rate (not in thousandths), every value on
// screen the log's.
func TestVerlSFTScreen(t *testing.T) {
	text, want := verlSFTLog()
	dir := writeRun(t, map[string]string{"sft.log": text})
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		w, h := sz[0], sz[1]
		hs := watchDir(t, dir, w, h)
		frame := hs.frame()
		checkGeometry(t, frame, w, h)
		golden(t, fmt.Sprintf("watch_verl_sft_%dx%d", w, h), frame)
		checkValues(t, hs.m.metrics, want)
		checkKPIValues(t, hs, frame)
		head := strings.Split(ansi.Strip(frame), "\n")[0]
		if !strings.Contains(head, "step 40/40") || !strings.Contains(head, "done") || (w >= 120 && !strings.Contains(head, "verl · SFT")) {
			t.Errorf("%dx%d header: %q", w, h, head)
		}
		if kpi := strings.Join(hs.m.pane(paneKPI), "\n"); w >= 120 && !strings.Contains(kpi, "0–1.0e-05") {
			t.Errorf("the lr chart's range is not the rate's (1e-5 at its peak):\n%s", kpi)
		}
		first := strings.Join(hs.m.pane(paneReward), "\n")
		for _, s := range []string{"Training · SFT", "loss", "eval loss", "lowest 0.1164 at step 40"} {
			if !strings.Contains(first, s) {
				t.Errorf("%dx%d: SFT pane lacks %q:\n%s", w, h, s, first)
			}
		}
	}
}

// a lists every metric of a watched run by its full name; i shows the
// trainer's settings, and a step without a known budget as a plain step.
func TestWatchOverlays(t *testing.T) {
	hs := corpusHarness(t, "trl-grpo-llama-gsm8k", 120, 40)
	hs.press("a")
	frame := ansi.Strip(hs.frame())
	if !strings.Contains(frame, "All metrics") || !strings.Contains(frame, "reward/correctness_reward_func/raw") {
		t.Fatalf("a:\n%s", frame)
	}
	hs.press("a", "i")
	frame = ansi.Strip(hs.frame())
	for _, want := range []string{"The trainer's settings", "max_steps = 250", "train_batch_size", "RL run · step 250/250"} {
		if !strings.Contains(frame, want) {
			t.Errorf("i lacks %q:\n%s", want, frame)
		}
	}
	hs = corpusHarness(t, "verl-ppo-console-notebook", 120, 40)
	hs.press("i")
	if frame := ansi.Strip(hs.frame()); !strings.Contains(frame, "RL run · step 60 ") || strings.Contains(frame, "60/0") {
		t.Errorf("i with no step budget:\n%s", frame)
	}
}

// i on a TensorBoard run shows the settings its event files hold: the TRL
// DPOTrainer's arguments, which its TensorBoardCallback wrote as the text "args".
// Their max_steps is the run's budget, and its end-of-training log makes it done.
func TestWatchTensorBoardSettings(t *testing.T) {
	hs := corpusHarness(t, "trl-dpo-tensorboard", 120, 40)
	if head := strings.Split(ansi.Strip(hs.frame()), "\n")[0]; !strings.Contains(head, "step 40/40") || !strings.Contains(head, "done") {
		t.Errorf("header: %q", head)
	}
	hs.press("i")
	frame := ansi.Strip(hs.frame())
	for _, want := range []string{"The trainer's settings", "[args, a text in the event files]", "beta = 0.1", "preference run · step 40/40"} {
		if !strings.Contains(frame, want) {
			t.Errorf("i lacks %q:\n%s", want, frame)
		}
	}
	hs.press("/")
	for _, r := range "loss_type" {
		hs.press(string(r))
	}
	hs.press("enter")
	if frame := ansi.Strip(hs.frame()); !strings.Contains(frame, `loss_type = "sigmoid"`) {
		t.Errorf("i searched for loss_type:\n%s", frame)
	}
}

// A directory of several TensorBoard runs says on the main screen which one is
// shown and that there are others.
func TestWatchSaysWhichRun(t *testing.T) {
	rec := func(tag string) string {
		return string(tbtest.Records(tbtest.Version(1), tbtest.Simple(1.7e9, 1, tag, 0.5), tbtest.Simple(1.7e9+1, 2, tag, 0.6)))
	}
	dir := writeRun(t, map[string]string{
		"proj/a/" + tb.FilePrefix + "1.host": rec("critic/score/mean"),
		"proj/b/" + tb.FilePrefix + "2.host": rec("critic/score/mean"),
		"proj/c/" + tb.FilePrefix + "3.host": rec("critic/score/mean"),
	})
	hs := watchDir(t, dir, 120, 40)
	if head := strings.Split(ansi.Strip(hs.frame()), "\n")[0]; !strings.Contains(head, "of 3 (--run picks)") {
		t.Fatalf("header: %q", head)
	}
}

// However many reward functions a run has, the total's row stays in the pane,
// and the ones that do not fit are counted.
func TestManyRewardComponents(t *testing.T) {
	var e []string
	for s := 1; s <= 3; s++ {
		row := fmt.Sprintf(`"step": %d, "reward": %d`, s, s)
		for f := range 14 {
			row += fmt.Sprintf(`, "rewards/func_%d/mean": %g`, f, float64(f)/10)
		}
		e = append(e, "{"+row+"}")
	}
	dir := writeRun(t, map[string]string{"trainer_state.json": `{"global_step": 3, "max_steps": 3, "log_history": [` + strings.Join(e, ",") + `]}`})
	hs := watchDir(t, dir, 120, 40)
	first := hs.m.pane(paneReward)
	joined := strings.Join(first, "\n")
	if !strings.Contains(joined, "more · a lists every metric") || !strings.Contains(joined, "reward ") {
		t.Fatalf("reward pane:\n%s", joined)
	}
}
