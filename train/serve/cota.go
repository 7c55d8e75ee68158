package serve

import (
	"math"
	"slices"

	"github.com/pixelis/pixelis/train/env"
)

// cotaRecord is a finished episode as one CoTA record, the line `pixelis data
// gen` writes for the same task and steps. It is the one place the server
// builds a record with train/env's own constructor. An episode that answered
// right is a positive sample; any other is an outcome_negative one whose last
// step is to be avoided, so the record never teaches a wrong answer.
//
// Its difficulty bucket: `pixelis data gen` ranks the records of a file
// against each other (env.AssignBuckets), which a lone record cannot be, so
// the server ranks it against a fixed reference instead, the expert's
// records of the first difficultyRefTasks training tasks: below the
// reference's 33rd percentile of difficulty score simple, below its 66th
// medium, else hard.
func (s *Server) cotaRecord(t *env.Task, steps []env.Step) env.Sample {
	var rec env.Sample
	n := len(steps)
	if n > 0 && steps[n-1].Action.Op == env.OpAnswer && steps[n-1].Action.Answer == t.Answer {
		rec = env.NewSample(t, steps, env.TypePositive, nil)
	} else {
		roles := make([]env.Role, n)
		if n > 0 {
			roles[n-1] = env.RoleAvoid
		}
		rec = env.NewSample(t, steps, env.TypeOutcomeNegative, roles)
	}
	cuts := s.difficultyCuts()
	rec.Difficulty = env.Buckets[len(env.Buckets)-1]
	for i, c := range cuts {
		if rec.DifficultyScore < c {
			rec.Difficulty = env.Buckets[i]
			break
		}
	}
	return rec
}

// difficultyRefTasks is the size of the reference the buckets come from.
const difficultyRefTasks = 300

// referenceCuts computes the difficulty scores that separate the buckets
// among the expert's records of the first difficultyRefTasks training tasks,
// ranked as env.AssignBuckets ranks a file.
func referenceCuts(cfg env.Config) []float64 {
	ep := env.NewEpisode(cfg)
	recs := make([]env.Sample, difficultyRefTasks)
	for i := range recs {
		t := env.Generate(cfg, env.Train, i)
		env.SolveIn(ep, t)
		recs[i] = env.NewSample(t, ep.Trajectory(), env.TypePositive, nil)
	}
	env.AssignBuckets(recs)
	var cuts []float64
	for b := range len(env.Buckets) - 1 {
		lowest := math.Inf(1) // the lowest score of the next bucket
		for _, r := range recs {
			if r.Difficulty == env.Buckets[b+1] {
				lowest = min(lowest, r.DifficultyScore)
			}
		}
		cuts = append(cuts, lowest)
	}
	slices.Sort(cuts)
	return cuts
}
