package configs

import (
	"slices"
	"strings"
	"testing"
)

func TestAlertsValidation(t *testing.T) {
	tests := []struct {
		sets []string
		want string
	}{
		{[]string{"alerts.tool_collapse.action=shout"}, `alerts.tool_collapse.action: must be one of "warn", "checkpoint", "pause", "rollback", "raise", "stop", got "shout"`},
		{[]string{"alerts.tool_collapse.action=raise", "alerts.tool_collapse.weight=speed"}, `alerts.tool_collapse.weight: must be one of "final", "coherence", "curiosity", got "speed"`},
		{[]string{"alerts.kl_runaway.action=raise", "alerts.kl_runaway.amount=0"}, "alerts.kl_runaway.amount: must be > 0, got 0"},
		{[]string{"alerts.entropy_collapse.floor=1.5"}, "alerts.entropy_collapse.floor: must be in (0, 1], got 1.5"},
		{[]string{"alerts.tool_collapse.window=1"}, "alerts.tool_collapse.window: must be >= 2, got 1"},
		{[]string{"alerts.kl_runaway.max=0", "alerts.kl_runaway.growth=0"}, "alerts.kl_runaway: max and growth must not both be 0"},
		{[]string{"alerts.grad_norm_runaway.growth=0.5"}, "alerts.grad_norm_runaway.growth: must be 0 (no bound) or > 1"},
		{[]string{"alerts.stall.factor=1"}, "alerts.stall.factor: must be > 1"},
		{[]string{"alerts.reward_dominance.task=cost"}, `alerts.reward_dominance.task: must be one of "final", "coherence", "curiosity", got "cost"`},
		{[]string{"alerts.val_regression.metric="}, "alerts.val_regression.metric: must name a metric"},
		{[]string{`alerts.command=[""]`}, "alerts.command: must start with a program name"},
	}
	for _, tt := range tests {
		cfg := Default()
		err := Apply(cfg, tt.sets)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %q", tt.sets, err, tt.want)
		}
	}
	cfg := Default()
	if err := Apply(cfg, []string{"alerts.tool_collapse.action=raise", "alerts.tool_collapse.weight=curiosity", "alerts.tool_collapse.amount=0.1"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("a raise of a named weight: %v", err)
	}
}

func TestWeightNamesAreTheWeights(t *testing.T) {
	if got := WeightNames(); !slices.Equal(got, []string{"final", "coherence", "curiosity"}) {
		t.Errorf("WeightNames() = %v", got)
	}
}
