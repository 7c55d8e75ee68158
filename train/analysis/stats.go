package analysis

import (
	"cmp"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/rollout"
)

// MaxCyclePeriod is the longest block of actions whose immediate repetition
// counts as a cycle (A→B→C→A→B→C has period 3).
const MaxCyclePeriod = 3

// Loops marks the steps of a trajectory that close a loop. Actions compare as
// the environment records them (operation and the arguments it takes: the
// point of a SEGMENT, the value of an ANSWER). Step k closes a loop of period
// p when the p actions ending at k equal the p actions before them:
//
//	a[k−j] == a[k−j−p]  for every j in [0, p)
//
// Period 1 is a repeat (the same call twice back to back, the environment's
// "repeat" misuse); periods 2…MaxCyclePeriod are cycles such as A→B→A→B,
// which the environment does not flag because no single step repeats its
// predecessor. A step that closes both counts as a repeat. In A→B→A→B→A the
// fourth step closes a cycle (A,B twice) and the fifth continues it (B,A
// twice): 2 loop steps. The second round of a cycle observes nothing new, as
// the operations act on the same state.
func Loops(actions []env.Action) (repeat, cycle []bool) {
	n := len(actions)
	repeat, cycle = make([]bool, n), make([]bool, n)
	for k := range actions {
		if k >= 1 && actions[k] == actions[k-1] {
			repeat[k] = true
			continue
		}
		for p := 2; p <= MaxCyclePeriod && k+1 >= 2*p; p++ {
			same := true
			for j := 0; j < p && same; j++ {
				same = actions[k-j] == actions[k-j-p]
			}
			if same {
				cycle[k] = true
				break
			}
		}
	}
	return repeat, cycle
}

// useful reports whether a step's observation can count as information: the
// call was not a misuse. The step-limit cut-off (Result.CutOff) is marked on
// whatever step came last and says nothing about that step's own result.
func useful(r env.Result) bool {
	return r.Misuse == env.MisuseNone
}

// Efficiency is exploration efficiency: distinct useful observations per action,
//
//	efficiency = |{ (op, result) : visual operation, not a misuse }| / actions
//
// where (op, result) is the operation's name and the one-line result the
// environment returned (Result.Summary, measured from pixels). Two calls that
// return the same thing — segmenting one object from two cells, measuring the
// same mask twice — count once; ANSWER counts as an action but observes
// nothing, so an expert's SEGMENT → GET_PROPERTIES → ANSWER scores 2/3 and a
// trajectory that repeats itself scores less. 0 for an empty trajectory.
func Efficiency(steps []env.Step) float64 {
	if len(steps) == 0 {
		return 0
	}
	seen := map[[2]string]bool{}
	for _, st := range steps {
		if st.Action.Op == env.OpAnswer || !useful(st.Result) {
			continue
		}
		// The cut-off note is not part of what the operation observed.
		sum, _, _ := strings.Cut(st.Result.Summary, " · step limit reached")
		seen[[2]string{st.Action.Op.String(), sum}] = true
	}
	return float64(len(seen)) / float64(len(steps))
}

// Sequence is the trajectory's operation names joined by " → ".
func Sequence(steps []env.Step) string {
	names := make([]string, len(steps))
	for i, st := range steps {
		names[i] = st.Action.Op.String()
	}
	return strings.Join(names, " → ")
}

// trajMeasure is everything the statistics need from one trajectory.
type trajMeasure struct {
	steps, ops      int
	repeats, cycles int // loop steps of period 1 and of period ≥ 2
	misuses         int
	misuseKinds     [env.NumMisuses]int
	tools           [env.NumOps]int
	efficiency      float64
	seq             string
	coherence       float64
	answered        bool
	correct         bool
}

func (m trajMeasure) loopSteps() int { return m.repeats + m.cycles }

func measure(ro *rollout.Rollout, coherence float64) trajMeasure {
	m := trajMeasure{steps: len(ro.Steps), ops: ro.Ops(), efficiency: Efficiency(ro.Steps), seq: Sequence(ro.Steps),
		coherence: coherence, answered: ro.Answered, correct: ro.Correct}
	acts := make([]env.Action, len(ro.Steps))
	for i, st := range ro.Steps {
		acts[i] = st.Action
		if st.Result.Misuse != env.MisuseNone {
			m.misuses++
			if st.Result.Misuse < env.NumMisuses {
				m.misuseKinds[st.Result.Misuse]++
			}
		}
		if st.Result.CutOff { // the episode's no_answer, on top of the step's own misuse
			m.misuses++
			m.misuseKinds[env.MisuseNoAnswer]++
		}
		if st.Action.Op < env.NumOps {
			m.tools[st.Action.Op]++
		}
	}
	rep, cyc := Loops(acts)
	for i := range acts {
		if rep[i] {
			m.repeats++
		} else if cyc[i] {
			m.cycles++
		}
	}
	return m
}

// SeqCount is one operation sequence and how many trajectories followed it.
type SeqCount struct {
	Seq   string `json:"seq"`
	Count int    `json:"count"`
}

// Stats summarises a set of trajectories (one model's greedy or sampled
// episodes on a group of tasks). Rates of trajectories are shares of
// Trajectories; rates of actions are shares of all actions taken.
type Stats struct {
	Trajectories int     `json:"trajectories"`
	Success      float64 `json:"success"`  // share answered correctly
	Answered     float64 `json:"answered"` // share that ended with ANSWER
	// LenMean is the mean number of actions, ANSWER included; LenHist[k] counts
	// the trajectories of k actions.
	LenMean float64 `json:"len_mean"`
	LenHist []int   `json:"len_hist"`
	// Tools is calls per trajectory of every visual operation (ANSWER excluded).
	Tools map[string]float64 `json:"tools"`
	// TopSequences are the most common operation sequences, most frequent
	// first, ties by sequence.
	TopSequences []SeqCount `json:"top_sequences"`
	// Coherence is the mean coherence reward component (reward.Coherence) of
	// the trajectories, in [−1, 1].
	Coherence float64 `json:"coherence"`
	// LoopRate is the share of trajectories with at least one loop step (see
	// Loops); RepeatRate and CycleRate split it by period; LoopSteps is the
	// share of actions that close a loop.
	LoopRate   float64 `json:"loop_rate"`
	RepeatRate float64 `json:"repeat_rate"`
	CycleRate  float64 `json:"cycle_rate"`
	LoopSteps  float64 `json:"loop_steps"`
	// MisuseRate is misuses per action; Misuse splits it by kind (env.Misuse
	// names), each per action. An episode cut off at its step limit counts one
	// no_answer besides whatever its last step's own misuse was.
	MisuseRate float64            `json:"misuse_rate"`
	Misuse     map[string]float64 `json:"misuse"`
	// RaPR is the rate of pixel-space reasoning: the share of trajectories
	// that call at least one visual operation.
	RaPR float64 `json:"rapr"`
	// Efficiency is the mean exploration efficiency (see Efficiency).
	Efficiency float64 `json:"efficiency"`
}

// summarize computes Stats over measured trajectories; top is how many
// sequences to keep.
func summarize(ms []trajMeasure, top int) Stats {
	s := Stats{Trajectories: len(ms), Tools: map[string]float64{}, Misuse: map[string]float64{}, LenHist: []int{}}
	if len(ms) == 0 {
		return s
	}
	var actions, misuses, loopSteps int
	var kinds [env.NumMisuses]int
	var tools [env.NumOps]int
	seqs := map[string]int{}
	for _, m := range ms {
		n := float64(1)
		if m.correct {
			s.Success += n
		}
		if m.answered {
			s.Answered += n
		}
		s.LenMean += float64(m.steps)
		for len(s.LenHist) <= m.steps {
			s.LenHist = append(s.LenHist, 0)
		}
		s.LenHist[m.steps]++
		s.Coherence += m.coherence
		if m.loopSteps() > 0 {
			s.LoopRate++
		}
		if m.repeats > 0 {
			s.RepeatRate++
		}
		if m.cycles > 0 {
			s.CycleRate++
		}
		if m.ops > 0 {
			s.RaPR++
		}
		s.Efficiency += m.efficiency
		actions += m.steps
		misuses += m.misuses
		loopSteps += m.loopSteps()
		for k, c := range m.misuseKinds {
			kinds[k] += c
		}
		for k, c := range m.tools {
			tools[k] += c
		}
		seqs[m.seq]++
	}
	t := float64(len(ms))
	for _, p := range []*float64{&s.Success, &s.Answered, &s.LenMean, &s.Coherence, &s.LoopRate, &s.RepeatRate, &s.CycleRate, &s.RaPR, &s.Efficiency} {
		*p /= t
	}
	a := float64(max(actions, 1))
	s.LoopSteps = float64(loopSteps) / a
	s.MisuseRate = float64(misuses) / a
	for k := env.MisuseNone + 1; k < env.NumMisuses; k++ {
		s.Misuse[k.String()] = float64(kinds[k]) / a
	}
	for op := env.OpSegment; op < env.OpAnswer; op++ {
		s.Tools[op.String()] = float64(tools[op]) / t
	}
	s.TopSequences = topSequences(seqs, top)
	return s
}

// topSequences returns the k most common sequences, ties broken by the
// sequence text so the order never depends on map iteration.
func topSequences(counts map[string]int, k int) []SeqCount {
	out := make([]SeqCount, 0, len(counts))
	for s, c := range counts {
		out = append(out, SeqCount{s, c})
	}
	slices.SortFunc(out, func(a, b SeqCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.Seq, b.Seq)
	})
	if k >= 0 && len(out) > k {
		out = out[:k]
	}
	return out
}
