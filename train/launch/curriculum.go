package launch

import (
	"fmt"
	"maps"
	"slices"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/steer"
	"github.com/pixelis/pixelis/train/telemetry"
)

// steering runs the reward curriculum (train/steer) on the trainer's
// metrics; without a config it runs none, and every method is a no-op.
type steering struct {
	cfg        *configs.Config
	runDir     string
	resumeStep int // the checkpoint step a resume restores the curriculum to; -1 none
	s          *steer.Steerer
	decl       steer.Declaration
	notes      []telemetry.Event // what the restore said, for the events
}

// hello builds the curriculum for what the trainer declared, or checks that
// a trainer connecting again declares the same; an error refuses it.
func (c *steering) hello(m inMessage) error {
	if c.cfg == nil {
		return nil
	}
	d := steer.Declaration{Components: slices.Clone(m.Components), Reports: slices.Clone(m.Reports)}
	if c.s != nil {
		if !slices.Equal(d.Components, c.decl.Components) || !slices.Equal(d.Reports, c.decl.Reports) {
			return fmt.Errorf("the trainer declared %v and %v when it connected first, now %v and %v", c.decl.Components, c.decl.Reports, d.Components, d.Reports)
		}
		return nil
	}
	s, err := steer.New(c.cfg, d)
	if err != nil {
		return fmt.Errorf("%w\n(launch with --no-curriculum to run the trainer without pixelis's reward curriculum)", err)
	}
	if c.resumeStep >= 0 {
		if err := s.Load(c.runDir, c.resumeStep); err != nil {
			c.notes = append(c.notes, telemetry.Event{Kind: telemetry.EventWarning,
				Message: fmt.Sprintf("the curriculum starts over: its state at step %d was not restored (%v)", c.resumeStep, err)})
		} else {
			c.notes = append(c.notes, telemetry.Event{Kind: telemetry.EventPhase,
				Message: fmt.Sprintf("curriculum restored to stage %d at step %d, with its KPI history", s.Current().Index+1, c.resumeStep)})
		}
	}
	c.s, c.decl = s, d
	return nil
}

// restored is what the restore at hello had to say, once.
func (c *steering) restored() []telemetry.Event {
	n := c.notes
	c.notes = nil
	return n
}

// stage is the stage for welcome: nil without a curriculum.
func (c *steering) stage() *steer.Stage {
	if c.s == nil {
		return nil
	}
	st := c.s.Current()
	return &st
}

func (c *steering) view() telemetry.Curriculum {
	if c.s == nil {
		return telemetry.Curriculum{}
	}
	return c.s.Curriculum()
}

// withKPIs is a step's metrics with the curriculum's newest beside them.
func (c *steering) withKPIs(m map[string]float64) map[string]float64 {
	out := maps.Clone(m)
	if c.s == nil {
		return out
	}
	if out == nil {
		out = map[string]float64{}
	}
	for k, v := range c.s.Metrics() {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// save keeps the curriculum's state for a checkpoint of the trainer's.
func (c *steering) save(runDir string, step int) error {
	if c.s == nil {
		return nil
	}
	return c.s.SaveState(runDir, step)
}

// observe feeds a step to the curriculum: its KPIs join the step's
// metrics, its decisions become events, and a new stage goes to the trainer.
func (s *session) observe(step int, named map[string]float64) {
	if s.steer.s == nil {
		return
	}
	u, err := s.steer.s.Observe(step, named)
	for _, w := range u.Warnings {
		s.emit(telemetry.EventWarning, fmt.Sprintf("step %d: %s", step, w), nil)
	}
	if err != nil {
		s.emit(telemetry.EventWarning, err.Error(), nil)
	}
	maps.Copy(named, u.Metrics)
	for _, e := range u.Events {
		e.Phase, e.PhaseStep = telemetry.PhaseSteps, e.Step
		s.w.Sink.Emit(e)
	}
	if u.Stage != nil {
		s.send(KindStage, map[string]any{"index": u.Stage.Index, "name": u.Stage.Name, "weights": u.Stage.Weights})
	}
}
