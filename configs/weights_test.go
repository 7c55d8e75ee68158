package configs

import (
	"bytes"
	"strings"
	"testing"
)

// A --set of a weight names a weighted component, as a file's key does; a new
// key reaches the stage's table.
func TestSetWeights(t *testing.T) {
	cfg := Default()
	err := Apply(cfg, []string{"curriculum.stages[1].weights.curiosty=0.2"})
	if err == nil || !strings.Contains(err.Error(), "curriculum.stages[1].weights.curiosty: unknown key") ||
		!strings.Contains(err.Error(), "did you mean curriculum.stages[1].weights.curiosity") {
		t.Errorf("a slip in a --set weight: %v", err)
	}
	if err := Apply(cfg, []string{"curriculum.stages[1].weights.curiosity=0.2"}); err != nil {
		t.Fatal(err)
	}
	if w := cfg.Curriculum.Stages[1].Weights; w["curiosity"] != 0.2 || w["coherence"] != 0.1 {
		t.Errorf("stage weights after --set: %v", w)
	}
}

// Encode writes a stage's weights in the registry's order, whatever order
// the file had them in, and names the registry does not list after them.
func TestEncodeWeightsInRegistryOrder(t *testing.T) {
	cfg, err := Parse("t.toml", "[[curriculum.stages]]\nname = \"a\"\nweights = { curiosity = 0.5, final = 1.0 }\n")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Encode(&b, cfg); err != nil {
		t.Fatal(err)
	}
	if want := weightsHeader + "final = 1.0\ncuriosity = 0.5\n\n"; !strings.Contains(b.String(), want) {
		t.Errorf("encoded weights are not %q:\n%s", want, b.String())
	}
	got := orderWeights([]byte(weightsHeader + "zeta = 1.0\ncoherence = 0.1\nalpha = 2.0\nfinal = 1.0\n"))
	if want := weightsHeader + "final = 1.0\ncoherence = 0.1\nalpha = 2.0\nzeta = 1.0\n"; string(got) != want {
		t.Errorf("orderWeights = %q, want %q", got, want)
	}
}
