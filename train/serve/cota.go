package serve

import "github.com/pixelis/pixelis/train/env"

// cotaRecord is a finished episode as one CoTA record, the line `pixelis data
// gen` writes for the same task and steps (difficulty bucket left empty:
// buckets are assigned over a whole data set). It is the one place the server
// builds a record with train/env's own constructor. An episode that answered
// right is a positive sample; any other is an outcome_negative one whose last
// step is to be avoided, so the record never teaches a wrong answer.
func cotaRecord(t *env.Task, steps []env.Step) env.Sample {
	n := len(steps)
	if n > 0 && steps[n-1].Action.Op == env.OpAnswer && steps[n-1].Action.Answer == t.Answer {
		return env.NewSample(t, steps, env.TypePositive, nil)
	}
	roles := make([]env.Role, n)
	if n > 0 {
		roles[n-1] = env.RoleAvoid
	}
	return env.NewSample(t, steps, env.TypeOutcomeNegative, roles)
}
