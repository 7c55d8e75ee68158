package train

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/footprint"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/sft"
)

// dataset is the SFT training set: CoTA samples with difficulty buckets and the
// (observation, action) pairs of their trajectories.
type dataset struct {
	samples []env.Sample
	buckets []string // per sample
	pairs   []*sft.Pair
	cut1    float64 // difficulty scores below cut1 are simple, below cut2 medium
	cut2    float64
	envCfg  env.Config
}

// loadDataset reads data.train_file or generates data.train_tasks expert
// trajectories, then replays them into pairs.
func (r *Runner) loadDataset(ctx context.Context) (*dataset, error) {
	var samples []env.Sample
	if path := r.cfg.Data.TrainFile; path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("data.train_file: %w", err)
		}
		samples, err = env.ReadCoTA(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("data.train_file %s: %w", path, err)
		}
		if len(samples) == 0 {
			return nil, fmt.Errorf("data.train_file %s: no samples", path)
		}
		if err := CheckTrainSamples(r.cfg, path, samples); err != nil {
			return nil, fmt.Errorf("data.train_file %w", err)
		}
		for i := range samples {
			if samples[i].Difficulty == "" {
				env.AssignBuckets(samples)
				break
			}
		}
	} else {
		faults.AtContext(ctx, faults.DataBuild)
		var err error
		samples, err = env.GenerateDatasetContext(ctx, r.envCfg, env.Train, r.cfg.Data.TrainTasks, setup.SampleMix(r.cfg), r.workers)
		if err != nil {
			return nil, err
		}
	}
	d := &dataset{samples: samples, envCfg: r.envCfg}
	d.buckets = make([]string, len(samples))
	for i, s := range samples {
		d.buckets[i] = s.Difficulty
	}
	d.cut1, d.cut2 = cuts(samples)
	pairs, err := sft.Pairs(ctx, r.envCfg, len(samples), func(i int) (*env.Task, []env.Action, []env.Role, error) {
		return samples[i].Replay(r.envCfg)
	}, r.workers)
	if err != nil {
		return nil, fmt.Errorf("training set: %w", err)
	}
	d.pairs = pairs
	return d, nil
}

// cuts are the smallest scores of the medium and hard buckets (the 33rd and 66th
// percentiles), used to bucket tasks outside the training set.
func cuts(samples []env.Sample) (float64, float64) {
	med, hard := []float64{}, []float64{}
	for _, s := range samples {
		switch s.Difficulty {
		case "medium":
			med = append(med, s.DifficultyScore)
		case "hard":
			hard = append(hard, s.DifficultyScore)
		}
	}
	sort.Float64s(med)
	sort.Float64s(hard)
	c1, c2 := 1e300, 1e300
	if len(med) > 0 {
		c1 = med[0]
	}
	if len(hard) > 0 {
		c2 = hard[0]
	}
	return c1, c2
}

// bucketsOf scores tasks by their expert trajectories and buckets them with the
// training set's cuts.
func (d *dataset) bucketsOf(tasks []*env.Task) []string {
	out := make([]string, len(tasks))
	ep := env.NewEpisode(d.envCfg)
	for i, t := range tasks {
		env.SolveIn(ep, t)
		score := env.ScoreDifficulty(env.NewSample(t, ep.Trajectory(), env.TypePositive, nil))
		switch {
		case score >= d.cut2:
			out[i] = "hard"
		case score >= d.cut1:
			out[i] = "medium"
		default:
			out[i] = "simple"
		}
	}
	return out
}

// CheckTrainSamples refuses SFT samples read from path that SFT must not
// imitate: tasks of another split than train (the validation and test tasks
// the run is scored on), and training tasks in RFT's task range, which RFT
// keeps apart so its rewards come from scenes the policy has not memorised
// (with rft.task_pool = 0, RFT reuses SFT's tasks by choice and nothing is
// refused for it). The error names the file and the sample's line.
func CheckTrainSamples(cfg *configs.Config, path string, samples []env.Sample) error {
	base, size := rftTaskRange(cfg)
	for _, s := range samples {
		if s.Split != env.Train.String() {
			return fmt.Errorf("%s line %d: sample %s is of the %s split; SFT imitates training tasks only (write them with pixelis data gen --split train)", path, s.Line, s.SampleID, s.Split)
		}
		if cfg.RFT.TaskPool > 0 && s.Index >= base && s.Index < base+size {
			return fmt.Errorf("%s line %d: sample %s is training task %d, in RFT's task range [%d, %d) (data.train_tasks onwards, rft.task_pool of them): SFT may not imitate the tasks RFT is rewarded on", path, s.Line, s.SampleID, s.Index, base, base+size)
		}
	}
	if err := footprint.CheckSFTBatch(cfg, float64(len(samples)), "data.train_file"); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
