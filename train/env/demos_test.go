package env

import (
	"testing"
)

// Each sample type has the shape its definition gives it, on every family.
func TestDemonstrationTypes(t *testing.T) {
	cfg := testConfig()
	ep := NewEpisode(cfg)
	for _, typ := range SampleTypes {
		t.Run(typ, func(t *testing.T) {
			var mix Mix
			switch typ {
			case TypePositive:
				mix.Positive = 1
			case TypeSelfCorrection:
				mix.SelfCorrection = 1
			case TypeTrapPerceptual:
				mix.TrapPerceptual = 1
			case TypeTrapLogical:
				mix.TrapLogical = 1
			case TypeOutcomeNegative:
				mix.OutcomeNegative = 1
			case TypeDirect:
				mix.Direct = 1
			}
			got := 0
			for i := range 120 {
				task := Generate(cfg, Train, i)
				d := Demonstrate(ep, task, mix)
				if d.Type == TypePositive && typ != TypePositive {
					continue // the type did not fit this task
				}
				got++
				checkDemo(t, ep, task, d)
			}
			least := 60
			if typ == TypeDirect {
				least = 15 // counting and comparison without a look-alike: a sixth of the tasks
			}
			if got < least {
				t.Errorf("%s fits only %d of 120 tasks", typ, got)
			}
		})
	}
}

func checkDemo(t *testing.T, ep *Episode, task *Task, d Demo) {
	t.Helper()
	n := len(d.Actions)
	last := d.Roles[n-1]
	ep.Reset(task)
	for _, a := range d.Actions {
		ep.Step(a)
	}
	if ep.Correct() != (last == RoleImitate) {
		t.Fatalf("%s %s: right %v with its answer %s", task.ID, d.Type, ep.Correct(), last)
	}
	switch d.Type {
	case TypePositive:
		for _, r := range d.Roles {
			if r != RoleImitate {
				t.Fatalf("%s: a positive demonstration with a %s step", task.ID, r)
			}
		}
	case TypeSelfCorrection:
		if d.Actions[0].Op != OpSegment || d.Roles[0] != RoleSkip || d.Actions[1].Op != OpProperties || d.Roles[1] != RoleImitate {
			t.Fatalf("%s: a self-correction starts %v %v", task.ID, d.Actions[:2], d.Roles[:2])
		}
		if ep.Trajectory()[1].Result.Colour == "" {
			t.Fatalf("%s: the check after the wrong click measured nothing", task.ID)
		}
	case TypeDirect:
		if n != 1 || last != RoleImitate || task.Confusable {
			t.Fatalf("%s: a direct answer of %d steps ending %s, confusable %v", task.ID, n, last, task.Confusable)
		}
	case TypeTrapPerceptual:
		if n > 2 || last != RoleAvoid {
			t.Fatalf("%s: a perceptual trap of %d steps ending %s", task.ID, n, last)
		}
	case TypeTrapLogical, TypeOutcomeNegative:
		if last != RoleAvoid {
			t.Fatalf("%s: %s ends %s", task.ID, d.Type, last)
		}
		for _, r := range d.Roles[:n-1] {
			if r != RoleImitate {
				t.Fatalf("%s: %s with a %s operation", task.ID, d.Type, r)
			}
		}
	}
}
