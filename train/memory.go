package train

import (
	"slices"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/footprint"
)

// EstimateMemory returns the estimated peak of every phase a run of cfg goes
// through (some of PhaseSFT, PhaseRFT, PhaseTTRL, PhaseTest), each sized by
// train/footprint. A size no trainer can use (an SFT batch beyond its
// training set) is a *configs.FieldError whatever the memory.
func EstimateMemory(cfg *configs.Config, phases []string) ([]footprint.Phase, error) {
	m, err := footprint.New(cfg)
	if err != nil {
		return nil, err
	}
	var out []footprint.Phase
	for _, p := range phases {
		switch p {
		case PhaseSFT:
			ph, err := m.SFT()
			if err != nil {
				return nil, err
			}
			out = append(out, ph)
		case PhaseRFT:
			out = append(out, m.RFT())
		case PhaseTTRL:
			out = append(out, m.TTRL())
		case PhaseTest:
			out = append(out, m.Test(testModelsAtMost(phases)))
		}
	}
	return out, nil
}

// testModelsAtMost is how many models the test phase after phases may
// evaluate (runTest: the run's SFT, RFT and TTRL models, all at once).
func testModelsAtMost(phases []string) int {
	if slices.Contains(phases, PhaseTTRL) {
		return 3
	}
	return 2
}
