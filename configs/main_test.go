package configs

import (
	"os"
	"testing"
)

// TestMain installs the weighted reward components and the advantage
// estimators as the reward registry and the estimator table list them
// (packages reward and train/grpo install their own when they are linked in;
// reward's TestWeightNamesInstalled and grpo's TestEstimatorsInstalled keep
// these lists equal to theirs), so these tests check names and encode weights
// as a run does.
func TestMain(m *testing.M) {
	SetWeightNames(func() []string { return []string{"final", "coherence", "curiosity"} })
	SetEstimators(func() (names, grouped []string) { return []string{"grpo", "reinforce++", "ppo"}, []string{"grpo"} })
	os.Exit(m.Run())
}
