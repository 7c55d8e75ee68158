package env

import (
	"bytes"
	"strings"
	"testing"
)

// TestShiftsKeepTasksSolvable: under every shift the expert's plans still
// solve the tasks (a shift changes how a task looks, not whether its
// operations can answer it), but for at most 5 % of the blurred ones.
func TestShiftsKeepTasksSolvable(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 12
	}
	for _, shift := range Shifts()[1:] {
		t.Run(shift, func(t *testing.T) {
			cfg := testConfig()
			cfg.MaxSteps, cfg.OpCap = 12, 5 // the default budgets: a crowded count needs them
			cfg.Shift = shift
			ep := NewEpisode(cfg)
			fails := 0
			for i := range n * int(NumFamilies) {
				task := Generate(cfg, Val, i)
				ep.Reset(task)
				for _, a := range Solve(task) {
					ep.Step(a)
				}
				if !ep.Done() || !ep.Correct() {
					fails++
					if fails <= 3 && shift != ShiftBlur {
						got, _ := ep.Answer()
						t.Errorf("%s %s %q: answered %q, want %q", shift, task.ID, task.Question, got, task.Answer)
					}
				}
			}
			allowed := 0
			if shift == ShiftBlur {
				allowed = n * int(NumFamilies) / 20
			}
			if fails > allowed {
				t.Errorf("%s: %d/%d tasks failed", shift, fails, n*int(NumFamilies))
			}
		})
	}
}

// TestShiftsChangePixels: every shift draws other pixels than the world it
// shifts, for the same task index; the questions of the pixel-only shifts
// (dim, blur) stay the same.
func TestShiftsChangePixels(t *testing.T) {
	base := testConfig()
	for _, shift := range Shifts()[1:] {
		cfg := base
		cfg.Shift = shift
		differ := 0
		for i := range 30 {
			a, b := Generate(base, Test, i), Generate(cfg, Test, i)
			if !bytes.Equal(a.Frames[0].Pix, b.Frames[0].Pix) {
				differ++
			}
			if shift == ShiftBlur && (a.Question != b.Question || a.Answer != b.Answer) {
				t.Errorf("%s: task %d asks %q (%q), unshifted %q (%q)", shift, i, b.Question, b.Answer, a.Question, a.Answer)
			}
		}
		want := 25 // every frame: noise, blur
		if shift == ShiftLookalikes || shift == ShiftCrowded {
			want = 10 // the scenes that already had a look-alike, or the most objects, stay
		}
		if differ < want {
			t.Errorf("%s: only %d of 30 tasks look different", shift, differ)
		}
	}
}

// TestShiftValidation names the field and the known shifts.
func TestShiftValidation(t *testing.T) {
	cfg := testConfig()
	cfg.Shift = "fog"
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "Shift") || !strings.Contains(err.Error(), "lookalikes") {
		t.Fatalf("want the field and the shifts named, got %v", err)
	}
}
