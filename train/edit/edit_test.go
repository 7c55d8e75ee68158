package edit

import (
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/telemetry"
)

func smoke(t *testing.T) *configs.Config {
	t.Helper()
	cfg, err := configs.Resolve("smoke", nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Make takes a value its field's rule allows, with the value it replaces, and
// refuses any other with the field and the rule as configuration validation
// words it.
func TestMake(t *testing.T) {
	cfg := smoke(t)
	for _, c := range []struct {
		phase   telemetry.Phase
		field   string
		value   float64
		old     float64
		refused string
	}{
		{telemetry.PhaseRFT, "kl_coef", 0.1, cfg.RFT.KLCoef, ""},
		{telemetry.PhaseRFT, "kl_coef", -0.1, 0, "edit kl_coef: rft.kl_coef: must be >= 0, got -0.1"},
		{telemetry.PhaseRFT, "clip_high", 0.1, 0, "rft.clip_high: must be >= clip_low"},
		{telemetry.PhaseRFT, "temperature", 0, 0, "rft.temperature: must be > 0"},
		{telemetry.PhaseRFT, "weight.curiosity", 0.5, 0, ""}, // stage 1's
		{telemetry.PhaseRFT, "weight.final", 0, 0, "curriculum.stages[0].weights: must not all be 0"},
		{telemetry.PhaseRFT, "curriculum.stage", 2, 1, ""},
		{telemetry.PhaseRFT, "curriculum.stage", 1.5, 0, "must be a whole number in [1, 3]"},
		{telemetry.PhaseRFT, "curriculum.stages[0].exit[0].value", 0.5, cfg.Curriculum.Stages[0].Exit[0].Value, ""},
		{telemetry.PhaseRFT, "lr", cfg.RFT.LR * 2, cfg.RFT.LR, ""},
		{telemetry.PhaseSFT, "lr", 0.01, cfg.SFT.LR, ""},
		{telemetry.PhaseSFT, "lr", -1, 0, "edit lr: sft.lr: must be > 0"},
		{telemetry.PhaseSFT, "kl_coef", 0.1, 0, "not a field that may change in the sft phase; one of lr"},
		{telemetry.PhaseTTRL, "lr", 0.1, 0, "nothing may change in the ttrl phase"},
	} {
		e, err := Make(Live{Cfg: cfg}, c.phase, c.field, c.value)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s %s=%v: %v", c.phase, c.field, c.value, err)
		case c.refused == "" && (e.Old != c.old || e.New != c.value || e.Field != c.field):
			t.Errorf("%s %s=%v: edit %+v, want old %v", c.phase, c.field, c.value, e, c.old)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s %s=%v: error %v, want %q", c.phase, c.field, c.value, err, c.refused)
		}
	}
	if cfg.RFT.KLCoef != smoke(t).RFT.KLCoef {
		t.Error("Make changed the configuration")
	}
}

// A weight edit holds in every stage; the others set their one key.
func TestApply(t *testing.T) {
	cfg := smoke(t)
	l := Live{Cfg: cfg, Stage: 1}
	for _, e := range []Edit{
		{Field: "weight.curiosity", New: 0.3, Phase: telemetry.PhaseRFT},
		{Field: "clip_high", New: 0.4, Phase: telemetry.PhaseRFT},
		{Field: "curriculum.stage", New: 3, Phase: telemetry.PhaseRFT},
	} {
		if err := Apply(&l, e); err != nil {
			t.Fatal(err)
		}
	}
	for i, st := range cfg.Curriculum.Stages {
		if st.Weights["curiosity"] != 0.3 {
			t.Errorf("stage %d: curiosity weight %v, want 0.3", i, st.Weights["curiosity"])
		}
	}
	if cfg.RFT.ClipHigh != 0.4 || l.Stage != 2 {
		t.Errorf("clip_high %v, stage %d", cfg.RFT.ClipHigh, l.Stage)
	}
	if err := Apply(&l, Edit{Field: "nope", Phase: telemetry.PhaseRFT}); err == nil {
		t.Error("an unknown field applied")
	}
}
