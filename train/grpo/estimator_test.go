package grpo

import (
	"slices"
	"testing"

	"github.com/pixelis/pixelis/configs"
)

// The table installs its names in configs: the lists configs' tests stand in
// for (configs/main_test.go).
func TestEstimatorsInstalled(t *testing.T) {
	names, grouped := estimatorNames()
	if want := []string{EstimatorGRPO, EstimatorReinforcePP, EstimatorPPO}; !slices.Equal(names, want) {
		t.Errorf("estimators %v, want %v", names, want)
	}
	if !slices.Equal(grouped, []string{EstimatorGRPO}) {
		t.Errorf("group-baseline estimators %v, want [grpo]", grouped)
	}
	cfg := configs.Default()
	cfg.RFT.Estimator = "none"
	if err := cfg.Validate(); err == nil {
		t.Error("configs accepted an estimator the table lacks")
	}
	for _, e := range Estimators() {
		cfg.RFT.Estimator = e.Name
		if err := cfg.Validate(); err != nil {
			t.Errorf("configs refused estimator %q: %v", e.Name, err)
		}
	}
}
