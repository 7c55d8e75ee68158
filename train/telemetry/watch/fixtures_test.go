package watch

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pixelis/pixelis/train/telemetry/tb"
	"github.com/pixelis/pixelis/train/telemetry/tb/tbtest"
)

var update = flag.Bool("update", false, "rewrite testdata/ from the fixture generators")

// The fixture runs under testdata/ are written by the generators below, which build
// event files with tbtest (from the TFRecord and protobuf specifications) and
// trainer_state.json in the shape transformers' TrainerState.save_to_json writes
// (json.dumps(asdict(state), indent=2, sort_keys=True)). `go test -run Fixtures
// -update` rewrites them.
//
//	testdata/trl   a TRL GRPOTrainer output directory, report_to="tensorboard",
//	               6 steps planned, logged every step, evaluated at step 4,
//	               checkpoints at steps 2 and 4, the event file at step 6
//	testdata/verl  verl's tensorboard_log/<project>/<experiment>/ for 6 steps,
//	               validating before training and every 3 steps
const (
	trlFixture  = "testdata/trl"
	verlFixture = "testdata/verl"
	verlRun     = "tensorboard_log/pixelis_grpo/qwen2_5_vl_3b_grpo"
	fixtureWall = 1_700_000_000.0
)

// trlLog is the metrics GRPOTrainer logs at step i (TRL 0.2x names) and, at
// step 4, its evaluation's.
func trlLog(i int) map[string]any {
	x := float64(i)
	m := map[string]any{
		"clip_ratio/high_max":                     0.0,
		"clip_ratio/high_mean":                    0.0,
		"clip_ratio/low_mean":                     0.0,
		"clip_ratio/low_min":                      0.0,
		"clip_ratio/region_mean":                  0.0625 * x,
		"completions/clipped_ratio":               0.125,
		"completions/max_length":                  256.0,
		"completions/mean_length":                 96 + 8*x,
		"completions/mean_terminated_length":      90 + 8*x,
		"completions/min_length":                  12.0,
		"entropy":                                 0.75 - 0.0625*x,
		"epoch":                                   0.125 * x,
		"frac_reward_zero_std":                    0.5 - 0.0625*x,
		"grad_norm":                               0.5 + 0.25*x,
		"kl":                                      0.001953125 * x,
		"learning_rate":                           1e-06 * (7 - x) / 6,
		"loss":                                    0.015625 * x,
		"num_tokens":                              4096 * x,
		"reward":                                  0.25 + 0.125*x,
		"reward_std":                              0.375,
		"rewards/accuracy_reward/mean":            0.125 * x,
		"rewards/accuracy_reward/std":             0.25,
		"rewards/format_reward/mean":              0.25,
		"rewards/format_reward/std":               0.125,
		"sampling/importance_sampling_ratio/mean": 1.0,
		"step":      i,
		"step_time": 12.5,
	}
	return m
}

func trlEvalLog(i int) map[string]any {
	return map[string]any{
		"epoch":                             0.125 * float64(i),
		"eval_loss":                         0.03125,
		"eval_reward":                       0.625,
		"eval_rewards/accuracy_reward/mean": 0.5,
		"eval_runtime":                      30.5,
		"eval_samples_per_second":           4.0,
		"eval_steps_per_second":             0.5,
		"step":                              i,
	}
}

// trlHistory is log_history up to step n.
func trlHistory(n int) []map[string]any {
	var h []map[string]any
	for i := 1; i <= n; i++ {
		h = append(h, trlLog(i))
		if i == 4 {
			h = append(h, trlEvalLog(i))
		}
	}
	return h
}

// trainerState is trainer_state.json as a Trainer saves it at global step n.
func trainerState(n, maxSteps int, history []map[string]any) []byte {
	st := map[string]any{
		"best_global_step":      nil,
		"best_metric":           nil,
		"best_model_checkpoint": nil,
		"epoch":                 0.125 * float64(n),
		"eval_steps":            4,
		"global_step":           n,
		"is_hyper_param_search": false,
		"is_local_process_zero": true,
		"is_world_process_zero": true,
		"log_history":           history,
		"logging_steps":         1,
		"max_steps":             maxSteps,
		"num_input_tokens_seen": 0,
		"num_train_epochs":      1,
		"save_steps":            2,
		"stateful_callbacks":    map[string]any{"TrainerControl": map[string]any{"args": map[string]any{"should_save": true, "should_training_stop": false}, "attributes": map[string]any{}}},
		"total_flos":            0.0,
		"train_batch_size":      8,
		"trial_name":            nil,
		"trial_params":          nil,
	}
	b, err := json.MarshalIndent(st, "", "  ") // keys sorted, as sort_keys=True
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// tbLogEvents is what TensorBoardCallback.on_log writes for one log_history entry:
// one add_scalar event per numeric key, under rewrite_logs's name, at the step.
func tbLogEvents(m map[string]any, wall float64) [][]byte {
	step := int64(m["step"].(int))
	var out [][]byte
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "step" {
			continue
		}
		out = append(out, tbtest.Simple(wall, step, HFLogName(k), toFloat(m[k])))
	}
	return out
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("%T", v))
}

// textEvent is add_text: a string tensor under the text plugin.
func textEvent(wall float64, step int64, tag, text string) []byte {
	tensor := tbtest.Cat(tbtest.VarintField(1, 7), tbtest.Shape(), tbtest.BytesField(8, []byte(text)))
	return tbtest.SummaryEvent(wall, step, tbtest.TensorValue(tag, tensor, "text"))
}

// writeTRLFixture writes a TRL output directory, live at step upTo of 6.
func writeTRLFixture(t testing.TB, dir string, upTo int) {
	events := [][]byte{tbtest.Version(fixtureWall), textEvent(fixtureWall, 0, "args", `{"output_dir": "trl", "report_to": ["tensorboard"]}`)}
	for _, m := range trlHistory(upTo) {
		events = append(events, tbLogEvents(m, fixtureWall+10*float64(m["step"].(int)))...)
	}
	put(t, filepath.Join(dir, "runs", "Nov14_22-13-20_gpu-node-0", tb.FilePrefix+"1700000000.gpu-node-0.4242.0"), tbtest.Records(events...))
	for _, ck := range []int{2, 4} {
		if ck <= upTo {
			put(t, filepath.Join(dir, fmt.Sprintf("checkpoint-%d", ck), trainerStateFile), trainerState(ck, 6, trlHistory(ck)))
		}
	}
}

// verlMetrics is what RayPPOTrainer logs at step i (>= 1).
func verlMetrics(i int) map[string]float64 {
	x := float64(i)
	return map[string]float64{
		"actor/entropy":              0.5 - 0.03125*x,
		"actor/grad_norm":            0.25 + 0.0625*x,
		"actor/kl_coef":              0.001,
		"actor/kl_loss":              0.0009765625 * x,
		"actor/lr":                   1e-06,
		"actor/pg_clipfrac":          0.0078125 * x,
		"actor/pg_clipfrac_lower":    0.0,
		"actor/pg_loss":              -0.015625 * x,
		"actor/ppo_kl":               0.0001,
		"critic/advantages/mean":     0.0,
		"critic/returns/mean":        0.0,
		"critic/rewards/mean":        0.125*x - 0.0009765625*x,
		"critic/score/max":           1.0,
		"critic/score/mean":          0.125 * x,
		"critic/score/min":           0.0,
		"perf/throughput":            1250 + 10*x,
		"perf/time_per_step":         42.5,
		"prompt_length/mean":         320.0,
		"response_length/clip_ratio": 0.0625,
		"response_length/max":        1024.0,
		"response_length/mean":       400 + 16*x,
		"timing_s/adv":               0.25,
		"timing_s/gen":               30.5,
		"timing_s/old_log_prob":      2.5,
		"timing_s/ref":               2.5,
		"timing_s/reward":            1.5,
		"timing_s/step":              42.5,
		"timing_s/update_actor":      5.25,
		"training/epoch":             0,
		"training/global_step":       x,
	}
}

// verlVal is what validation logs at step i: data source hiyouga/geometry3k, 4
// samples per prompt, a reward variable.
func verlVal(i int) map[string]float64 {
	p := 0.25 + 0.0625*float64(i)
	return map[string]float64{
		"val-aux/hiyouga/geometry3k/reward/best@2/mean":  p + 0.125,
		"val-aux/hiyouga/geometry3k/reward/std@4":        0.375,
		"val-aux/num_turns/mean":                         2,
		"val-core/hiyouga/geometry3k/reward/best@4/mean": p + 0.25,
		"val-core/hiyouga/geometry3k/reward/mean@4":      p,
	}
}

// writeVerlFixture writes verl's TensorBoard directory up to step upTo of 6.
func writeVerlFixture(t testing.TB, dir string, upTo int) {
	events := [][]byte{tbtest.Version(fixtureWall)}
	add := func(step int, m map[string]float64) {
		for _, k := range slices.Sorted(maps.Keys(m)) { // _TensorboardAdapter.log: add_scalar per key
			events = append(events, tbtest.Simple(fixtureWall+40*float64(step), int64(step), k, m[k]))
		}
	}
	add(0, verlVal(0)) // val_before_train, at global step 0
	for i := 1; i <= upTo; i++ {
		m := verlMetrics(i)
		if i%3 == 0 {
			maps.Copy(m, verlVal(i))
		}
		add(i, m)
	}
	put(t, filepath.Join(dir, filepath.FromSlash(verlRun), tb.FilePrefix+"1700000000.gpu-node-0.1234.0"), tbtest.Records(events...))
}

func put(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFixturesUpToDate checks testdata/ against the generators (-update rewrites it).
func TestFixturesUpToDate(t *testing.T) {
	for _, fx := range []struct {
		dir   string
		write func(testing.TB, string, int)
	}{{trlFixture, writeTRLFixture}, {verlFixture, writeVerlFixture}} {
		if *update {
			if err := os.RemoveAll(fx.dir); err != nil {
				t.Fatal(err)
			}
			fx.write(t, fx.dir, 6)
			continue
		}
		want := t.TempDir()
		fx.write(t, want, 6)
		if a, b := treeOf(t, want), treeOf(t, fx.dir); !maps.EqualFunc(a, b, bytes.Equal) {
			t.Errorf("%s differs from its generator: run go test -run Fixtures -update\nhave %v\nwant %v",
				fx.dir, slices.Sorted(maps.Keys(b)), slices.Sorted(maps.Keys(a)))
		}
	}
}

func treeOf(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
