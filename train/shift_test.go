package train

import (
	"slices"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
)

// TestShiftNamesAgree: [env] shift accepts exactly the shifts the world draws,
// and a bad one is refused naming the key and the rule.
func TestShiftNamesAgree(t *testing.T) {
	if !slices.Equal(configs.Shifts, env.Shifts()) {
		t.Fatalf("configs.Shifts %q, env.Shifts() %q", configs.Shifts, env.Shifts())
	}
	cfg := configs.Default()
	cfg.Env.Shift = "fog"
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "env.shift") || !strings.Contains(err.Error(), `"crowded"`) {
		t.Fatalf("want env.shift refused with the shifts named, got %v", err)
	}
	for _, s := range configs.Shifts {
		cfg.Env.Shift = s
		ec, err := setup.EnvConfig(cfg)
		if err != nil || ec.Shift != s {
			t.Fatalf("shift %q: %v, env shift %q", s, err, ec.Shift)
		}
	}
}
