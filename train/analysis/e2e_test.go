package analysis

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/telemetry"
)

// smokeRun makes a finished smoke run (SFT and RFT, all three adapter
// exports) in a temporary directory.
func smokeRun(t *testing.T) (*configs.Config, string) {
	t.Helper()
	cfg, err := configs.Resolve("smoke", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec, err := telemetry.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := train.New(cfg, train.Options{RunDir: dir, Phases: []string{train.PhaseSFT, train.PhaseRFT}, Sink: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a smoke run")
	}
	cfg, run := smokeRun(t)
	t.Run("adapter equals the checkpoint of the same step", func(t *testing.T) { adapterEqualsCheckpoint(t, cfg, run) })
	t.Run("analyze", func(t *testing.T) { analyzeModels(t, cfg, run) })
	t.Run("run", func(t *testing.T) { analyzeSmokeRun(t, cfg, run) })
	t.Run("moved run directory", func(t *testing.T) { movedRunDirectory(t, cfg, run) })
}

// adapterEqualsCheckpoint: the full-stage adapters applied to sft_final equal rft_final.
func adapterEqualsCheckpoint(t *testing.T, cfg *configs.Config, run string) {
	// The full-stage adapters are exported when RFT ends, as rft_final is
	// saved: base + adapters must give rft_final's policy exactly.
	fromAdapter, err := Load(cfg, filepath.Join(run, "adapters", "rft_adapters_full"))
	if err != nil {
		t.Fatal(err)
	}
	if fromAdapter.Source != SourceAdapter || fromAdapter.Base != filepath.Join(run, "checkpoints", "sft_final") {
		t.Errorf("loaded %+v", fromAdapter)
	}
	final, err := setup.LoadPolicy(cfg, filepath.Join(run, "checkpoints", rundir.RFTFinal))
	if err != nil {
		t.Fatal(err)
	}
	sft, err := setup.LoadPolicy(cfg, filepath.Join(run, "checkpoints", "sft_final"))
	if err != nil {
		t.Fatal(err)
	}
	if !sameTensors(fromAdapter.Params, final) {
		t.Error("sft_final + rft_adapters_full differs from rft_final")
	}
	if sameTensors(sft, final) {
		t.Error("RFT did not change the policy: the comparison above proves nothing")
	}
}

// analyzeModels: Analyze of a checkpoint and an adapter: every task, the same tasks, the same figures alone or beside another model, every output written.
func analyzeModels(t *testing.T, cfg *configs.Config, run string) {
	ctx := context.Background()
	models := []Model{
		{Name: "sft", Path: filepath.Join(run, "checkpoints", "sft_final")},
		{Name: "full", Path: filepath.Join(run, "adapters", "rft_adapters_full")},
	}
	opts := Options{Tasks: 12, Split: env.Test, Samples: 2}
	r, err := Analyze(ctx, cfg, models, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tasks != 12 || r.Samples != 2 || len(r.Models) != 2 || r.Models[0].Source != SourceCheckpoint || r.Models[1].Source != SourceAdapter {
		t.Fatalf("report: tasks %d samples %d models %+v", r.Tasks, r.Samples, r.Models)
	}
	for _, m := range r.Models {
		all := m.Group("all")
		if all.Tasks != 12 || all.Greedy.Trajectories != 12 || all.Sampled.Trajectories != 24 || len(m.Tasks) != 12 {
			t.Errorf("%s: %+v", m.Name, all)
		}
		for i, tr := range m.Tasks {
			if tr.Task != r.Models[0].Tasks[i].Task {
				t.Errorf("%s task %d is %s, the first model's is %s", m.Name, i, tr.Task, r.Models[0].Tasks[i].Task)
			}
		}
	}
	// The same model and seed give the same report: the streams do not
	// depend on scheduling or on the other models.
	again, err := Analyze(ctx, cfg, models[1:], opts)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(r.Models[1])
	b, _ := json.Marshal(again.Models[0])
	if string(a) != string(b) {
		t.Error("analysing a model alone gave other figures than beside another model")
	}
	out := t.TempDir()
	if err := WriteOutputs(out, r); err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, out, r)
	report, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Headline figures", "figures/" + FigLength + ".png", "## Definitions"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// analyzeSmokeRun: AnalyzeRun of the smoke run: its stage changes, phases, final KPIs and figures.
func analyzeSmokeRun(t *testing.T, cfg *configs.Config, run string) {
	out := t.TempDir()
	if err := AnalyzeRun(run, out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, RunSummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s RunSummary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	// The smoke curriculum ends every stage after two steps: two advances.
	if len(s.StageChanges) != 2 || s.StageChanges[0].From != 0 || s.StageChanges[1].To != 2 {
		t.Errorf("stage changes %+v, want 1→2 and 2→3", s.StageChanges)
	}
	phases := map[string]PhaseSummary{}
	for _, p := range s.Phases {
		phases[p.Phase] = p
	}
	if phases["sft"].Steps != cfg.SFT.Steps || phases["rft"].Steps != cfg.RFT.Steps {
		t.Errorf("phases %+v, want %d SFT and %d RFT points", s.Phases, cfg.SFT.Steps, cfg.RFT.Steps)
	}
	if _, ok := s.FinalRFT["kpi/success_rate_ma100"]; !ok {
		t.Errorf("final RFT figures lack the success KPI: %v", s.FinalRFT)
	}
	for _, fig := range []string{FigRunRewards, FigRunKPIs, FigRunDynamics, FigRunCurriculum, FigRunSFT} {
		if !slices.Contains(s.Figures, fig) {
			t.Errorf("figure %s not written (have %v)", fig, s.Figures)
			continue
		}
		decodePNG(t, filepath.Join(out, FiguresDir, fig+".png"))
		checkSVG(t, filepath.Join(out, FiguresDir, fig+".svg"))
	}
}

// movedRunDirectory: an adapter whose recorded base path is gone finds the checkpoint of the same name in its own run directory.
func movedRunDirectory(t *testing.T, cfg *configs.Config, run string) {
	// An adapter whose recorded base path is gone finds the checkpoint of
	// the same name in its own run directory.
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(run, moved); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(moved, run)
	l, err := Load(cfg, filepath.Join(moved, "adapters", "rft_adapters_base"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Base != filepath.Join(moved, "checkpoints", "sft_final") {
		t.Errorf("base %s", l.Base)
	}
}

func sameTensors(a, b *policy.Params) bool {
	ta, tb := a.Tensors(), b.Tensors()
	if len(ta) != len(tb) {
		return false
	}
	for i := range ta {
		if ta[i].Name != tb[i].Name || !slices.Equal(ta[i].Data, tb[i].Data) {
			return false
		}
	}
	return true
}

func TestApplyAdapter(t *testing.T) {
	p, err := policy.New(policy.Config{Hidden: []int{4}, LocHidden: 2, CellEmbed: 2, LoRARank: 2}.WithEnvLayout(), randFor(1))
	if err != nil {
		t.Fatal(err)
	}
	l := p.Layer(policy.TrunkLayer(0))
	// A is Rank×In and B is Out×Rank in the export; entry (i, j) = 100·i + j.
	a := ckpt.LoRALayer{Module: l.Name, Rank: l.Rank, Alpha: 3, In: l.In, Out: l.Out,
		A: make([]float32, l.Rank*l.In), B: make([]float32, l.Out*l.Rank)}
	for i := 0; i < l.Rank; i++ {
		for j := 0; j < l.In; j++ {
			a.A[i*l.In+j] = float32(100*i + j)
		}
	}
	for i := 0; i < l.Out; i++ {
		for j := 0; j < l.Rank; j++ {
			a.B[i*l.Rank+j] = float32(100*i + j)
		}
	}
	for _, other := range p.Layers() {
		if other == l {
			continue
		}
		for i := range other.B {
			other.B[i] = 1
		}
	}
	if err := applyAdapter(p, ckpt.Adapter{Layers: []ckpt.LoRALayer{a}}); err != nil {
		t.Fatal(err)
	}
	// The policy keeps A as [In, Rank]: A[j][i] = export A[i][j].
	if got := l.A[1*l.Rank+0]; got != 1 {
		t.Errorf("A[in 1][rank 0] = %v, want 1", got)
	}
	if got := l.A[2*l.Rank+1]; got != 102 {
		t.Errorf("A[in 2][rank 1] = %v, want 102", got)
	}
	// B as [Rank, Out]: B[r][o] = export B[o][r].
	if got := l.B[1*l.Out+3]; got != 301 {
		t.Errorf("B[rank 1][out 3] = %v, want 301", got)
	}
	if l.Alpha != 3 {
		t.Errorf("alpha %v, want the adapter's 3", l.Alpha)
	}
	for _, other := range p.Layers() {
		if other != l && other.Rank > 0 && slices.ContainsFunc(other.B, func(v float32) bool { return v != 0 }) {
			t.Errorf("layer %s is not in the adapter but kept a non-zero B", other.Name)
		}
	}

	bad := []struct {
		name string
		l    ckpt.LoRALayer
		want string
	}{
		{"unknown module", ckpt.LoRALayer{Module: "nope", Rank: 2}, "no such layer"},
		{"rank", ckpt.LoRALayer{Module: l.Name, Rank: 3, In: l.In, Out: l.Out}, "adapter rank 3"},
		{"shape", ckpt.LoRALayer{Module: l.Name, Rank: l.Rank, In: l.In + 1, Out: l.Out}, "layer"},
		{"sizes", ckpt.LoRALayer{Module: l.Name, Rank: l.Rank, In: l.In, Out: l.Out, A: []float32{1}}, "factor sizes"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			err := applyAdapter(p, ckpt.Adapter{Layers: []ckpt.LoRALayer{tc.l}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestLoadRejectsOtherDirectories(t *testing.T) {
	cfg, err := configs.Resolve("smoke", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cfg, t.TempDir()); err == nil || !strings.Contains(err.Error(), "neither a checkpoint") {
		t.Errorf("Load of an empty directory: %v", err)
	}
}

func randFor(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }
