package reward

import (
	"slices"
	"testing"

	"github.com/pixelis/pixelis/configs"
)

// The registry installs its weighted terms in configs, in its order: the list
// configs' tests stand in for (configs/main_test.go).
func TestWeightNamesInstalled(t *testing.T) {
	want := []string{NameFinal, NameCoherence, NameCuriosity}
	if got := Weighted(); !slices.Equal(got, want) {
		t.Errorf("Weighted() = %v, want %v", got, want)
	}
	if got := configs.WeightNames(); !slices.Equal(got, want) {
		t.Errorf("configs.WeightNames() = %v, want the registry's %v", got, want)
	}
}

// A registered term is built into every orchestrator after the others, its
// weight filled in from a stage's table (0 when the stage leaves it out), and
// removed again by the function Register returns.
func TestRegister(t *testing.T) {
	if _, err := Register(Term{Name: NameCoherence, New: func(Parts) (Component, error) { return NewFinal(), nil }}); err == nil {
		t.Error("a second coherence was registered")
	}
	if _, err := Register(Term{Name: "x"}); err == nil {
		t.Error("a term without a constructor was registered")
	}
	unregister, err := Register(Term{Name: "always", New: func(Parts) (Component, error) { return named{"always"}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	o, err := Build(Parts{Config: configs.Default().Reward})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{NameFinal, NameCoherence, NameCuriosity, NamePenalty, NameCost, "always"}; !slices.Equal(o.Names(), want) {
		t.Errorf("orchestrator components %v, want %v", o.Names(), want)
	}
	if w := StageWeights(configs.Weights{NameFinal: 1}); len(w) != 4 || w["always"] != 0 || w[NameFinal] != 1 {
		t.Errorf("StageWeights = %v", w)
	}
	if _, err := Build(Parts{Config: configs.Default().Reward}); err != nil {
		t.Fatal(err)
	}
	bad, err := Register(Term{Name: "misnamed", New: func(Parts) (Component, error) { return named{"other"}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(Parts{Config: configs.Default().Reward}); err == nil {
		t.Error("a term whose component has another name was built")
	}
	bad()
	unregister()
	if _, ok := Lookup("always"); ok || len(Terms()) != 5 {
		t.Errorf("after unregister: %d terms", len(Terms()))
	}
}

// named is a component that scores 0 under a given name.
type named struct{ name string }

func (n named) Name() string { return n.name }
func (named) Score(trajs []*Trajectory) []Score {
	return make([]Score, len(trajs))
}
