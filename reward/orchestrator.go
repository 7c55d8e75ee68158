package reward

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/configs"
)

// Orchestrator combines the components into one reward per trajectory:
//
//	R = clip( Σ_{c ∉ prices} w_c · z_c  +  penalty + cost , ±Clip )
//
// z_c is the component's raw value normalised by the running Normalizer; the
// prices — the tool-misuse penalty ("penalty") and the cost of the operations
// used ("cost") — are added as they are, so their scale stays the one their
// config states. Every component is scored on
// every batch, including those of weight 0 (their raw values are logged and
// their statistics warm up), and the ICM keeps training at weight 0.
//
// Components run in the order given; register coherence before an ICM that
// serves as its embedder so both see the same encoder version.
type Orchestrator struct {
	clip    float64
	comps   []Component
	names   []string
	weights map[string]float64
	norm    *Normalizer
	icm     *ICM
}

// NewOrchestrator combines the components under the [reward] settings cfg
// (clip and normaliser; checked by configs.Validate). Component names must be
// unique. The weights start at 1 for final and 0 for the others, the reward
// curriculum's first stage before SetWeights.
func NewOrchestrator(cfg configs.Reward, comps ...Component) (*Orchestrator, error) {
	o := &Orchestrator{clip: cfg.Clip, weights: map[string]float64{}, norm: NewNormalizer(NormalizerConfig{
		Window: cfg.NormWindow, WarmUp: cfg.NormWarmup, Disabled: !cfg.Normalize,
	})}
	for _, c := range comps {
		n := c.Name()
		if slices.Contains(o.names, n) {
			return nil, fmt.Errorf("reward: two components named %q", n)
		}
		o.comps = append(o.comps, c)
		o.names = append(o.names, n)
		if !priced(n) {
			o.weights[n] = 0
		}
		if icm, ok := c.(*ICM); ok {
			o.icm = icm
		}
	}
	if _, ok := o.weights[NameFinal]; ok {
		o.weights[NameFinal] = 1
	}
	return o, nil
}

// SetWeights sets the weights of the named components; others keep theirs.
// Names of components that are not registered, the prices (added unweighted:
// scale them in their config) and non-finite weights are errors; the valid entries
// are applied anyway.
func (o *Orchestrator) SetWeights(w map[string]float64) error {
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(w)) {
		v := w[n]
		_, ok := o.weights[n]
		switch {
		case priced(n):
			errs = append(errs, fmt.Errorf("reward weight %q: a price is added unweighted", n))
		case !ok:
			errs = append(errs, fmt.Errorf("reward weight %q: no such component (have %s)", n, strings.Join(o.names, ", ")))
		case math.IsNaN(v) || math.IsInf(v, 0):
			errs = append(errs, fmt.Errorf("reward weight %q = %v: must be finite", n, v))
		default:
			o.weights[n] = v
		}
	}
	return errors.Join(errs...)
}

// Weights returns a copy of the current weights.
func (o *Orchestrator) Weights() map[string]float64 { return maps.Clone(o.weights) }

// Names returns the component names in scoring order.
func (o *Orchestrator) Names() []string { return slices.Clone(o.names) }

// Breakdown is the reward of a batch, per trajectory, with every part of it.
type Breakdown struct {
	Names []string     // component names in scoring order
	Trajs []TrajReward // one per trajectory, in input order
}

// TrajReward is one trajectory's reward.
type TrajReward struct {
	Total float64
	Raw   map[string]float64 // component → raw value
	// Norm is component → normalised value z_c; a price is not normalised,
	// so its entry equals its raw value.
	Norm map[string]float64
	// Steps is per step: component → weighted raw attribution w_c·PerStep_c
	// (the prices unweighted). It is what the console shows beside a step
	// ("coh +0.20"); the normaliser's shift and scale are trajectory-level and
	// are not attributed to steps.
	Steps []map[string]float64
	// StepReward is Total spread over the steps, Σ_t StepReward[t] = Total,
	// for estimators that discount per step (step_reward.go).
	StepReward []float64
}

// BeginStep starts a training step: statistics that components report per
// step (the ICM's cache hit rate and losses) count from here, over every
// Compute until the next BeginStep.
func (o *Orchestrator) BeginStep() {
	if o.icm != nil {
		o.icm.BeginStep()
	}
}

// Compute scores a batch: every component, the normaliser update, the
// weighted sum and the clip.
func (o *Orchestrator) Compute(trajs []*Trajectory) Breakdown {
	b := Breakdown{Names: slices.Clone(o.names), Trajs: make([]TrajReward, len(trajs))}
	for i, t := range trajs {
		tr := TrajReward{
			Raw:        make(map[string]float64, len(o.comps)),
			Norm:       make(map[string]float64, len(o.comps)),
			Steps:      make([]map[string]float64, len(t.Steps)),
			StepReward: make([]float64, len(t.Steps)),
		}
		for k := range tr.Steps {
			tr.Steps[k] = make(map[string]float64, len(o.comps))
		}
		b.Trajs[i] = tr
	}
	raw := make([]float64, len(trajs))
	for _, c := range o.comps {
		name := c.Name()
		scores := c.Score(trajs)
		for i, s := range scores {
			raw[i] = s.Value
		}
		w := 1.0
		var z []float64
		scale, shift := 1.0, 0.0 // z = scale·raw + shift
		if priced(name) {
			z = raw // added as it is
		} else {
			w = o.weights[name]
			z = o.norm.Normalize(name, raw)
			scale, shift = o.norm.Affine(name)
		}
		for i, s := range scores {
			tr := &b.Trajs[i]
			tr.Raw[name] = raw[i]
			tr.Norm[name] = z[i]
			tr.Total += w * z[i] // Σ_c w_c·z_c + penalty + cost
			for k, v := range s.PerStep {
				if k < len(tr.Steps) {
					tr.Steps[k][name] = w * v
				}
			}
			tr.attribute(w, scale, shift, s.PerStep)
		}
	}
	for i := range b.Trajs {
		b.Trajs[i].Total = max(-o.clip, min(o.clip, b.Trajs[i].Total))
		b.Trajs[i].settle()
	}
	return b
}

// Metrics condenses a Breakdown into batch means under the logged names:
// reward/total, reward/<component>/raw, reward/<component>/norm, and with an
// ICM curiosity/cache_hit_rate, curiosity/forward_loss, curiosity/inverse_loss.
func (o *Orchestrator) Metrics(b Breakdown) map[string]float64 {
	m := map[string]float64{}
	n := float64(len(b.Trajs))
	if n > 0 {
		var total float64
		for _, t := range b.Trajs {
			total += t.Total
		}
		m["reward/total"] = total / n
		for _, name := range b.Names {
			var r, z float64
			for _, t := range b.Trajs {
				r += t.Raw[name]
				z += t.Norm[name]
			}
			m["reward/"+name+"/raw"] = r / n
			m["reward/"+name+"/norm"] = z / n
		}
	}
	if o.icm != nil {
		s := o.icm.Stats()
		m["curiosity/cache_hit_rate"] = s.CacheHitRate
		m["curiosity/forward_loss"] = s.ForwardLoss
		m["curiosity/inverse_loss"] = s.InverseLoss
	}
	return m
}

// OrchestratorState is everything that influences later rewards.
type OrchestratorState struct {
	Weights    map[string]float64 `json:"weights"`
	Normalizer NormalizerState    `json:"normalizer"`
	ICM        *ICMState          `json:"icm,omitempty"`
}

// State returns a deep copy of the weights, the normaliser windows and, with
// an ICM, the curiosity model.
func (o *Orchestrator) State() OrchestratorState {
	st := OrchestratorState{Weights: maps.Clone(o.weights), Normalizer: o.norm.State()}
	if o.icm != nil {
		is := o.icm.State()
		st.ICM = &is
	}
	return st
}

// Restore puts a saved state back into an orchestrator built with the same
// components.
func (o *Orchestrator) Restore(st OrchestratorState) error {
	if (st.ICM != nil) != (o.icm != nil) {
		return fmt.Errorf("restore reward: saved state has ICM %v, orchestrator %v", st.ICM != nil, o.icm != nil)
	}
	for n := range st.Weights {
		if _, ok := o.weights[n]; !ok {
			return fmt.Errorf("restore reward: weight for unknown component %q", n)
		}
	}
	if err := o.norm.Restore(st.Normalizer); err != nil {
		return err
	}
	if o.icm != nil {
		if err := o.icm.Restore(*st.ICM); err != nil {
			return err
		}
	}
	maps.Copy(o.weights, st.Weights)
	return nil
}
