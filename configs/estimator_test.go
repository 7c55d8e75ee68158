package configs

import (
	"reflect"
	"strings"
	"testing"
)

// rft.estimator and [rft.critic]: every rule names its key; RLOO, a group
// baseline, is refused beside another estimator.
func TestValidateEstimator(t *testing.T) {
	tests := []struct {
		name, toml string
		want       []string
	}{
		{"ppo with the defaults", "[rft]\nestimator = \"ppo\"\n", nil},
		{"rloo", "[rft]\nadvantage = \"rloo\"\n", nil},
		{"bad estimator", "[rft]\nestimator = \"a2c\"\n",
			[]string{`rft.estimator: must be one of "grpo", "reinforce++", "ppo", got "a2c"`}},
		{"rloo beside ppo", "[rft]\nestimator = \"ppo\"\nadvantage = \"rloo\"\n",
			[]string{`rft.advantage: "rloo" is a baseline of rft.estimator = "grpo", got estimator "ppo"`}},
		{"discounts", "[rft]\ngamma = 0.0\ngae_lambda = 1.5\n",
			[]string{"rft.gamma: must be in (0, 1], got 0", "rft.gae_lambda: must be in [0, 1], got 1.5"}},
		{"critic", "[rft.critic]\nnetwork = \"shared\"\nhidden = []\nlora_rank = 0\nlr = 0.0\nclip_value = -0.1\nwarmup_steps = -1\n",
			[]string{`rft.critic.network: must be one of "trunk", "mlp", got "shared"`,
				"rft.critic.hidden: must list at least one layer width", "rft.critic.lora_rank: must be >= 1, got 0",
				"rft.critic.lr: must be > 0, got 0", "rft.critic.clip_value: must be >= 0, got -0.1",
				"rft.critic.warmup_steps: must be >= 0, got -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolve("test.toml", tt.toml, nil)
			if got := lines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
