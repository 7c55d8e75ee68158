package serve

import "github.com/pixelis/pixelis/train/env"

// cotaRecord is a finished episode as one CoTA record, the line `pixelis data
// gen` writes for the same task and steps (difficulty bucket left empty:
// buckets are assigned over a whole data set). It is the one place the server
// builds a record with train/env's own constructor.
func cotaRecord(t *env.Task, steps []env.Step) env.Sample {
	return env.NewSample(t, steps)
}
