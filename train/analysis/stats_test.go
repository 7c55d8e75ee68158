package analysis

import (
	"math"
	"reflect"
	"testing"

	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/rollout"
)

// Shorthands for crafted trajectories.
var (
	segA  = env.Action{Op: env.OpSegment, X: 4, Y: 4}
	segB  = env.Action{Op: env.OpSegment, X: 12, Y: 4}
	props = env.Action{Op: env.OpProperties}
	zoom  = env.Action{Op: env.OpZoom}
	read  = env.Action{Op: env.OpReadText}
	track = env.Action{Op: env.OpTrack}
)

func answer(v string) env.Action { return env.Action{Op: env.OpAnswer, Answer: v} }

// st is a step that returned summary, with an optional misuse.
func st(a env.Action, summary string, m env.Misuse) env.Step {
	return env.Step{Action: a, Result: env.Result{Summary: summary, Misuse: m}}
}

func ok(a env.Action, summary string) env.Step { return st(a, summary, env.MisuseNone) }

// cutOff marks s as the step at which its episode hit the step limit.
func cutOff(s env.Step) env.Step {
	s.Result.CutOff = true
	return s
}

func TestLoops(t *testing.T) {
	tests := []struct {
		name           string
		acts           []env.Action
		repeat, cycles []int // indices of steps that close a loop
	}{
		{"empty", nil, nil, nil},
		{"expert", []env.Action{segA, props, answer("red")}, nil, nil},
		{"repeat", []env.Action{segA, props, props, props, answer("red")}, []int{2, 3}, nil},
		{"same op, other point is no repeat", []env.Action{segA, segB, answer("red")}, nil, nil},
		{"A B A B", []env.Action{segA, props, segA, props}, nil, []int{3}},
		{"A B A B A", []env.Action{segA, props, segA, props, segA}, nil, []int{3, 4}},
		{"A B A is not yet a cycle", []env.Action{segA, props, segA, answer("1")}, nil, nil},
		{"A B C A B C", []env.Action{segA, zoom, read, segA, zoom, read}, nil, []int{5}},
		{"period 4 is beyond MaxCyclePeriod", []env.Action{segA, zoom, read, track, segA, zoom, read, track}, nil, nil},
		{"repeat inside a cycle counts as repeat", []env.Action{segA, props, segA, props, props}, []int{4}, []int{3}},
		{"A A A: repeats, not a cycle", []env.Action{props, props, props, props}, []int{1, 2, 3}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, cyc := Loops(tc.acts)
			if got := indices(rep); !reflect.DeepEqual(got, tc.repeat) {
				t.Errorf("repeat steps %v, want %v", got, tc.repeat)
			}
			if got := indices(cyc); !reflect.DeepEqual(got, tc.cycles) {
				t.Errorf("cycle steps %v, want %v", got, tc.cycles)
			}
		})
	}
}

func indices(b []bool) []int {
	var out []int
	for i, v := range b {
		if v {
			out = append(out, i)
		}
	}
	return out
}

func TestEfficiency(t *testing.T) {
	tests := []struct {
		name  string
		steps []env.Step
		want  float64
	}{
		{"empty", nil, 0},
		{"expert: 2 observations in 3 actions", []env.Step{ok(segA, "obj 1"), ok(props, "obj 1: red square"), ok(answer("red"), "answer")}, 2.0 / 3},
		{"same object from two cells counts once", []env.Step{ok(segA, "obj 1"), ok(segB, "obj 1"), ok(answer("red"), "answer")}, 1.0 / 3},
		{"same text from different ops counts twice", []env.Step{ok(segA, "x"), ok(props, "x")}, 1},
		{"misuses observe nothing", []env.Step{st(props, "no segmented object", env.MisuseNoSegment), ok(segA, "obj 1"),
			st(segA, "repeat", env.MisuseRepeat), ok(answer("red"), "answer")}, 1.0 / 4},
		{"cut-off step still observed", []env.Step{ok(segA, "obj 1"), cutOff(ok(props, "obj 1: red · step limit reached without an answer"))}, 1},
		{"cut-off note does not make a result new", []env.Step{ok(segB, "obj 2"), ok(segA, "obj 1"), cutOff(ok(segB, "obj 2 · step limit reached without an answer"))}, 2.0 / 3},
		{"a cut-off misuse is no observation", []env.Step{ok(segA, "obj 1"), cutOff(st(segA, "repeat of the previous call · step limit reached without an answer", env.MisuseRepeat))}, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Efficiency(tc.steps); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Efficiency = %v, want %v", got, tc.want)
			}
		})
	}
}

// played builds a finished episode; it is correct when it answers truth.
func played(task *env.Task, steps ...env.Step) *rollout.Rollout {
	ro := &rollout.Rollout{Task: task, Steps: steps}
	if n := len(steps); n > 0 && steps[n-1].Action.Op == env.OpAnswer {
		ro.Answer, ro.Answered = steps[n-1].Action.Answer, true
		ro.Correct = ro.Answer == task.Answer
	}
	return ro
}

func TestSummarize(t *testing.T) {
	task := &env.Task{ID: "t", Answer: "red"}
	rs := []*rollout.Rollout{
		// expert: correct, 3 steps, 2 ops, no loop, no misuse, efficiency 2/3
		played(task, ok(segA, "obj 1"), ok(props, "obj 1: red"), ok(answer("red"), "answer")),
		// repeat loop, wrong: 4 steps, 3 ops, 1 repeat (misuse), efficiency 2/4
		played(task, ok(segA, "obj 1"), ok(props, "obj 1: red"), st(props, "repeat", env.MisuseRepeat), ok(answer("blue"), "answer")),
		// cycle, cut off: 4 steps, 4 ops, 1 cycle step, 1 no_answer misuse, efficiency 2/4
		played(task, ok(segA, "obj 1"), ok(props, "obj 1: red"), ok(segA, "obj 1"), cutOff(ok(props, "obj 1: red · step limit reached without an answer"))),
		// no visual operation: 1 step, efficiency 0, bad answer
		played(task, st(answer("zzz"), "not in vocabulary", env.MisuseBadAnswer)),
	}
	ms := make([]trajMeasure, len(rs))
	coh := []float64{0.4, -0.2, -0.6, 0}
	for i, ro := range rs {
		ms[i] = measure(ro, coh[i])
	}
	s := summarize(ms, 2)
	want := Stats{
		Trajectories: 4,
		Success:      0.25,
		Answered:     0.75,
		LenMean:      12.0 / 4,
		LenHist:      []int{0, 1, 0, 1, 2},
		Tools: map[string]float64{"SEGMENT_OBJECT_AT": 4.0 / 4, "GET_PROPERTIES": 5.0 / 4, "ZOOM_IN": 0, "READ_TEXT": 0,
			"TRACK_OBJECT": 0},
		Coherence:  (0.4 - 0.2 - 0.6) / 4,
		LoopRate:   0.5,
		RepeatRate: 0.25,
		CycleRate:  0.25,
		LoopSteps:  2.0 / 12,
		MisuseRate: 3.0 / 12,
		Misuse: map[string]float64{"no_segment": 0, "still_image": 0, "nothing_there": 0, "out_of_range": 0, "over_cap": 0,
			"illegible": 0, "repeat": 1.0 / 12, "no_answer": 1.0 / 12, "bad_answer": 1.0 / 12},
		RaPR:       0.75,
		Efficiency: (2.0/3 + 0.5 + 0.5 + 0) / 4,
	}
	// Every sequence appears once: ties go to the sequence text in byte order,
	// so "ANSWER" comes first and the top 2 stop after the expert's sequence.
	want.TopSequences = []SeqCount{{"ANSWER", 1}, {"SEGMENT_OBJECT_AT → GET_PROPERTIES → ANSWER", 1}}
	if !approxStats(s, want) {
		t.Errorf("summarize:\n got %+v\nwant %+v", s, want)
	}
}

func TestTopSequencesOrder(t *testing.T) {
	got := topSequences(map[string]int{"b": 2, "a": 2, "c": 5, "d": 1}, 3)
	want := []SeqCount{{"c", 5}, {"a", 2}, {"b", 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("topSequences = %v, want %v", got, want)
	}
}

func approxStats(a, b Stats) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }
	if a.Trajectories != b.Trajectories || !reflect.DeepEqual(a.LenHist, b.LenHist) || !reflect.DeepEqual(a.TopSequences, b.TopSequences) {
		return false
	}
	for _, p := range [][2]float64{{a.Success, b.Success}, {a.Answered, b.Answered}, {a.LenMean, b.LenMean}, {a.Coherence, b.Coherence},
		{a.LoopRate, b.LoopRate}, {a.RepeatRate, b.RepeatRate}, {a.CycleRate, b.CycleRate}, {a.LoopSteps, b.LoopSteps},
		{a.MisuseRate, b.MisuseRate}, {a.RaPR, b.RaPR}, {a.Efficiency, b.Efficiency}} {
		if !eq(p[0], p[1]) {
			return false
		}
	}
	for _, mm := range [][2]map[string]float64{{a.Tools, b.Tools}, {a.Misuse, b.Misuse}} {
		if len(mm[0]) != len(mm[1]) {
			return false
		}
		for k, v := range mm[1] {
			if w, ok := mm[0][k]; !ok || !eq(v, w) {
				return false
			}
		}
	}
	return true
}
