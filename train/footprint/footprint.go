// Package footprint is the memory estimate: before a run starts, the memory
// its sizes need at the peak of each phase is estimated and compared with what the machine has, so
// that an absurd size (a batch of a billion pairs, a layer of a hundred million
// units) is refused with its key named instead of dying in the middle of the run
// with Go's out-of-memory crash, which no program can catch.
//
// The estimate is a sum of the structures a phase holds at once, each sized from
// the config: the policy's weights with their copies and optimiser moments, the
// SFT pairs, the training graph's batch buffers, the episodes and rollouts of a
// step, a validation or the test evaluation, the replay buffer. Sizes of the
// world's objects (a task's images, an episode's buffers, a stored trajectory)
// are measured once per world config on a few of them. It aims to be within a
// factor of two of the peak live heap, on the high side.
//
// The sizes the trainers cut their work into — an SFT batch's chunks and its
// buffers (sft.Chunks, sft.BatchBytes), the rows of the RFT, TTRL and critic
// updaters' graphs (train/setup's sizing.go) — are read from the functions
// the trainers are built with, never recomputed here, so the estimate follows
// the trainers.
package footprint

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/nn"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/sft"
)

// Term is one part of a phase's peak.
type Term struct {
	What  string   // "the SFT graph: 256 pairs × 22.4 KiB"
	Keys  []string // the config keys that size it
	Bytes float64
}

// Phase is one phase's estimated peak: the terms live at the same moment.
type Phase struct {
	Name  string
	Terms []Term
}

// Bytes is the phase's estimated peak.
func (p Phase) Bytes() float64 {
	var n float64
	for _, t := range p.Terms {
		n += t.Bytes
	}
	return n
}

// baseBytes is what the process holds before any run structure: the runtime,
// the binary's code and tables, fonts and the console. Measured: the smoke
// config's test phase on one task with one sample peaks at 36 MiB resident.
const baseBytes = 40 << 20

// Eval is the peak of evaluating models models on tasks tasks with
// samples attempts each (pixelis eval, pixelis analyze); keep says the
// rollouts of every model are kept to the end (analyze compares them), else
// the evaluation streams them (rollout.Evaluate).
func Eval(cfg *configs.Config, tasks, samples, models int, keep bool) (Phase, error) {
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		return Phase{}, err
	}
	kept := 0
	if keep {
		kept = models
	}
	return newModel(cfg, ec).evaluation("the evaluation", tasks, samples, models, kept, []string{"--tasks", "--samples"}), nil
}

// Data is the peak of generating n trajectories (pixelis data
// gen holds them all before writing them).
func Data(cfg *configs.Config, n int) (Phase, error) {
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		return Phase{}, err
	}
	w := measureWorld(ec, setup.SampleMix(cfg))
	return Phase{Name: "data generation", Terms: []Term{
		{What: "the runtime", Bytes: baseBytes},
		{What: fmt.Sprintf("the trajectories, %d × %s", n, FormatBytes(w.sample)), Keys: []string{"--n"}, Bytes: float64(n) * w.sample},
	}}, nil
}

// Check refuses a run whose estimated peak is above limit bytes (limitDesc
// says where the limit comes from). The error is a *configs.FieldError naming
// the key of the largest part of the largest phase: of the keys that size that
// part, the one furthest above its default.
func Check(cfg *configs.Config, phases []Phase, limit float64, limitDesc string) error {
	if len(phases) == 0 {
		return nil
	}
	peak := slices.MaxFunc(phases, func(a, b Phase) int { return cmpFloat(a.Bytes(), b.Bytes()) })
	if peak.Bytes() <= limit {
		return nil
	}
	big := slices.MaxFunc(peak.Terms, func(a, b Term) int { return cmpFloat(a.Bytes, b.Bytes) })
	keys := blame(cfg, big.Keys)
	if len(keys) == 0 {
		keys = []string{"run.max_memory_gb"}
	}
	return &configs.FieldError{Path: keys[0], Rule: fmt.Sprintf(
		"must fit in memory: about %s is needed at the peak (%s, of which %s: %s), more than the %s %s; lower %s",
		FormatBytes(peak.Bytes()), peak.Name, FormatBytes(big.Bytes), big.What, FormatBytes(limit), limitDesc, strings.Join(keys, " or "))}
}

// blame orders keys by how far their value is above the default's (keys it does
// not know keep their place, as if at the default).
func blame(cfg *configs.Config, keys []string) []string {
	def := configs.Default()
	ratio := func(k string) float64 {
		v, d := sizeOf(cfg, k), sizeOf(def, k)
		if v <= 0 || d <= 0 {
			return 1
		}
		return v / d
	}
	out := slices.Clone(keys)
	slices.SortStableFunc(out, func(a, b string) int { return cmpFloat(ratio(b), ratio(a)) })
	return out
}

// sizeOf is the value of a size key of cfg, 0 for keys it does not know.
func sizeOf(cfg *configs.Config, key string) float64 {
	c := cfg
	switch key {
	case "policy.hidden":
		if len(c.Policy.Hidden) == 0 {
			return 0
		}
		return float64(slices.Max(c.Policy.Hidden))
	case "policy.cell_embed":
		return float64(c.Policy.CellEmbed)
	case "policy.loc_hidden":
		return float64(c.Policy.LocHidden)
	case "policy.lora_rank":
		return float64(c.Policy.LoRARank)
	case "data.train_tasks":
		return float64(c.Data.TrainTasks)
	case "sft.batch_size":
		return float64(c.SFT.BatchSize)
	case "sft.eval_tasks":
		return float64(c.SFT.EvalTasks)
	case "rft.group_size":
		return float64(c.RFT.GroupSize)
	case "rft.tasks_per_step":
		return float64(c.RFT.TasksPerStep)
	case "rft.max_resample":
		return float64(c.RFT.MaxResample + 1)
	case "rft.val_tasks":
		return float64(c.RFT.ValTasks)
	case "rft.val_samples":
		return float64(c.RFT.ValSamples)
	case "rft.replay_size":
		return float64(c.RFT.ReplaySize)
	case "eval.tasks":
		return float64(c.Eval.Tasks)
	case "eval.samples":
		return float64(c.Eval.Samples)
	case "ttrl.tasks_per_step":
		return float64(c.TTRL.TasksPerStep)
	case "ttrl.samples":
		return float64(c.TTRL.Samples)
	case "ttrl.retrieval":
		return float64(c.TTRL.Retrieval)
	case "ttrl.memory_size":
		return float64(c.TTRL.MemorySize)
	case "reward.curiosity.hidden":
		return float64(c.Reward.Curiosity.Hidden)
	case "reward.curiosity.embed_dim":
		return float64(c.Reward.Curiosity.EmbedDim)
	case "reward.curiosity.batch_size":
		return float64(c.Reward.Curiosity.BatchSize)
	}
	return 0
}

// FormatBytes prints a byte count in binary units: "3.4 GiB".
func FormatBytes(n float64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f bytes", n)
	}
	if n >= 1e4 {
		return fmt.Sprintf("%.3g %s", n, units[i])
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Model holds the sizes every phase's estimate is built from.
type Model struct {
	cfg      *configs.Config
	world    worldSize
	obs      float64 // one observation row, bytes
	row      float64 // one row of activations through the policy, bytes
	cellRow  float64 // one row's values of the per-cell layers (encoder and location scorer), bytes
	rollout  float64 // one rollout of at most env.max_steps actions, bytes
	params   float64 // floats of the policy
	workers  float64
	policyKS []string
}

// New is the model of a run of cfg, its world's sizes measured (once per
// world config).
func New(cfg *configs.Config) (*Model, error) {
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		return nil, err
	}
	return newModel(cfg, ec), nil
}

func newModel(cfg *configs.Config, ec env.Config) *Model {
	pc := setup.PolicyConfig(cfg)
	m := &Model{cfg: cfg, world: measureWorld(ec, setup.SampleMix(cfg)), workers: float64(setup.Workers(cfg)),
		policyKS: []string{"policy.hidden", "policy.cell_embed", "policy.loc_hidden", "policy.lora_rank"}}
	m.obs = 4 * float64(env.ObsDim)
	var hidden float64
	for _, h := range cfg.Policy.Hidden {
		hidden += float64(h)
	}
	// Per row: the observation, every cell through the cell encoder and the
	// location scorer, the trunk, the logits. The training graph measures about
	// 0.6 of this per row; inference less.
	m.row = 4 * (float64(pc.ObsDim()) + float64(pc.Cells)*float64(pc.CellEmbed+pc.LocHidden) + hidden + float64(pc.Actions) + float64(pc.LocHidden))
	m.cellRow = 4 * float64(pc.Cells) * float64(pc.CellEmbed+pc.LocHidden)
	for _, s := range pc.Shapes() {
		m.params += s.Params()
	}
	// A rollout keeps each step's observation and result and the final observation.
	m.rollout = float64(cfg.Env.MaxSteps+1)*(m.obs+96) + 256
	return m
}

// policy is the policy's weights with copies: the inference copy, the graph's
// values and gradients, Adam's moments and the candidate update (SFT), plus the
// frozen reference and its inference copy (RFT).
func (m *Model) policy(copies float64) Term {
	return Term{What: fmt.Sprintf("the policy, %.0f weights × %.0f copies (inference, gradients, Adam moments, update)", m.params, copies),
		Keys: m.policyKS, Bytes: 4 * m.params * copies}
}

// graph is a training graph's buffers for batch rows: the activations, and
// what internal/nn's ops keep between steps. Those keep their outputs, most
// of them the per-cell layers' values: the layer's output, the pooling's or
// the score's gradient and the ReLU's gradient — three per cell value — and
// with trained adapters also the layer's product, the adapter's products
// and the sum of the location layer's two gradients: about six. The workers
// add only a block of rows each (nn.DenseScratch), not a graph each: they
// split the graph's products, not its batch.
// graphs graphs of batch rows each: two where grpo.Updater runs two chunks at once.
func (m *Model) graph(what string, graphs, batch float64, key string, adapters bool) Term {
	kept := 3.0
	if adapters {
		kept = 6
	}
	row := m.row + kept*m.cellRow
	widest := slices.Max(append([]int{m.cfg.Policy.CellEmbed, m.cfg.Policy.LocHidden}, m.cfg.Policy.Hidden...))
	scratch := m.workers * float64(nn.DenseScratch(widest))
	rows := fmt.Sprintf("%.0f rows", batch)
	if graphs > 1 {
		rows = fmt.Sprintf("%.0f × %.0f rows", graphs, batch)
	}
	return Term{What: fmt.Sprintf("%s for %s × %s", what, rows, FormatBytes(row)), Keys: []string{key}, Bytes: graphs*batch*row + scratch}
}

// grpoGraphs are the GRPO update's graphs of chunk rows each (setup.RFTChunkRows,
// setup.TTRLChunkRows): with two or more workers a second one runs a minibatch's
// chunks two at a time (grpo.Updater's lanes).
func (m *Model) grpoGraphs(chunk int, key string) Term {
	if m.workers < 2 {
		return m.graph("the GRPO training graph", 1, float64(chunk), key, true)
	}
	return m.graph("two GRPO training graphs (a chunk each on two cores)", 2, float64(chunk), key, true)
}

// rowBytes is what an update holds per row beside its observation (which the
// rollouts hold): the grpo.Row and its place in the minibatches' order.
const rowBytes = float64(unsafe.Sizeof(grpo.Row{}) + unsafe.Sizeof(int(0)))

// updateRows are an update's rows: rows of them (setup.RFTStepRows, setup.TTRLStepRows),
// each with perRow bytes beside its grpo.Row.
func updateRows(rows int, perRow float64, keys []string) Term {
	return Term{What: fmt.Sprintf("the update's rows, %d × %s", rows, FormatBytes(rowBytes+perRow)), Keys: keys,
		Bytes: float64(rows) * (rowBytes + perRow)}
}

// critic is the value function of estimator "ppo": its network (a copy of the
// policy's encoder and trunk at most) with gradients and Adam's moments, and
// its graph of setup.CriticChunkRows rows.
func (m *Model) critic() Term {
	pc := setup.PolicyConfig(m.cfg)
	chunk := float64(setup.CriticChunkRows(m.cfg))
	row := m.obs + 4*float64(pc.Cells)*float64(pc.CellEmbed)*3
	for _, h := range m.cfg.Policy.Hidden {
		row += 4 * 3 * float64(h)
	}
	return Term{What: fmt.Sprintf("the critic: %.0f weights × 5 copies and its graph of %.0f rows × %s", m.params, chunk, FormatBytes(row)),
		Keys: []string{"rft.tasks_per_step", "rft.group_size"}, Bytes: 4*m.params*5 + chunk*row}
}

// sftGraphs are the SFT step's graphs: a batch of more than sft.ChunkRows
// pairs is cut into chunks, two of which run at once on two lanes with two
// or more workers (sft.Trainer).
func (m *Model) sftGraphs(batch int) Term {
	chunks, rows := sft.Chunks(batch)
	t := m.graph("the SFT training graph", 1, float64(rows), "sft.batch_size", false)
	if m.workers >= 2 && chunks >= 2 {
		t = m.graph("two SFT training graphs (a chunk each on two cores)", 2, float64(rows), "sft.batch_size", false)
	}
	// The batch itself: each pair's index and pointer, and the list of chunks.
	t.What += fmt.Sprintf(", and the batch of %d pairs", batch)
	t.Bytes += sft.BatchBytes(batch)
	return t
}

// CheckSFTBatch refuses a batch larger than the most pairs the training set
// of n trajectories (from the key nKey) can give, one per action of at most
// env.max_steps: a step draws its pairs from that set, so a larger batch only
// draws the same pairs again, at the cost of its memory and its time.
func CheckSFTBatch(c *configs.Config, n float64, nKey string) error {
	most := n * float64(c.Env.MaxSteps)
	if float64(c.SFT.BatchSize) <= most {
		return nil
	}
	return &configs.FieldError{Path: "sft.batch_size", Rule: fmt.Sprintf(
		"must be at most %.0f, the most pairs the training set can give (%s: %.0f trajectories × env.max_steps = %d actions), got %d: a step draws its batch from that set",
		most, nKey, n, c.Env.MaxSteps, c.SFT.BatchSize)}
}

// SFT is the SFT phase's peak: the policy and its optimiser, the training set
// and its pairs, the training graphs and a validation. An SFT batch beyond
// what its training set can give is a *configs.FieldError whatever the memory.
func (m *Model) SFT() (Phase, error) {
	c := m.cfg
	n := float64(c.Data.TrainTasks)
	nKey := "data.train_tasks"
	if c.Data.TrainFile != "" {
		lines, err := countLines(c.Data.TrainFile)
		if err != nil {
			return Phase{}, fmt.Errorf("data.train_file: %w", err)
		}
		n, nKey = float64(lines), "data.train_file"
	}
	if c.Data.TrainFile == "" { // a file's samples are counted when it is read (CheckTrainSamples)
		if err := CheckSFTBatch(c, n, nKey); err != nil {
			return Phase{}, err
		}
	}
	pairs := n * m.world.pairsPerSample
	v := float64(c.SFT.EvalTasks)
	return Phase{Name: "SFT", Terms: []Term{
		{What: "the runtime", Bytes: baseBytes},
		m.policy(10),
		{What: fmt.Sprintf("the training set, %.0f trajectories × %s", n, FormatBytes(m.world.sample)), Keys: []string{nKey}, Bytes: n * m.world.sample},
		{What: fmt.Sprintf("the SFT pairs, about %.0f × %s", pairs, FormatBytes(m.world.pair)), Keys: []string{nKey}, Bytes: pairs * m.world.pair},
		m.sftGraphs(c.SFT.BatchSize),
		{What: fmt.Sprintf("validation on %.0f tasks", v), Keys: []string{"sft.eval_tasks"},
			Bytes: v*(m.world.task+m.rollout) + min(v, rollout.EvalChunk)*(m.world.episode+m.row) + m.workers*m.world.episode},
	}}, nil
}

// RFT is the RFT phase's peak: the policy with its reference, the update's
// graphs and rows, a step's or a validation's rollouts, the replay buffer,
// the curiosity model and, for estimator "ppo", the critic.
func (m *Model) RFT() Phase {
	c, rf := m.cfg, m.cfg.RFT
	rounds := 1.0
	if rf.DynamicSampling {
		rounds += float64(rf.MaxResample)
	}
	group := float64(rf.TasksPerStep) * float64(rf.GroupSize)
	v, s := float64(rf.ValTasks), float64(rf.ValSamples)
	stepRolls := rounds*group*m.rollout + rounds*float64(rf.TasksPerStep)*m.world.task + group*m.row
	// A validation streams: a chunk of tasks' episodes at a time.
	vc := min(v, rollout.EvalChunk)
	valRolls := vc*(1+s)*m.rollout + vc*s*m.row
	rolls := Term{What: fmt.Sprintf("the rollouts of a step, up to %.0f rounds × %.0f episodes", rounds, group),
		Keys: []string{"rft.group_size", "rft.tasks_per_step", "rft.max_resample"}, Bytes: stepRolls}
	if valRolls > stepRolls {
		rolls = Term{What: fmt.Sprintf("the rollouts of a validation, %.0f tasks × %.0f attempts", v, 1+s),
			Keys: []string{"rft.val_samples", "rft.val_tasks"}, Bytes: valRolls}
	}
	// The roller keeps its episodes between calls: as many as its largest call.
	pool := math.Max(group, vc*s)
	poolKeys := []string{"rft.group_size", "rft.tasks_per_step"}
	if vc*s > group {
		poolKeys = []string{"rft.val_samples", "rft.val_tasks"}
	}
	cu := c.Reward.Curiosity
	e, h, a, r, d := float64(cu.EmbedDim), float64(cu.Hidden), float64(env.NumActions()), float64(cu.LoRARank), float64(env.ObsDim)
	icm := d*e + e + (e+a)*h + h + h*e + e + (e+a)*r + r*h + h*r + r*e + 2*e*h + h + h*a + a
	icmRow := 4 * (2*d + 4*(e+h) + a) * 3
	stepKeys := []string{"rft.tasks_per_step", "rft.group_size"}
	terms := []Term{
		{What: "the runtime", Bytes: baseBytes},
		m.policy(14),
		m.grpoGraphs(setup.RFTChunkRows(c), "rft.tasks_per_step"),
		updateRows(setup.RFTStepRows(c), 0, stepKeys),
		{What: fmt.Sprintf("the episodes the roller keeps, %.0f × %s", pool, FormatBytes(m.world.episode)), Keys: poolKeys, Bytes: pool * m.world.episode},
		rolls,
		{What: fmt.Sprintf("the validation tasks, %.0f × %s", v, FormatBytes(m.world.task)), Keys: []string{"rft.val_tasks"}, Bytes: v * m.world.task},
		{What: fmt.Sprintf("the replay buffer, %d samples", rf.ReplaySize), Keys: []string{"rft.replay_size"},
			Bytes: float64(rf.ReplaySize) * float64(c.Env.MaxSteps) * (m.obs + 16)},
		{What: "the curiosity model and its batch", Keys: []string{"reward.curiosity.hidden", "reward.curiosity.embed_dim", "reward.curiosity.batch_size"},
			Bytes: 4*icm*6 + float64(cu.BatchSize)*icmRow + float64(cu.CacheSize)*(e*4+64)},
	}
	if e, _ := grpo.LookupEstimator(rf.Estimator); e.Critic {
		terms = append(terms, m.critic())
	}
	return Phase{Name: "RFT", Terms: terms}
}

// TTRL is the TTRL phase's peak: the policy with its EMA anchor, the update's
// graphs, a step's rollouts (ttrl.tasks_per_step × ttrl.samples), its rows
// with the retrieved trajectories replayed beside them (their observations
// copied once more for the log-probabilities), and the retrieval memory.
func (m *Model) TTRL() Phase {
	c, tc := m.cfg, m.cfg.TTRL
	episodes := float64(tc.TasksPerStep) * float64(tc.Samples)
	replayed := float64(tc.TasksPerStep) * float64(tc.Retrieval)
	rows := setup.TTRLStepRows(c) + tc.TasksPerStep*tc.Retrieval*c.Env.MaxSteps
	stepKeys := []string{"ttrl.tasks_per_step", "ttrl.samples", "ttrl.retrieval"}
	return Phase{Name: "TTRL", Terms: []Term{
		{What: "the runtime", Bytes: baseBytes},
		m.policy(16),
		m.grpoGraphs(setup.TTRLChunkRows(c), "ttrl.tasks_per_step"),
		{What: fmt.Sprintf("the rollouts of a step, %.0f episodes and %.0f replayed", episodes, replayed), Keys: stepKeys,
			Bytes: (episodes+replayed)*m.rollout + float64(tc.TasksPerStep)*m.world.task + episodes*(m.world.episode+m.row)},
		updateRows(rows, m.obs+12, stepKeys),
		{What: fmt.Sprintf("the retrieval memory, %d winning trajectories", tc.MemorySize), Keys: []string{"ttrl.memory_size"},
			Bytes: float64(tc.MemorySize) * (m.rollout + m.obs)},
	}}
}

// Test is the test phase's peak, its models (at most the run's SFT, RFT and
// TTRL ones) evaluated at once on eval.tasks × eval.samples.
func (m *Model) Test(models int) Phase {
	c := m.cfg
	return m.evaluation("the test evaluation", c.Eval.Tasks, c.Eval.Samples, models, 0, []string{"eval.tasks", "eval.samples"})
}

// evaluation is the peak of evaluating models on tasks tasks: their images, the
// roller's episodes (tasks × samples for the sampled attempts), the rollouts
// and the inference buffers. With kept 0 the evaluation streams (rollout.Evaluate):
// a chunk of tasks at a time, nothing kept after, the models at once (each
// its own chunk and roller, as runTest plays them); else every task's
// rollouts of kept models are held at once.
func (m *Model) evaluation(name string, tasks, samples, models, kept int, keys []string) Phase {
	t, s := float64(tasks), float64(samples)
	at := 1.0 // models whose chunks are live at once
	if kept == 0 {
		t, at = min(t, rollout.EvalChunk), float64(models)
	}
	eps := t * max(s, 1)
	each := ""
	if at > 1 {
		each = fmt.Sprintf("%.0f models × ", at)
	}
	return Phase{Name: name, Terms: []Term{
		{What: "the runtime", Bytes: baseBytes},
		m.policy(3 * float64(models)),
		{What: fmt.Sprintf("the tasks, %s%.0f × %s", each, t, FormatBytes(m.world.task)), Keys: keys[:1], Bytes: at * t * m.world.task},
		{What: fmt.Sprintf("the episodes, %s%.0f tasks × %.0f attempts × %s", each, t, max(s, 1), FormatBytes(m.world.episode)), Keys: []string{keys[1], keys[0]}, Bytes: at * eps * m.world.episode},
		{What: fmt.Sprintf("the rollouts, %s%.0f tasks × %.0f attempts", each, t, 1+s), Keys: []string{keys[1], keys[0]},
			Bytes: at * (float64(max(kept, 1))*t*(1+s)*m.rollout + eps*m.row)},
	}}
}

// worldSize is what the world's objects of one env config occupy.
type worldSize struct {
	task, episode, sample float64 // bytes of a task, a reset episode, a stored trajectory
	pairsPerSample        float64 // SFT pairs a trajectory gives
	pair                  float64 // bytes of an SFT pair, its packed observation included
}

var worldSizes sync.Map // world key → worldSize

// pairOverhead is an SFT pair's bytes beside its observation's data: the
// struct, its pointer in the set and the slices' allocation rounding.
const pairOverhead = 160

// measureWorld measures the live heap a few tasks, episodes and trajectories of
// this world hold (once per world config and process). The world's sizes are
// its own business, and they change with it; measuring keeps the estimate honest.
func measureWorld(ec env.Config, mix env.Mix) worldSize {
	key := fmt.Sprintf("%+v|%+v", ec, mix)
	if w, ok := worldSizes.Load(key); ok {
		return w.(worldSize)
	}
	const n = 24 // every family, a few times
	h0 := liveHeap()
	tasks := make([]*env.Task, n)
	for i := range tasks {
		tasks[i] = env.Generate(ec, env.Test, i)
	}
	h1 := liveHeap()
	// An episode observed once: its buffers, and the analysis of its view the
	// task keeps for its other episodes.
	eps := make([]*env.Episode, n)
	obs := make([]float32, env.ObsDim)
	for i := range eps {
		eps[i] = env.NewEpisode(ec)
		eps[i].Reset(tasks[i])
		eps[i].Observe(obs)
	}
	h2 := liveHeap()
	samples, err := env.GenerateDataset(ec, env.Train, n, mix)
	h3 := liveHeap()
	w := worldSize{task: per(h1, h0, n), episode: per(h2, h1, n), sample: per(h3, h2, n), pairsPerSample: float64(ec.MaxSteps),
		pair: 4*float64(env.ObsDim) + pairOverhead}
	if err == nil {
		pairs, perr := sft.Pairs(context.Background(), ec, len(samples), func(i int) (*env.Task, []env.Action, []env.Role, error) {
			return samples[i].Replay(ec)
		}, 1)
		if perr == nil && len(pairs) > 0 {
			// A little above the mean: the mix of a larger set varies.
			w.pairsPerSample = 1.25 * float64(len(pairs)) / float64(n)
			var b float64
			for _, p := range pairs {
				b += float64(p.Bytes())
			}
			w.pair = 1.25*b/float64(len(pairs)) + pairOverhead
		}
	}
	runtime.KeepAlive(tasks)
	runtime.KeepAlive(eps)
	runtime.KeepAlive(samples)
	worldSizes.Store(key, w)
	return w
}

// per is the heap growth from before to after per object, at least 1 KiB (a
// measurement is only as good as the heap is quiet).
func per(after, before uint64, n int) float64 {
	if after <= before {
		return 1 << 10
	}
	return math.Max(float64(after-before)/float64(n), 1<<10)
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// countLines counts the lines of a file (a CoTA file holds one sample a line).
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n + 1, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
