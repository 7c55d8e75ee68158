package alerts

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/telemetry"
)

// Set is the detectors of one run, fed its records in order. It is not safe
// for concurrent use: one goroutine feeds it.
type Set struct {
	dets  []detector
	phase telemetry.Phase
	step  int
	st    map[string]*state
}

// New is the enabled detectors of cfg, with nothing seen yet. With
// cfg.Enabled false it has none.
func New(cfg configs.Alerts) *Set {
	s := &Set{st: map[string]*state{}}
	if cfg.Enabled {
		s.dets = detectors(cfg)
	}
	s.reset()
	return s
}

func (s *Set) reset() {
	for _, d := range s.dets {
		s.st[d.name] = &state{}
	}
}

// Detectors names the set's detectors, in the order of [alerts].
func (s *Set) Detectors() []string {
	names := make([]string, len(s.dets))
	for i, d := range s.dets {
		names[i] = d.name
	}
	return names
}

// Firing names the detectors firing now.
func (s *Set) Firing() []string {
	var out []string
	for _, d := range s.dets {
		if s.st[d.name].Firing {
			out = append(out, d.name)
		}
	}
	return out
}

// Observe takes the next record and returns the alerts it decides: a
// detector whose condition starts to hold fires, one whose condition stops
// holding clears. A record of a new phase first clears whatever fires and
// starts every detector afresh: a phase's baseline is its own.
func (s *Set) Observe(r Record) []Alert {
	var out []Alert
	if r.Phase != s.phase {
		out = s.clearAll(r, "phase "+string(r.Phase)+" began")
		s.phase = r.Phase
		s.reset()
	}
	s.step = r.Step
	for _, d := range s.dets {
		st := s.st[d.name]
		d.observe(st, r)
		if a, ok := s.decide(d, st, r.Time); ok {
			out = append(out, a)
		}
	}
	return out
}

// Tick reads the clock between records: the stall rule fires when no record
// has come for too long. The caller ticks only while the run is meant to be
// stepping (not while it is paused or evaluating).
func (s *Set) Tick(now time.Time) []Alert {
	var out []Alert
	for _, d := range s.dets {
		if d.name != Stall {
			continue
		}
		if a, ok := s.decide(d, s.st[d.name], now); ok {
			out = append(out, a)
		}
	}
	return out
}

// decide turns a detector's verdict into a fire or a clear when its state changes.
func (s *Set) decide(d detector, st *state, now time.Time) (Alert, bool) {
	v := d.judge(st, now)
	if !v.ready {
		return Alert{}, false
	}
	if st.Firing && !v.holds && st.Calm < 0 {
		st.Calm = s.step
	}
	if v.holds {
		st.Calm = -1
	}
	if v.holds == st.Firing || (!v.holds && s.step-st.Calm < d.calm) {
		return Alert{}, false
	}
	st.Firing = v.holds
	a := s.alert(d, v)
	if !v.holds {
		a.State = StateClear
	}
	return a, true
}

func (s *Set) alert(d detector, v verdict) Alert {
	a := Alert{Detector: d.name, State: StateFire, Step: s.step, Phase: s.phase, Rule: d.rule, Window: d.window,
		Value: v.value, Threshold: v.threshold, Metric: v.metric, Series: append([]Point(nil), v.evidence...),
		Detail: v.detail, Action: d.act.Action}
	if a.Action == "raise" {
		a.Weight, a.Amount = d.act.Weight, d.act.Amount
	}
	return a
}

func (s *Set) clearAll(r Record, why string) []Alert {
	var out []Alert
	for _, d := range s.dets {
		if st := s.st[d.name]; st.Firing {
			st.Firing = false
			a := s.alert(d, verdict{detail: why})
			a.State = StateClear
			out = append(out, a)
		}
	}
	return out
}

// State is what a checkpoint keeps of a set: the phase and step it reached
// and each detector's memory, so a resumed run goes on judging as the
// uninterrupted one would (no second fire of an alert already fired).
type State struct {
	Phase     telemetry.Phase   `json:"phase"`
	Step      int               `json:"step"`
	Detectors map[string]*state `json:"detectors"`
}

// MarshalState is the set's state as JSON.
func (s *Set) MarshalState() (json.RawMessage, error) {
	return json.Marshal(State{Phase: s.phase, Step: s.step, Detectors: s.st})
}

// RestoreState sets the set's state from MarshalState's JSON. Detectors the
// state does not name (enabled since) start afresh; those it names that are
// not enabled are dropped. The stall rule's clock is not restored: the time
// a run spent stopped is no stall.
func (s *Set) RestoreState(raw json.RawMessage) error {
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("alert state: %w", err)
	}
	s.phase, s.step = st.Phase, st.Step
	s.reset()
	for _, d := range s.dets {
		if ds := st.Detectors[d.name]; ds != nil {
			s.st[d.name] = ds
		}
	}
	if ds := s.st[Stall]; ds != nil {
		ds.Last = time.Time{}
	}
	return nil
}

// ObserveLogged takes the next record of a run read from its log rather than
// lived: the stall rule first judges, on the log's own clock, the gap the
// record ends (a long gap fires at the record that ends it, which then
// clears it), then the record is observed. A phase's first record and a
// record of validation alone end no step, so the gap before them is none.
func (s *Set) ObserveLogged(r Record) []Alert {
	var out []Alert
	if r.Phase == s.phase && !evaluationOnly(r) {
		out = s.Tick(r.Time)
	}
	return append(out, s.Observe(r)...)
}

// Replay runs cfg's detectors over a finished run's records, in order
// (ObserveLogged), and returns every alert they decide: what the run would
// have raised live.
func Replay(records []Record, cfg configs.Alerts) []Alert {
	s := New(cfg)
	var out []Alert
	for _, r := range records {
		out = append(out, s.ObserveLogged(r)...)
	}
	return out
}
