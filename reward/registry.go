package reward

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pixelis/pixelis/configs"
)

// Term is one reward component as the registry knows it: its name (the key of
// its weight in a curriculum stage, of its metrics reward/<name>/raw and
// /norm, of its column in pixelis serve's scores), what it is for and how it
// is built. Everything that lists the reward components reads them here, or
// from a run that was built from here.
type Term struct {
	Name string
	// Doc says in one line what the term pays for; the docs and the live-edit
	// field of its weight show it.
	Doc string
	// Short labels the term beside a sample's step in the console ("coh");
	// "" shows Name.
	Short string
	// Priced terms are added to the reward as they are: neither z-scored nor
	// weighted, so their scale is their config's (the misuse penalty, the
	// tool cost). The others are weighted, and a curriculum stage weighs them.
	Priced bool
	// PerStep terms need only the step just taken (and whether it ended the
	// episode), so pixelis serve can pay them at every step, building them
	// from Parts.Config alone; the others compare a trajectory with others or
	// with a model trained on the batch.
	PerStep bool
	// New builds the component from the run's reward settings and the
	// models terms share.
	New func(Parts) (Component, error)
}

// Parts is what a term's constructor may use: the [reward] section and the
// observation models that components share, built once per orchestrator
// (train/setup builds them from run.seed's curiosity stream).
type Parts struct {
	Config configs.Reward
	// Embedder encodes observations for coherence's similarity term: the ICM's
	// encoder in curiosity mode "icm", a fixed random projection otherwise.
	Embedder Embedder
	// ICM is the curiosity model in mode "icm", nil otherwise.
	ICM *ICM
}

// terms is the registry, in scoring order: coherence before the curiosity
// whose ICM may serve as its embedder, so both see the same encoder version.
var terms = []Term{
	{Name: NameFinal, PerStep: true, Doc: "1 for a correct answer, else 0", New: func(Parts) (Component, error) { return NewFinal(), nil }},
	{Name: NameCoherence, Short: "coh", Doc: "logical operation pairs and the similarity of consecutive views ([reward.coherence])",
		New: func(p Parts) (Component, error) { return NewCoherence(p.Config.Coherence, p.Embedder), nil }},
	{Name: NameCuriosity, Short: "cur", Doc: "exploration: the ICM's prediction error or the RaPR bonus ([reward.curiosity])",
		New: newCuriosity},
	{Name: NamePenalty, Short: "pen", Priced: true, PerStep: true, Doc: "the tool-misuse penalties ([reward.misuse])",
		New: func(p Parts) (Component, error) { return NewMisuse(p.Config.Misuse), nil }},
	{Name: NameCost, Priced: true, PerStep: true, Doc: "the price of the visual operations used ([reward.tool_cost])",
		New: func(p Parts) (Component, error) { return NewCost(p.Config.ToolCost), nil }},
}

func init() {
	configs.SetWeightNames(Weighted)
}

// newCuriosity is the curiosity of reward.curiosity.mode: the ICM the parts
// hold, or RaPR.
func newCuriosity(p Parts) (Component, error) {
	if p.ICM != nil {
		return p.ICM, nil
	}
	return NewRaPR(p.Config.Curiosity), nil
}

// Terms returns the registry in scoring order.
func Terms() []Term { return slices.Clone(terms) }

// Lookup returns the registered term named name.
func Lookup(name string) (Term, bool) {
	i := slices.IndexFunc(terms, func(t Term) bool { return t.Name == name })
	if i < 0 {
		return Term{}, false
	}
	return terms[i], true
}

// Weighted returns the names of the weighted (not priced) terms in scoring
// order: the names a curriculum stage's weights may use.
func Weighted() []string {
	var names []string
	for _, t := range terms {
		if !t.Priced {
			names = append(names, t.Name)
		}
	}
	return names
}

// Register adds a term after the registered ones and returns the function
// that removes it again. Call it before any config is loaded or orchestrator
// built (from an init function, or at the start of a test).
func Register(t Term) (unregister func(), err error) {
	if t.Name == "" || t.New == nil {
		return nil, errors.New("reward: a term needs a name and a constructor")
	}
	if _, ok := Lookup(t.Name); ok {
		return nil, fmt.Errorf("reward: a term named %q is registered already", t.Name)
	}
	terms = append(terms, t)
	return func() {
		terms = slices.DeleteFunc(terms, func(x Term) bool { return x.Name == t.Name })
	}, nil
}

// Build returns an orchestrator over every registered term, in the
// registry's order, under the [reward] settings of parts.
func Build(parts Parts) (*Orchestrator, error) {
	comps := make([]Component, 0, len(terms))
	for _, t := range terms {
		c, err := t.New(parts)
		if err != nil {
			return nil, fmt.Errorf("reward %s: %w", t.Name, err)
		}
		if c.Name() != t.Name {
			return nil, fmt.Errorf("reward: term %q built a component named %q", t.Name, c.Name())
		}
		comps = append(comps, c)
	}
	return NewOrchestrator(parts.Config, comps...)
}

// StageWeights are a curriculum stage's weights as the orchestrator takes
// them: every weighted term, the ones the stage leaves out at 0.
func StageWeights(w configs.Weights) map[string]float64 {
	out := make(map[string]float64, len(terms))
	for _, n := range Weighted() {
		out[n] = w[n]
	}
	return out
}
