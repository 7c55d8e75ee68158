// Package edit is what may change in a live run, in one table: each field by
// its name, the config rule that bounds it, and how it is read and set. An
// Edit is the one event that records a change, whoever asked for it (the
// console, a script on control.sock, an alert's action): the trainer applies
// it at the next step boundary, keeps it in every later checkpoint and
// replays it on resume.
//
// Start reading at Fields.
package edit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/telemetry"
)

// Sources of an edit.
const (
	SourceConsole = "console"
	SourceControl = "control"
	SourceAlert   = "alert"
	SourceFork    = "fork" // a fork's edits, applied at its first step
)

// Edit is one change of a live run: Field went from Old to New at the
// boundary after Step of Phase, so the updates from Step+1 on used New.
type Edit struct {
	Field  string          `json:"field"`
	Old    float64         `json:"old"`
	New    float64         `json:"new"`
	Phase  telemetry.Phase `json:"phase"`
	Step   int             `json:"step"`   // phase-local
	Source string          `json:"source"` // SourceConsole, SourceControl, SourceAlert …
}

// String is the edit as the events pane shows it: "kl_coef 0.05 → 0.1".
func (e Edit) String() string {
	return fmt.Sprintf("%s %s → %s", e.Field, format(e.Old), format(e.New))
}

// Data is the edit as an event's data.
func (e Edit) Data() map[string]any {
	return map[string]any{"field": e.Field, "old": e.Old, "new": e.New, "phase": string(e.Phase), "from_step": e.Step + 1, "source": e.Source}
}

func format(v float64) string { return fmt.Sprintf("%.6g", v) }

// Live is what edits read and change: the run's configuration (the phase's
// hyper-parameters and the reward curriculum's stages) and the reward
// curriculum's current stage, 0-based.
type Live struct {
	Cfg   *configs.Config
	Stage int
}

// Field is one thing an edit may change.
type Field struct {
	Name string
	// Doc says what the field is and how a change takes effect.
	Doc string
	// keys are the config keys whose rules bound the field: a value is
	// refused with the rule configs.Validate gives for any of them.
	keys []string
	get  func(Live) float64
	set  func(*Live, float64)
	// check, when set, is a rule of its own, for fields outside the config.
	check func(Live, float64) string
}

// Value is the field's current value.
func (f Field) Value(l Live) float64 { return f.get(l) }

// Fields lists what may change in phase, in the order the console lists it.
// The SFT phase's learning rate and the RFT phase's hyper-parameters, reward
// weights and curriculum; nothing in the others.
func Fields(phase telemetry.Phase, cfg *configs.Config) []Field {
	switch phase {
	case telemetry.PhaseSFT:
		return []Field{lrField("sft.lr", func(c *configs.Config) *float64 { return &c.SFT.LR })}
	case telemetry.PhaseRFT:
		return rftFields(cfg)
	}
	return nil
}

// lrField is a phase's peak learning rate: its schedule (warmup, cosine) keeps
// its shape and is scaled from the step of the edit on.
func lrField(key string, ptr func(*configs.Config) *float64) Field {
	return Field{Name: "lr", Doc: "peak learning rate (" + key + "); the schedule keeps its shape, scaled from this step", keys: []string{key},
		get: func(l Live) float64 { return *ptr(l.Cfg) }, set: func(l *Live, v float64) { *ptr(l.Cfg) = v }}
}

func rftField(name, key, doc string, ptr func(*configs.RFT) *float64) Field {
	return Field{Name: name, Doc: doc + " (" + key + ")", keys: []string{key},
		get: func(l Live) float64 { return *ptr(&l.Cfg.RFT) }, set: func(l *Live, v float64) { *ptr(&l.Cfg.RFT) = v }}
}

func rftFields(cfg *configs.Config) []Field {
	fs := []Field{
		lrField("rft.lr", func(c *configs.Config) *float64 { return &c.RFT.LR }),
		rftField("kl_coef", "rft.kl_coef", "weight of the KL to the SFT policy", func(r *configs.RFT) *float64 { return &r.KLCoef }),
		rftField("clip_low", "rft.clip_low", "lower PPO ratio clip", func(r *configs.RFT) *float64 { return &r.ClipLow }),
		rftField("clip_high", "rft.clip_high", "upper PPO ratio clip", func(r *configs.RFT) *float64 { return &r.ClipHigh }),
		rftField("temperature", "rft.temperature", "rollout sampling temperature", func(r *configs.RFT) *float64 { return &r.Temperature }),
	}
	// The clip range is one rule over both ends.
	fs[2].keys = append(fs[2].keys, "rft.clip_high")
	fs[3].keys = append(fs[3].keys, "rft.clip_low")
	for _, name := range []string{reward.NameFinal, reward.NameCoherence, reward.NameCuriosity} {
		fs = append(fs, weightField(name, len(cfg.Curriculum.Stages)))
	}
	fs = append(fs, stageField())
	for i, st := range cfg.Curriculum.Stages {
		for j, e := range st.Exit {
			if e.Kind != "steps" {
				fs = append(fs, thresholdField(i, j))
			}
		}
	}
	return fs
}

// weightField is a reward component's weight. An edit sets it in every stage
// of the curriculum: the weight holds from the edit on, whatever stage the
// run is in or moves to. Its value is the current stage's.
func weightField(name string, stages int) Field {
	f := Field{Name: "weight." + name, Doc: "weight of the " + name + " reward, in every curriculum stage from this step"}
	for i := range stages {
		p := fmt.Sprintf("curriculum.stages[%d].weights", i)
		f.keys = append(f.keys, p, p+"."+name)
	}
	f.get = func(l Live) float64 { return *weightOf(&l.Cfg.Curriculum.Stages[l.Stage].Weights, name) }
	f.set = func(l *Live, v float64) {
		for i := range l.Cfg.Curriculum.Stages {
			*weightOf(&l.Cfg.Curriculum.Stages[i].Weights, name) = v
		}
	}
	return f
}

// weightOf is the field of w that weighs the named component.
func weightOf(w *configs.Weights, name string) *float64 {
	switch name {
	case reward.NameFinal:
		return &w.Final
	case reward.NameCoherence:
		return &w.Coherence
	}
	return &w.Curiosity
}

// FieldStage names the reward curriculum's stage.
const FieldStage = "curriculum.stage"

// stageField is the reward curriculum's stage, counted from 1 as the console shows it.
func stageField() Field {
	return Field{Name: FieldStage, Doc: "the reward curriculum's stage (1 = first); its exit conditions start afresh",
		get: func(l Live) float64 { return float64(l.Stage + 1) },
		set: func(l *Live, v float64) { l.Stage = int(v) - 1 },
		check: func(l Live, v float64) string {
			n := len(l.Cfg.Curriculum.Stages)
			if v != math.Trunc(v) || v < 1 || int(v) > n {
				return fmt.Sprintf("must be a whole number in [1, %d], got %s", n, format(v))
			}
			return ""
		}}
}

// thresholdField is the value an exit condition of a stage compares its KPI with.
func thresholdField(stage, cond int) Field {
	key := fmt.Sprintf("curriculum.stages[%d].exit[%d].value", stage, cond)
	return Field{Name: key, Doc: "the value this exit condition compares its KPI with", keys: []string{key},
		get: func(l Live) float64 { return l.Cfg.Curriculum.Stages[stage].Exit[cond].Value },
		set: func(l *Live, v float64) { l.Cfg.Curriculum.Stages[stage].Exit[cond].Value = v }}
}

// Error is a refused edit: the field and the rule it broke.
type Error struct {
	Field string
	Rule  string
}

func (e *Error) Error() string { return "edit " + e.Field + ": " + e.Rule }

// Lookup finds the field named name among phase's.
func Lookup(phase telemetry.Phase, cfg *configs.Config, name string) (Field, error) {
	fs := Fields(phase, cfg)
	if len(fs) == 0 {
		return Field{}, &Error{Field: name, Rule: fmt.Sprintf("nothing may change in the %s phase", phaseName(phase))}
	}
	i := slices.IndexFunc(fs, func(f Field) bool { return f.Name == name })
	if i < 0 {
		names := make([]string, len(fs))
		for k, f := range fs {
			names[k] = f.Name
		}
		return Field{}, &Error{Field: name, Rule: fmt.Sprintf("not a field that may change in the %s phase; one of %s", phaseName(phase), strings.Join(names, ", "))}
	}
	return fs[i], nil
}

func phaseName(p telemetry.Phase) string {
	if p == "" {
		return "current"
	}
	return string(p)
}

// Make checks that field name of phase may become value and returns the
// edit, with the value it had (Phase and Step are the caller's to set). A
// value the field's rule refuses is an *Error naming the field and the rule,
// as configuration validation words it.
func Make(l Live, phase telemetry.Phase, name string, value float64) (Edit, error) {
	f, err := Lookup(phase, l.Cfg, name)
	if err != nil {
		return Edit{}, err
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return Edit{}, &Error{Field: name, Rule: "must be a finite number, got " + format(value)}
	}
	if f.check != nil {
		if rule := f.check(l, value); rule != "" {
			return Edit{}, &Error{Field: name, Rule: rule}
		}
	}
	if err := validate(l, f, value); err != nil {
		return Edit{}, err
	}
	return Edit{Field: name, Old: f.get(l), New: value, Phase: phase}, nil
}

// validate sets value on a copy of the config and returns the violations
// configs.Validate finds under the field's keys.
func validate(l Live, f Field, value float64) error {
	if len(f.keys) == 0 {
		return nil
	}
	try := Live{Cfg: l.Cfg.Clone(), Stage: l.Stage}
	f.set(&try, value)
	var rules []string
	for _, err := range unjoin(try.Cfg.Validate()) {
		var fe *configs.FieldError
		if errors.As(err, &fe) && slices.Contains(f.keys, fe.Path) {
			rules = append(rules, fe.Error())
		}
	}
	if len(rules) == 0 {
		return nil
	}
	return &Error{Field: f.Name, Rule: strings.Join(rules, "; ")}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Apply sets e's new value in l. It fails only on an edit whose field its
// phase does not have (a checkpoint from another configuration).
func Apply(l *Live, e Edit) error {
	f, err := Lookup(e.Phase, l.Cfg, e.Field)
	if err != nil {
		return err
	}
	f.set(l, e.New)
	return nil
}
