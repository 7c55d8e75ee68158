package rollout

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/telemetry"
)

// RewardTrajectories gives the reward components their view of rollouts;
// consecutive runs of G rollouts of one task form group firstGroup, firstGroup+1, …
// (the caller's group numbering, used by RaPR).
func RewardTrajectories(rs []*Rollout, firstGroup int) []*reward.Trajectory {
	out := make([]*reward.Trajectory, len(rs))
	group, prev := firstGroup-1, (*env.Task)(nil)
	for i, ro := range rs {
		if ro.Task != prev {
			group++
			prev = ro.Task
		}
		out[i] = &reward.Trajectory{Steps: ro.Steps, FinalObs: ro.FinalObs, Answered: ro.Answered, Correct: ro.Correct,
			Frames: len(ro.Task.Frames), Group: group}
	}
	return out
}

// Behaviour adds the behavioural metrics of a batch of rollouts to m:
// trajectory length, RaPR (share of trajectories that use a visual operation),
// loop rate (share with an operation repeated with the same arguments back to
// back), misuse rate (share of actions that were a misuse) and tool counts.
func Behaviour(rs []*Rollout, m map[string]float64) {
	var steps, usesOps, loops, misuses float64
	tools := map[env.Op]float64{}
	for _, ro := range rs {
		steps += float64(len(ro.Steps))
		if ro.Ops() > 0 {
			usesOps++
		}
		looped := false
		for i, st := range ro.Steps {
			if st.Action.Op != env.OpAnswer {
				tools[st.Action.Op]++
			}
			if st.Result.Misuse != env.MisuseNone {
				misuses++
			}
			if st.Result.CutOff { // the episode's no_answer, as analyze counts it
				misuses++
			}
			if i > 0 && st.Action == ro.Steps[i-1].Action && st.Action.Op != env.OpAnswer {
				looped = true
			}
		}
		if looped {
			loops++
		}
	}
	n := float64(max(len(rs), 1))
	m["behavior/traj_len_mean"] = steps / n
	m["behavior/rapr"] = usesOps / n
	m["behavior/loop_rate"] = loops / n
	m["behavior/misuse_rate"] = misuses / max(steps, 1)
	for op := env.OpSegment; op < env.OpAnswer; op++ {
		m["tools/"+op.String()] = tools[op]
	}
}

// thumbSize is the side of trajectory thumbnails: 32×32 pixels draw as 32
// columns × 16 rows of half-block characters.
const thumbSize = 32

// SampleViews picks up to k trajectories for the console: the first of each group,
// so different tasks show, with their per-step reward parts.
// step is the phase's step and runStep the run-wide one.
func SampleViews(rs []*Rollout, bd reward.Breakdown, step, runStep, groupSize, k int) []telemetry.Sample {
	var out []telemetry.Sample
	for i := 0; i < len(rs) && len(out) < k; i += groupSize {
		var tr *reward.TrajReward
		if i < len(bd.Trajs) {
			tr = &bd.Trajs[i]
		}
		s := SampleView(rs[i], tr, step)
		s.RunStep = runStep
		out = append(out, s)
	}
	return out
}

// SampleView converts one rollout for display.
func SampleView(ro *Rollout, tr *reward.TrajReward, step int) telemetry.Sample {
	t := ro.Task
	s := telemetry.Sample{Step: step, Family: t.Family.String(), Question: t.Question, Answer: ro.Answer,
		GroundTruth: t.Answer, Correct: ro.Correct,
		Thumb:    telemetry.Thumbnail{W: thumbSize, H: thumbSize, Pix: t.RGB(0, thumbSize, thumbSize)},
		ViewSize: env.ViewSize, SourceSize: env.SourceSize}
	if tr != nil {
		s.Reward = tr.Total
	}
	for i, st := range ro.Steps {
		ss := telemetry.SampleStep{Op: st.Action.Op.String(), Args: actionArgs(st.Action), Result: st.Result.Summary}
		// Points are in the agent's view, boxes and regions in the source
		// frame: say which.
		switch b := st.Result.BBox; {
		case st.Result.Misuse != env.MisuseNone || b.Empty():
		case st.Action.Op == env.OpSegment:
			ss.Args = fmt.Sprintf("view (%d,%d)", st.Action.X, st.Action.Y)
			ss.Result = fmt.Sprintf("obj %d, area %d, source bbox %d,%d–%d,%d", st.Result.ObjectID, st.Result.Area, b.Min.X, b.Min.Y, b.Max.X, b.Max.Y)
		case st.Action.Op == env.OpZoom:
			ss.Result = fmt.Sprintf("obj %d ×%.1f, view now shows source %d,%d–%d,%d", st.Result.ObjectID, float64(env.ViewSize)/float64(b.Dx()), b.Min.X, b.Min.Y, b.Max.X, b.Max.Y)
		}
		ss.Misuse = misuseLabel(st.Result)
		if tr != nil && i < len(tr.Steps) {
			ss.Rewards = map[string]float64{}
			for k, v := range tr.Steps[i] {
				if v != 0 {
					ss.Rewards[k] = v
				}
			}
		}
		s.Steps = append(s.Steps, ss)
	}
	return s
}

func actionArgs(a env.Action) string {
	switch a.Op {
	case env.OpSegment:
		return fmt.Sprintf("(%d,%d)", a.X, a.Y)
	case env.OpAnswer:
		return fmt.Sprintf("%q", a.Answer)
	}
	return ""
}

// episodeRecord is one validation episode as saved under episodes/.
type episodeRecord struct {
	Task        string   `json:"task"`
	Family      string   `json:"family"`
	Question    string   `json:"question"`
	GroundTruth string   `json:"ground_truth"`
	Mode        string   `json:"mode"` // "greedy" or "sample"
	Answer      string   `json:"answer"`
	Correct     bool     `json:"correct"`
	Actions     []string `json:"actions"`
	Results     []string `json:"results"`
	Misuse      []string `json:"misuse"`
}

// SaveEpisodes writes one task's episodes as JSON to dir/<task id>.json:
// its greedy attempt, then its sampled ones. An evaluation calls it as each
// task's episodes finish, so none are held for the sake of saving them.
func SaveEpisodes(dir string, greedy *Rollout, sampled []*Rollout) error {
	t := greedy.Task
	recs := make([]episodeRecord, 0, 1+len(sampled))
	add := func(ro *Rollout, mode string) {
		rec := episodeRecord{Task: t.ID, Family: t.Family.String(), Question: t.Question,
			GroundTruth: t.Answer, Mode: mode, Answer: ro.Answer, Correct: ro.Correct}
		for _, st := range ro.Steps {
			rec.Actions = append(rec.Actions, strings.TrimSpace(st.Action.Op.String()+" "+actionArgs(st.Action)))
			rec.Results = append(rec.Results, st.Result.Summary)
			m := misuseLabel(st.Result)
			if m == "" {
				m = env.MisuseNone.String()
			}
			rec.Misuse = append(rec.Misuse, m)
		}
		recs = append(recs, rec)
	}
	add(greedy, "greedy")
	for _, ro := range sampled {
		add(ro, "sample")
	}
	data, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, t.ID+".json"), data, 0o644)
}

// misuseLabel names what a step did wrong: its own misuse and, at a step-limit
// cut-off, the episode's no_answer ("repeat, no_answer"); "" when nothing.
func misuseLabel(r env.Result) string {
	var parts []string
	if r.Misuse != env.MisuseNone {
		parts = append(parts, r.Misuse.String())
	}
	if r.CutOff {
		parts = append(parts, env.MisuseNoAnswer.String())
	}
	return strings.Join(parts, ", ")
}

// SaveResults writes one task's results as SaveEpisodes writes its episodes,
// for a trainer that reports only whether each attempt was right (a launched
// trainer's validation): its greedy attempt's when it has one, then its
// sampled attempts'. ReadScores reads them as it reads episodes.
func SaveResults(dir, task string, greedy *bool, sampled []bool) error {
	recs := make([]episodeRecord, 0, 1+len(sampled))
	if greedy != nil {
		recs = append(recs, episodeRecord{Task: task, Mode: "greedy", Correct: *greedy})
	}
	for _, ok := range sampled {
		recs = append(recs, episodeRecord{Task: task, Mode: "sample", Correct: ok})
	}
	data, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, task+".json"), data, 0o644)
}

// ValidationDir names the folder under a run's episodes/ that holds a
// validation's saved episodes: the split, then the step it ran after (the
// phase's for pixelis's own runs, run-wide for a launched trainer's).
func ValidationDir(split string, step int) string { return fmt.Sprintf("%s_step_%06d", split, step) }

// ParseValidationDir is ValidationDir's inverse; ok is false for a name it
// did not make.
func ParseValidationDir(name string) (split string, step int, ok bool) {
	i := strings.LastIndex(name, "_step_")
	if i <= 0 {
		return "", 0, false
	}
	digits := name[i+len("_step_"):]
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || len(digits) < 6 {
		return "", 0, false
	}
	return name[:i], n, true
}

// TaskScore is one task's result in a saved evaluation: its greedy episode's
// score (1 when correct) and its pass@1, the share of its sampled episodes
// that were correct. HasGreedy is false where no greedy episode was saved
// (a launched trainer's validation may have none): Greedy is then no score.
type TaskScore struct {
	Greedy, Pass1 float64
	HasGreedy     bool
}

// ReadScores reads the episodes SaveEpisodes wrote in dir, each task's
// scores by its id.
func ReadScores(dir string) (map[string]TaskScore, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := make(map[string]TaskScore, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var recs []episodeRecord
		if err := json.Unmarshal(b, &recs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		var sc TaskScore
		samples := 0
		for _, r := range recs {
			switch {
			case r.Mode == "greedy":
				sc.HasGreedy = true
				if r.Correct {
					sc.Greedy = 1
				}
			case r.Mode == "sample":
				samples++
				if r.Correct {
					sc.Pass1++
				}
			}
		}
		if samples > 0 {
			sc.Pass1 /= float64(samples)
		}
		if len(recs) > 0 {
			out[recs[0].Task] = sc
		}
	}
	return out, nil
}
