package pythonclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/pyenv"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/analysis"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
)

// observations is how many observation rows the torch module and PEFT are compared on.
const observations = 1000

// metaAdapters is the key of the logits file's metadata pairing each stage adapter with the
// checkpoint saved at its export (adapter directory name → checkpoint name).
const metaAdapters = "adapters"

// TestCheckpointsUnderTorchAndPEFT hands the files of a real run (SFT, RFT with PPO through
// three reward stages, TTRL) to the safetensors, torch and PEFT of the pinned TRL stack, and the files
// those libraries write back to pixelis (tests/stack_trl/check_checkpoints.py):
//
//   - every .safetensors file opens with safe_open (pt and np), both load_file, and a memory
//     map with each tensor aligned to its element size;
//   - pixelis.torch_policy's module gives every checkpoint's logits on 1,000 observations of
//     validation episodes to |Δ| ≤ 1e-5 (also for a checkpoint without the architecture record
//     of policy.safetensors' metadata), and PEFT's PeftModel.from_pretrained, on the base the
//     adapter names, gives the logits of the checkpoint saved with each stage adapter;
//   - files the library writes (torch and numpy save_file, a policy.safetensors re-saved by
//     torch, an adapter re-saved by PEFT, one PEFT made with a LoraConfig of its own) load in
//     pixelis, the last with PEFT's logits, and dtypes it cannot use fail naming the tensor and
//     the dtype;
//   - the snippet of docs/checkpoints.md runs as written.
func TestCheckpointsUnderTorchAndPEFT(t *testing.T) {
	readSources(t)
	py := pyenv.Python(t, "trl")
	site := install(t, py, t.TempDir())
	// PPO and TTRL, so that the run writes every file a checkpoint can hold (critic.safetensors,
	// TTRL's memory and EMA anchor).
	// Two trunk layers; head's adapter of rank 3 among rank-2 ones, so the export has a rank_pattern.
	cfg, err := configs.Resolve("smoke", []string{"rft.estimator=ppo", "policy.hidden=[24,16]", "policy.lora_ranks.head=3"})
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "run")
	r, err := train.New(cfg, train.Options{RunDir: run, Phases: []string{train.PhaseSFT, train.PhaseRFT, train.PhaseTTRL}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	logits := filepath.Join(t.TempDir(), "logits.safetensors")
	writeLogits(t, cfg, run, logits)
	writeEdgeCases(t, filepath.Dir(logits))
	out := t.TempDir()

	ctx, cancel := context.WithTimeout(context.Background(), pythonLimit(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("tests", "stack_trl", "check_checkpoints.py"), run, logits, out,
		filepath.Join("..", "..", "docs", "checkpoints.md"))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+site, "PYTHONDONTWRITEBYTECODE=1", "HF_HUB_OFFLINE=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("check_checkpoints.py: %v\n%s", err, b)
	}
	t.Logf("%s", b)

	readLibraryFiles(t, out)
	readResavedCheckpoint(t, cfg, run, out)
	readPEFTAdapter(t, run, out)
	playPEFTAdapter(t, cfg, run, logits, out)
}

func pythonLimit(t *testing.T) time.Duration {
	limit := 10 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = time.Until(d) - 30*time.Second
	}
	return limit
}

// writeLogits writes the observations of validation episodes (the expert's, state after state)
// and pixelis's logits of every checkpoint of the run on them, with the adapter-to-checkpoint
// pairs in the metadata.
func writeLogits(t *testing.T, cfg *configs.Config, run, path string) {
	envCfg, err := setup.EnvConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obs := episodeObservations(envCfg, observations)
	tensors := []ckpt.Tensor{{Name: "obs", Shape: []int{observations, env.ObsDim}, Data: obs}}
	dirs, err := filepath.Glob(filepath.Join(run, "checkpoints", "*", ckpt.ManifestFile))
	if err != nil || len(dirs) < 4 {
		t.Fatalf("checkpoints of the run: %v, %v", dirs, err)
	}
	type saved struct {
		name string
		m    ckpt.Manifest
	}
	var ckpts []saved
	for _, manifest := range dirs {
		dir := filepath.Dir(manifest)
		m, err := ckpt.Inspect(dir)
		if err != nil {
			t.Fatal(err)
		}
		ckpts = append(ckpts, saved{filepath.Base(dir), m})
		p, err := setup.LoadPolicy(cfg, dir)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, observations*p.Config().Actions)
		policy.NewInference(p).Logits(obs, observations, out)
		tensors = append(tensors, ckpt.Tensor{Name: "logits/" + filepath.Base(dir), Shape: []int{observations, p.Config().Actions}, Data: out})
	}
	adapters, err := filepath.Glob(filepath.Join(run, "adapters", "*"))
	if err != nil || len(adapters) != 3 {
		t.Fatalf("adapters of the run: %v, %v", adapters, err)
	}
	pairs := map[string]string{}
	for _, dir := range adapters {
		a, err := ckpt.ReadAdapter(dir)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ckpts, func(c saved) bool {
			return c.m.Phase == ckpt.PhaseRFT && c.m.Step == a.Step && c.m.Kind != ckpt.KindPeriodic
		})
		if i < 0 {
			t.Fatalf("%s (RFT step %d): no stage or final checkpoint of that step", dir, a.Step)
		}
		pairs[filepath.Base(dir)] = ckpts[i].name
	}
	js, err := json.Marshal(pairs)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ckpt.WriteSafetensors(f, tensors, map[string]string{metaAdapters: string(js)}); err != nil {
		t.Fatal(err)
	}
}

// writeEdgeCases writes, beside the logits, files of shapes a run writes only sometimes: no
// tensors at all, empty tensors of each type, scalars, and one byte before wider types.
func writeEdgeCases(t *testing.T, dir string) {
	files := map[string][]ckpt.Tensor{
		"edge_no_tensors.safetensors": nil,
		"edge_empty.safetensors": {
			{Name: "f", Shape: []int{0}, Data: []float32{}},
			{Name: "i", DType: ckpt.I64, Shape: []int{0, 3}, Raw: []byte{}},
			{Name: "u", DType: ckpt.U8, Shape: []int{2, 0}, Raw: []byte{}},
		},
		"edge_mixed.safetensors": {
			{Name: "a", DType: ckpt.U8, Shape: []int{1}, Raw: []byte{9}},
			{Name: "b", Shape: []int{}, Data: []float32{1.5}},
			ckpt.Int64Tensor("c", []int{}, []int64{-3}),
			{Name: "d", Shape: []int{3}, Data: []float32{1, 2, 3}},
		},
	}
	for name, ts := range files {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := ckpt.WriteSafetensors(f, ts, map[string]string{"case": name}); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// episodeObservations plays validation tasks with the expert's actions and keeps every state's
// observation until it has n.
func episodeObservations(cfg env.Config, n int) []float32 {
	obs := make([]float32, 0, n*env.ObsDim)
	row := make([]float32, env.ObsDim)
	ep := env.NewEpisode(cfg)
	for i := 0; len(obs) < n*env.ObsDim; i++ {
		task := env.Generate(cfg, env.Val, i)
		acts := env.Solve(task)
		ep.Reset(task)
		for k := 0; len(obs) < n*env.ObsDim; k++ {
			ep.Observe(row)
			obs = append(obs, row...)
			if k == len(acts) || ep.Done() {
				break
			}
			ep.Step(acts[k])
		}
	}
	return obs
}

// readLibraryFiles reads what safetensors itself wrote: torch's and numpy's save_file with
// F32, I64 and U8 tensors (a scalar among them) and metadata, and one file per dtype pixelis
// does not use, which must fail naming the tensor and its dtype.
func readLibraryFiles(t *testing.T, out string) {
	for _, name := range []string{"torch.safetensors", "numpy.safetensors"} {
		ts, meta, err := ckpt.ReadSafetensorsFile(filepath.Join(out, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if meta["written_by"] != "safetensors" {
			t.Errorf("%s: metadata %v", name, meta)
		}
		got := map[string]ckpt.Tensor{}
		for _, x := range ts {
			got[x.Name] = x
		}
		f32, i64, u8, scalar := got["f32"], got["i64"], got["u8"], got["scalar"]
		if !slices.Equal(f32.Shape, []int{2, 3}) || !slices.Equal(f32.Data, []float32{0, 0.5, 1, 1.5, 2, 2.5}) {
			t.Errorf("%s: f32 %+v", name, f32)
		}
		if v, err := i64.Int64s(); err != nil || !slices.Equal(v, []int64{1, -2, math.MaxInt64}) {
			t.Errorf("%s: i64 %v %v", name, v, err)
		}
		if u8.DType != ckpt.U8 || string(u8.Raw) != "\x01\x02\x03\x04\x05" {
			t.Errorf("%s: u8 %+v", name, u8)
		}
		if len(scalar.Shape) != 0 || len(scalar.Data) != 1 || scalar.Data[0] != 7.5 {
			t.Errorf("%s: scalar %+v", name, scalar)
		}
	}
	for _, dtype := range []string{"F16", "BF16", "F64", "I32", "BOOL"} {
		_, _, err := ckpt.ReadSafetensorsFile(filepath.Join(out, "dtype_"+dtype+".safetensors"))
		if !errors.Is(err, ckpt.ErrDType) || !strings.Contains(err.Error(), `"x" is `+dtype+",") {
			t.Errorf("%s tensor: error %v, want ErrDType naming the tensor \"x\" and %s", dtype, err, dtype)
		}
	}
}

// readResavedCheckpoint loads rft_final with its policy.safetensors re-saved by
// safetensors.torch.save_file (the manifest's size and hash brought up to date) and checks
// the policy has the same weights, bit for bit; re-saved in float16 it is refused for the type.
func readResavedCheckpoint(t *testing.T, cfg *configs.Config, run, out string) {
	want, err := setup.LoadPolicy(cfg, filepath.Join(run, "checkpoints", rundir.RFTFinal))
	if err != nil {
		t.Fatal(err)
	}
	got, err := setup.LoadPolicy(cfg, filepath.Join(out, "checkpoint"))
	if err != nil {
		t.Fatalf("a checkpoint whose policy.safetensors safetensors.torch wrote: %v", err)
	}
	wt, gt := want.Tensors(), got.Tensors()
	for i := range wt {
		if wt[i].Name != gt[i].Name || !slices.Equal(wt[i].Data, gt[i].Data) {
			t.Errorf("%s: differs after torch re-saved it", wt[i].Name)
		}
	}
	// The same in float16: refused for its type, not as damage.
	_, err = setup.LoadPolicy(cfg, filepath.Join(out, "checkpoint_f16"))
	if err == nil || !strings.Contains(err.Error(), "unreadable type") || !strings.Contains(err.Error(), "is F16, a type pixelis does not read") {
		t.Errorf("a checkpoint whose policy torch re-saved in float16: error %v, want it refused for the F16 type", err)
	}
}

// readPEFTAdapter reads the stage adapter PEFT's save_pretrained wrote back and compares it
// with pixelis's export.
func readPEFTAdapter(t *testing.T, run, out string) {
	want, err := ckpt.ReadAdapter(filepath.Join(run, "adapters", "rft_adapters_full"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ckpt.ReadAdapter(filepath.Join(out, "peft"))
	if err != nil {
		t.Fatalf("the adapter PEFT saved: %v", err)
	}
	if len(got.Layers) != len(want.Layers) {
		t.Fatalf("PEFT's save has %d layers, pixelis's export %d", len(got.Layers), len(want.Layers))
	}
	for i, w := range want.Layers {
		g := got.Layers[i]
		if g.Module != w.Module || g.Rank != w.Rank || g.Alpha != w.Alpha || g.In != w.In || g.Out != w.Out ||
			!slices.Equal(g.A, w.A) || !slices.Equal(g.B, w.B) {
			t.Errorf("layer %s: PEFT's save %s", w.Module, describeLayer(g))
		}
	}
}

func describeLayer(l ckpt.LoRALayer) string {
	return fmt.Sprintf("%s rank %d alpha %g in %d out %d", l.Module, l.Rank, l.Alpha, l.In, l.Out)
}

// playPEFTAdapter loads, as pixelis analyze loads an adapter, the one PEFT made with a
// config of its own (a regular expression for target_modules, pattern keys for rank and alpha)
// and compares the policy's logits with PEFT's.
func playPEFTAdapter(t *testing.T, cfg *configs.Config, run, logitsFile, out string) {
	l, err := analysis.Load(cfg, filepath.Join(run, "adapters", "peft_made"))
	if err != nil {
		t.Fatalf("the adapter PEFT made: %v", err)
	}
	ts, _, err := ckpt.ReadSafetensorsFile(logitsFile)
	if err != nil {
		t.Fatal(err)
	}
	named := func(name string) []float32 {
		return ts[slices.IndexFunc(ts, func(x ckpt.Tensor) bool { return x.Name == name })].Data
	}
	obs, base := named("obs"), named("logits/"+rundir.SFTFinal)
	peft, _, err := ckpt.ReadSafetensorsFile(filepath.Join(out, "peft_made_logits.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, len(peft[0].Data))
	policy.NewInference(l.Params).Logits(obs, observations, got)
	worst, changed := 0.0, 0.0
	for i, want := range peft[0].Data {
		worst = max(worst, math.Abs(float64(got[i]-want)))
		changed = max(changed, math.Abs(float64(base[i]-want)))
	}
	if changed < 1e-3 {
		t.Errorf("the adapter PEFT made changes the base's logits by only %g: the comparison cannot tell it applied", changed)
	}
	if worst > 1e-5 {
		t.Errorf("pixelis's logits with the adapter PEFT made differ from PEFT's by %g", worst)
	}
	t.Logf("adapter PEFT made, played by pixelis: max |Δ| %g", worst)
}
