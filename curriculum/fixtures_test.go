package curriculum

import "slices"

// Test fixtures: the seed's configurations, which the tests compute by hand.

// seedRewardConfig is the seed's three phases: learn the goal until the
// success rate's moving average passes 0.70, learn coherence until its moving
// average stops improving (slope over 5 evaluations below 0.001), then add
// curiosity. An advance is undone when the success rate falls by more than
// 0.1 within 200 steps.
func seedRewardConfig() RewardConfig {
	return RewardConfig{
		Stages: []StageConfig{
			{
				Name:    "Phase1_Learn_Goal",
				Weights: map[string]float64{"final": 1, "coherence": 0, "curiosity": 0},
				Exit:    []ConditionConfig{{Kind: CondThreshold, Metric: "success_rate_ma100", Op: ">", Value: 0.70}},
			},
			{
				Name:    "Phase2_Learn_Coherence",
				Weights: map[string]float64{"final": 1, "coherence": 0.1, "curiosity": 0},
				Exit:    []ConditionConfig{{Kind: CondSlope, Metric: "coherence_ma100", Op: "<", Value: 0.001, N: 5}},
			},
			{
				Name:    "Phase3_Learn_Curiosity",
				Weights: map[string]float64{"final": 1, "coherence": 0.1, "curiosity": 0.05},
			},
		},
		MinSamples: 1000,
		Rollback:   RollbackConfig{Metric: "success_rate_ma100", Drop: 0.1, Window: 200, Backoff: 2},
	}
}

// seedDataConfig is an attempt every 200 steps,
// rollback below −0.05, 100 steps of cooldown, one passing evaluation, the
// interval doubled per rollback, three stages (simple, +medium, +hard).
func seedDataConfig() DataConfig {
	return DataConfig{
		AdvanceEvery:      200,
		RollbackThreshold: -0.05,
		Cooldown:          100,
		RequiredPasses:    1,
		IntervalGrowth:    2,
		NumStages:         len(seedMixes),
	}
}

// seedKPINames are the per-step batch means the reward curriculum watches
// (DESIGN.md metric names kpi/<name>_ma100).
var seedKPINames = []string{"success_rate", "reward_final", "coherence", "combined_score"}

// seedTrackerConfig is the seed's "last 100 steps" tracker over seedKPINames.
func seedTrackerConfig() TrackerConfig {
	return TrackerConfig{Window: 100, Names: slices.Clone(seedKPINames)}
}

// seedMixes is the seed's data curriculum: simple samples first, then medium
// added, then hard added.
var seedMixes = []string{"simple", "simple+medium", "simple+medium+hard"}
