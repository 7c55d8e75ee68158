package runs

import "fmt"

// A Refusal is a rule refusing what the user asked for: a directory that
// cannot hold the run, a checkpoint that is not the run's, a run that is
// finished. Its message says what to do instead.
type Refusal struct{ err error }

func (r *Refusal) Error() string { return r.err.Error() }
func (r *Refusal) Unwrap() error { return r.err }

func refusef(format string, args ...any) error {
	return &Refusal{fmt.Errorf(format, args...)}
}
