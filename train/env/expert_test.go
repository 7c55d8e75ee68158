package env

import "testing"

// TestExpertSolvesEveryFamily runs the expert's plans through a real Episode
// with the default (tight) budgets and checks the answers.
func TestExpertSolvesEveryFamily(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	cfg := testConfig()
	ep := NewEpisode(cfg)
	for _, fam := range AllFamilies() {
		t.Run(fam.String(), func(t *testing.T) {
			c := cfg
			c.Families = []Family{fam}
			fails := 0
			for i := range n {
				task := Generate(c, Train, i)
				acts := Solve(task)
				ep.Reset(task)
				for _, a := range acts {
					if r, _ := ep.Step(a); r.Misuse != MisuseNone {
						t.Errorf("%s: step %v misused: %v (%s)", task.ID, a, r.Misuse, r.Summary)
					}
				}
				if !ep.Done() || !ep.Correct() {
					fails++
					if fails <= 5 {
						got, _ := ep.Answer()
						t.Errorf("%s %q: answered %q, want %q; scene %v", task.ID, task.Question, got, task.Answer, task.Scene.Objects)
					}
				}
			}
			if fails > 0 {
				t.Errorf("%d/%d tasks failed", fails, n)
			}
		})
	}
}
