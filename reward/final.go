package reward

import "github.com/pixelis/pixelis/train/env"

// Trajectory is one finished rollout as the reward components see it.
type Trajectory struct {
	// Steps in order; each Obs is the observation the action was chosen from
	// and Index the action's index in the discrete action space.
	Steps []env.Step
	// FinalObs is the observation after the last step.
	FinalObs []float32
	// Answered is true when the episode ended with ANSWER; Correct when that
	// answer matched (the env does the exact match).
	Answered, Correct bool
	// Frames of the task's image (1 for a still image).
	Frames int
	// Group identifies the task group the rollout belongs to (GRPO groups
	// several rollouts of one task); RaPR is computed per group.
	Group int
}

// Score is one component's reward for one trajectory. Value is the
// trajectory-level raw reward; PerStep (one entry per step) attributes it to
// steps, with Σ PerStep = Value.
type Score struct {
	Value   float64
	PerStep []float64
}

// Component is one term of the reward. Score returns one Score per trajectory,
// in order. Components may keep state across calls (running statistics, a
// trained model); the Orchestrator calls them once per batch.
type Component interface {
	Name() string
	Score(trajs []*Trajectory) []Score
}

// The built-in components' names (registry.go lists every term).
const (
	NameFinal     = "final"
	NameCoherence = "coherence"
	NameCuriosity = "curiosity"
	NamePenalty   = "penalty" // the tool-misuse penalty, added unnormalised
	NameCost      = "cost"    // the price of the operations used, added unnormalised
)

// priced reports whether a component is a price added to the reward as it is
// (unnormalised and unweighted) rather than a weighted, z-scored term, as the
// registry says.
func priced(name string) bool {
	t, ok := Lookup(name)
	return ok && t.Priced
}

// Final is the task reward: 1 when the answer was correct, else 0, attributed
// to the ANSWER step.
type Final struct{}

// NewFinal returns the task-reward component.
func NewFinal() *Final { return &Final{} }

// Name is "final".
func (*Final) Name() string { return NameFinal }

// Score gives r = 1[correct] at the ANSWER step (the last one when the
// trajectory holds no ANSWER but is marked correct, which the env should not
// produce).
func (*Final) Score(trajs []*Trajectory) []Score {
	out := make([]Score, len(trajs))
	for i, t := range trajs {
		s := Score{PerStep: make([]float64, len(t.Steps))}
		if t.Correct {
			s.Value = 1
			if k := answerStep(t); k >= 0 {
				s.PerStep[k] = 1
			}
		}
		out[i] = s
	}
	return out
}

// answerStep is the index of the last ANSWER step, else the last step, else −1.
func answerStep(t *Trajectory) int {
	for k := len(t.Steps) - 1; k >= 0; k-- {
		if t.Steps[k].Action.Op == env.OpAnswer {
			return k
		}
	}
	return len(t.Steps) - 1
}
