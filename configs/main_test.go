package configs

import (
	"os"
	"testing"
)

// TestMain installs the weighted reward components as the reward registry
// lists them (package reward installs its own when it is linked in; the
// reward package's TestWeightNamesInstalled keeps this list equal to the
// registry's), so these tests check names and encode weights as a run does.
func TestMain(m *testing.M) {
	SetWeightNames(func() []string { return []string{"final", "coherence", "curiosity"} })
	os.Exit(m.Run())
}
