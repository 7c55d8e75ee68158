package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/pixelis/pixelis/train/edit"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/ttrl"
)

// Files of a checkpoint.
const (
	filePolicy    = ckpt.PolicyFile         // every weight of the policy, adapters included
	fileOptimizer = "optimizer.safetensors" // Adam moments and step count
	fileCuriosity = "curiosity.safetensors" // the curiosity model and its optimiser (RFT)
)

// runState is state.json: everything but tensors that a later number depends on.
// Random streams are not in it: every draw derives from (seed, purpose, step,
// index), so the step alone restores them.
type runState struct {
	Phase string     `json:"phase"`
	Step  int        `json:"step"` // updates completed in Phase
	SFT   *sftState  `json:"sft,omitempty"`
	RFT   *rftState  `json:"rft,omitempty"`
	TTRL  *ttrlState `json:"ttrl,omitempty"`
	// Edits are the live edits applied so far, oldest first: a resume
	// replays them onto the configuration (train/edit).
	Edits []edit.Edit `json:"edits,omitempty"`
	// Alerts are the detectors' memory and the fired alerts whose action
	// waits for the next boundary: a resume goes on judging where the run
	// was, neither firing nor acting twice.
	Alerts *alertState `json:"alerts,omitempty"`
}

// resumePoint is a verified checkpoint to continue from.
type resumePoint struct {
	phase  string
	step   int
	loaded *ckpt.Loaded
	state  runState
}

var phaseOrder = map[string]int{PhaseSFT: 0, PhaseRFT: 1, PhaseTTRL: 2, PhaseTest: 3}

// done reports whether phase had finished when the checkpoint was taken.
func (p *resumePoint) done(phase string) bool {
	return p != nil && phaseOrder[phase] < phaseOrder[p.phase]
}

// forPhase returns p when it continues phase, nil otherwise.
func (p *resumePoint) forPhase(phase string) *resumePoint {
	if p != nil && p.phase == phase {
		return p
	}
	return nil
}

// loadResume verifies and reads the checkpoint named by Options.Resume. A
// checkpoint of another config (where it matters: anything but run naming, UI
// and export settings) is refused, naming an older valid checkpoint if any.
func (r *Runner) loadResume() (*resumePoint, error) {
	if r.opt.Resume == "" {
		return nil, nil
	}
	return readResume(r.cfg, r.opt.Resume)
}

// CheckResume reports whether a run under cfg can resume from the checkpoint at
// path, with the same checks the run makes, so that a caller can refuse before
// it touches the run's files.
func CheckResume(cfg *configs.Config, path string) error {
	_, err := readResume(cfg, path)
	return err
}

func readResume(cfg *configs.Config, path string) (*resumePoint, error) {
	l, err := ckpt.Load(path)
	if err != nil {
		return nil, refuseCheckpoint(path, cfg.TrainingHash(), err)
	}
	if err := env.CheckObsVersion(path, l.Manifest.ObservationVersion()); err != nil {
		return nil, err
	}
	if want := cfg.TrainingHash(); l.Manifest.ConfigHash != want {
		return nil, refuseCheckpoint(path, want, fmt.Errorf("it was written under another config (hash %.12s, this run's is %.12s)", l.Manifest.ConfigHash, want))
	}
	st, err := decodeState(l.State)
	if err != nil {
		return nil, refuseCheckpoint(path, cfg.TrainingHash(), fmt.Errorf("%s: %w", ckpt.StateFile, err))
	}
	return &resumePoint{phase: st.Phase, step: st.Step, loaded: l, state: st}, nil
}

// decodeState reads state.json as a resume does: every field in its type, a
// training phase, and that phase's state.
func decodeState(b []byte) (runState, error) {
	var st runState
	if err := json.Unmarshal(b, &st); err != nil {
		return st, err
	}
	switch {
	case st.Phase != PhaseSFT && st.Phase != PhaseRFT && st.Phase != PhaseTTRL:
		return st, fmt.Errorf("unknown phase %q", st.Phase)
	case st.Step < 0:
		return st, fmt.Errorf("step %d is negative", st.Step)
	case st.Phase == PhaseSFT && st.SFT == nil:
		return st, errors.New("an SFT checkpoint without its SFT state (\"sft\")")
	case st.Phase == PhaseRFT && st.RFT == nil:
		return st, errors.New("an RFT checkpoint without its RFT state (\"rft\")")
	case st.Phase == PhaseTTRL && st.TTRL == nil:
		return st, errors.New("a TTRL checkpoint without its TTRL state (\"ttrl\")")
	}
	return st, nil
}

// VerifyCheckpoint is ckpt.Verify (every file against the manifest) and,
// when state.json is sound as a file, the decoding a resume makes of it: a
// checkpoint verify passes is one whose files resume can read.
func VerifyCheckpoint(path string) []ckpt.Problem {
	problems := ckpt.Verify(path)
	for _, p := range problems {
		if p.File == ckpt.StateFile || p.File == ckpt.ManifestFile {
			return problems
		}
	}
	b, err := os.ReadFile(filepath.Join(path, ckpt.StateFile))
	if err != nil {
		return append(problems, ckpt.Problem{File: ckpt.StateFile, Kind: ckpt.Missing, Detail: err.Error()})
	}
	if _, err := decodeState(b); err != nil {
		problems = append(problems, ckpt.Problem{File: ckpt.StateFile, Kind: ckpt.BadState, Detail: err.Error()})
	}
	return problems
}

// refuse explains why a checkpoint cannot be used and points at an older one.
func (r *Runner) refuse(path string, err error) error {
	return refuseCheckpoint(path, r.hash, err)
}

// refuseCheckpoint is the error for a checkpoint that cannot be resumed from:
// the problem, and an older valid checkpoint of the same run and config
// (configHash) when there is one. "Older" is its place in training order; when
// the refused checkpoint's manifest cannot be read, that place comes from its
// state.json or its name (sft_final, rft_final), and when neither tells, a valid
// checkpoint is named without calling it older.
func refuseCheckpoint(path, configHash string, err error) error {
	msg := fmt.Sprintf("cannot resume from %s: %v", path, err)
	root, name := filepath.Dir(path), filepath.Base(path)
	if _, merr := ckpt.Inspect(path); merr == nil {
		if prev, perr := ckpt.PreviousValid(root, name, configHash); perr == nil && prev != "" {
			msg += "\nan older checkpoint is valid: " + prev + " (use --from " + prev + ")"
		}
		return errors.New(msg)
	}
	if phase, step, ok := checkpointPlace(path); ok {
		if prev, perr := ckpt.ValidBefore(root, name, phase, step, configHash); perr == nil {
			msg += "\nan older checkpoint is valid: " + prev + " (use --from " + prev + ")"
		}
		return errors.New(msg)
	}
	if other, perr := ckpt.PreviousValid(root, name, configHash); perr == nil && other != "" {
		msg += "\nanother checkpoint is valid: " + other + " (use --from " + other + ")"
	}
	return errors.New(msg)
}

// checkpointPlace is where in the run a checkpoint without a readable manifest was
// taken: from its state.json (phase and phase-local step), or a final
// checkpoint's name (the end of its phase, after every numbered checkpoint of it).
func checkpointPlace(path string) (phase string, step int64, ok bool) {
	if b, err := os.ReadFile(filepath.Join(path, ckpt.StateFile)); err == nil {
		var st runState
		if json.Unmarshal(b, &st) == nil && (st.Phase == PhaseSFT || st.Phase == PhaseRFT || st.Phase == PhaseTTRL) {
			return st.Phase, int64(st.Step), true
		}
	}
	switch filepath.Base(path) {
	case rundir.SFTFinal:
		return PhaseSFT, math.MaxInt64, true
	case rundir.RFTFinal:
		return PhaseRFT, math.MaxInt64, true
	case rundir.TTRLFinal:
		return PhaseTTRL, math.MaxInt64, true
	}
	return "", 0, false
}

// save writes a checkpoint of the current phase into the run's checkpoint root.
func (r *Runner) save(name string, kind ckpt.Kind, st runState, stage string, stageIdx int, files map[string][]ckpt.Tensor) (string, error) {
	st.Edits = r.edits
	alerts, err := r.saveAlerts()
	if err != nil {
		return "", err
	}
	st.Alerts = alerts
	data, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("checkpoint state: %w", err)
	}
	if err := finiteFiles(files); err != nil {
		return "", fmt.Errorf("checkpoint %s not saved: %w", name, err)
	}
	// The same step saved again (a checkpoint key, then a stop) replaces the
	// same content; it must not turn a kept checkpoint into a prunable one.
	if prev, err := ckpt.Inspect(filepath.Join(r.ckptRoot, name)); err == nil &&
		prev.Phase == st.Phase && prev.Step == int64(st.Step) && kind.Prunable() && !prev.Kind.Prunable() {
		kind = prev.Kind
	}
	meta, err := policyMeta(r.cfg, files)
	if err != nil {
		return "", err
	}
	return ckpt.Save(r.ckptRoot, ckpt.Checkpoint{
		Name: name, Phase: st.Phase, Step: int64(st.Step), Stage: stage, StageIndex: stageIdx,
		Kind: kind, ConfigHash: r.hash, Files: files, State: data, Meta: meta,
		Observation: &ckpt.Observation{Version: env.ObsVersion, Width: env.ObsDim},
	})
}

// policyMeta records the policy's architecture (policy.Record) in the metadata of
// policy.safetensors, so the checkpoint alone rebuilds the network outside pixelis.
func policyMeta(cfg *configs.Config, files map[string][]ckpt.Tensor) (map[string]map[string]string, error) {
	if _, ok := files[filePolicy]; !ok {
		return nil, nil
	}
	js, err := json.Marshal(setup.PolicyConfig(cfg).Record())
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: policy record: %w", filePolicy, err)
	}
	return map[string]map[string]string{filePolicy: {ckpt.MetaPolicyConfig: string(js)}}, nil
}

// adamTensors stores an optimiser's moments as "m/<param>", "v/<param>" and its step count.
func adamTensors(a *optim.Adam) []ckpt.Tensor {
	st := a.State()
	out := []ckpt.Tensor{ckpt.Int64Tensor("step", []int{1}, []int64{int64(st.Step)})}
	for name, m := range st.M {
		out = append(out, ckpt.Tensor{Name: "m/" + name, DType: ckpt.F32, Shape: []int{len(m)}, Data: append([]float32(nil), m...)})
	}
	for name, v := range st.V {
		out = append(out, ckpt.Tensor{Name: "v/" + name, DType: ckpt.F32, Shape: []int{len(v)}, Data: append([]float32(nil), v...)})
	}
	return out
}

// restoreAdam reads what adamTensors wrote.
func restoreAdam(a *optim.Adam, ts []ckpt.Tensor) error {
	st := optim.AdamState{M: map[string][]float32{}, V: map[string][]float32{}}
	seen := false
	for _, t := range ts {
		switch {
		case t.Name == "step":
			v, err := t.Int64s()
			if err != nil || len(v) != 1 {
				return fmt.Errorf("%s: bad step tensor", fileOptimizer)
			}
			st.Step, seen = int(v[0]), true
		case strings.HasPrefix(t.Name, "m/"):
			st.M[t.Name[2:]] = append([]float32(nil), t.Data...)
		case strings.HasPrefix(t.Name, "v/"):
			st.V[t.Name[2:]] = append([]float32(nil), t.Data...)
		default:
			return fmt.Errorf("%s: unexpected tensor %q", fileOptimizer, t.Name)
		}
	}
	if !seen {
		return fmt.Errorf("%s: no step count", fileOptimizer)
	}
	a.Restore(st)
	return nil
}

// fileReplay holds the GRPO replay buffer: its observations are most of an RFT
// checkpoint, so they go to safetensors rather than state.json.
const fileReplay = "replay.safetensors"

// replayTensors stores a replay buffer as flat tensors: the rows of every sample
// one after the other, sample lengths, and each advantage's float64 bits (the
// buffer orders samples by |A|, so the value must come back exactly); with
// per-action advantages (GAE, REINFORCE++) those too, one per row.
func replayTensors(r *grpo.Replay) []ckpt.Tensor {
	var obs, old, ref, stepAdv []float32
	var acts, lengths, adv, steps []int64
	for _, s := range r.Items {
		for i, o := range s.Obs {
			obs = append(obs, o...)
			acts = append(acts, int64(s.Actions[i]))
			old = append(old, s.OldLogP[i])
			ref = append(ref, s.RefLogP[i])
		}
		stepAdv = append(stepAdv, s.StepAdvantages...)
		lengths = append(lengths, int64(len(s.Obs)))
		adv = append(adv, int64(math.Float64bits(s.Advantage)))
		steps = append(steps, int64(s.Step))
	}
	rows := len(acts)
	ts := []ckpt.Tensor{
		{Name: "obs", DType: ckpt.F32, Shape: []int{rows, env.ObsDim}, Data: obs},
		{Name: "old_logp", DType: ckpt.F32, Shape: []int{rows}, Data: old},
		{Name: "ref_logp", DType: ckpt.F32, Shape: []int{rows}, Data: ref},
		ckpt.Int64Tensor("actions", []int{rows}, acts),
		ckpt.Int64Tensor("lengths", []int{len(lengths)}, lengths),
		ckpt.Int64Tensor("advantage_bits", []int{len(adv)}, adv),
		ckpt.Int64Tensor("step", []int{len(steps)}, steps),
	}
	if len(stepAdv) > 0 {
		ts = append(ts, ckpt.Tensor{Name: "step_advantage", DType: ckpt.F32, Shape: []int{len(stepAdv)}, Data: stepAdv})
	}
	return ts
}

// restoreReplay rebuilds a replay buffer of capacity cap from replayTensors' output.
func restoreReplay(capacity, maxAge int, ts []ckpt.Tensor) (*grpo.Replay, error) {
	by := map[string]ckpt.Tensor{}
	for _, t := range ts {
		by[t.Name] = t
	}
	ints := func(name string) ([]int64, error) {
		t, ok := by[name]
		if !ok {
			return nil, fmt.Errorf("%s: no %s tensor", fileReplay, name)
		}
		return t.Int64s()
	}
	acts, err := ints("actions")
	if err != nil {
		return nil, err
	}
	lengths, err := ints("lengths")
	if err != nil {
		return nil, err
	}
	adv, err := ints("advantage_bits")
	if err != nil {
		return nil, err
	}
	steps, err := ints("step")
	if err != nil {
		return nil, err
	}
	obs, old, ref := by["obs"].Data, by["old_logp"].Data, by["ref_logp"].Data
	stepAdv, perAction := by["step_advantage"]
	rows := len(acts)
	if len(obs) != rows*env.ObsDim || len(old) != rows || len(ref) != rows || len(adv) != len(lengths) || len(steps) != len(lengths) ||
		perAction && len(stepAdv.Data) != rows {
		return nil, fmt.Errorf("%s: tensor sizes disagree", fileReplay)
	}
	r := grpo.NewReplay(capacity, maxAge)
	k := 0
	for i, n := range lengths {
		if n < 0 || k+int(n) > rows {
			return nil, fmt.Errorf("%s: sample %d has a bad length %d", fileReplay, i, n)
		}
		s := &grpo.Sample{Advantage: math.Float64frombits(uint64(adv[i])), Step: int(steps[i])}
		for j := k; j < k+int(n); j++ {
			s.Obs = append(s.Obs, obs[j*env.ObsDim:(j+1)*env.ObsDim])
			s.Actions = append(s.Actions, int(acts[j]))
			s.OldLogP = append(s.OldLogP, old[j])
			s.RefLogP = append(s.RefLogP, ref[j])
		}
		if perAction {
			s.StepAdvantages = stepAdv.Data[k : k+int(n)]
		}
		r.Items = append(r.Items, s)
		k += int(n)
	}
	return r, nil
}

// curiosityTensors moves the curiosity model's weights and Adam moments out of
// the reward state (they are most of it) into tensors "w/…", "m/…", "v/…"; the
// rest of the state stays in state.json.
func curiosityTensors(st *reward.OrchestratorState) []ckpt.Tensor {
	if st.ICM == nil {
		return nil
	}
	var out []ckpt.Tensor
	for _, part := range []struct {
		prefix string
		m      *map[string][]float32
	}{{"w/", &st.ICM.Weights}, {"m/", &st.ICM.AdamM}, {"v/", &st.ICM.AdamV}} {
		for name, v := range *part.m {
			out = append(out, ckpt.Tensor{Name: part.prefix + name, DType: ckpt.F32, Shape: []int{len(v)}, Data: v})
		}
		*part.m = nil
	}
	return out
}

// restoreCuriosity puts curiosityTensors' output back into the reward state.
func restoreCuriosity(st *reward.OrchestratorState, ts []ckpt.Tensor) error {
	if st.ICM == nil {
		if len(ts) > 0 {
			return fmt.Errorf("%s: curiosity tensors without a curiosity model", fileCuriosity)
		}
		return nil
	}
	st.ICM.Weights, st.ICM.AdamM, st.ICM.AdamV = map[string][]float32{}, map[string][]float32{}, map[string][]float32{}
	for _, t := range ts {
		switch {
		case strings.HasPrefix(t.Name, "w/"):
			st.ICM.Weights[t.Name[2:]] = t.Data
		case strings.HasPrefix(t.Name, "m/"):
			st.ICM.AdamM[t.Name[2:]] = t.Data
		case strings.HasPrefix(t.Name, "v/"):
			st.ICM.AdamV[t.Name[2:]] = t.Data
		default:
			return fmt.Errorf("%s: unexpected tensor %q", fileCuriosity, t.Name)
		}
	}
	return nil
}

// memoryTensors are TTRL's retrieval memory in a checkpoint: the embeddings, and the samples in
// the replay buffer's layout.
func memoryTensors(m *ttrl.Memory) []ckpt.Tensor {
	embs, items := m.Entries()
	flat := make([]float32, 0, len(embs)*env.ObsDim)
	for _, e := range embs {
		flat = append(flat, e...)
	}
	ts := replayTensors(&grpo.Replay{Items: items})
	return append(ts, ckpt.Tensor{Name: "embedding", DType: ckpt.F32, Shape: []int{len(embs), env.ObsDim}, Data: flat})
}

// restoreMemory rebuilds a memory of capacity entries from memoryTensors' output.
func restoreMemory(capacity int, ts []ckpt.Tensor) (*ttrl.Memory, error) {
	r, err := restoreReplay(0, 0, ts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ttrl.MemoryFile, err)
	}
	var flat []float32
	found := false
	for _, t := range ts {
		if t.Name == "embedding" {
			flat, found = t.Data, true
		}
	}
	if !found || len(flat) != len(r.Items)*env.ObsDim {
		return nil, fmt.Errorf("%s: %d embeddings for %d entries", ttrl.MemoryFile, len(flat)/env.ObsDim, len(r.Items))
	}
	m := ttrl.NewMemory(capacity)
	for i, s := range r.Items {
		m.Add(flat[i*env.ObsDim:(i+1)*env.ObsDim], s)
	}
	return m, nil
}
