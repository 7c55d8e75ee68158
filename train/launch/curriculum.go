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
	// inUse is the stage the trainer runs with, from which step on, as its
	// welcome and acknowledgements say: what a step's metrics record when
	// the trainer does not send the weights it used.
	inUse []stageFrom
	// afterAck is a stage a version-1 trainer acknowledged without a step:
	// it counts from the first step whose metrics arrive after the ack.
	afterAck *steer.Stage
}

// stageFrom is a stage the trainer runs with from step from on.
type stageFrom struct {
	from  int
	stage steer.Stage
}

// took notes that the trainer runs with st from step from on: a later
// stage's start cuts the earlier ones back.
func (c *steering) took(from int, st steer.Stage) {
	for len(c.inUse) > 0 && c.inUse[len(c.inUse)-1].from >= from {
		c.inUse = c.inUse[:len(c.inUse)-1]
	}
	c.inUse = append(c.inUse, stageFrom{from, st})
}

// at is the stage the trainer ran step with, as far as pixelis knows.
func (c *steering) at(step int) (steer.Stage, bool) {
	for i := len(c.inUse) - 1; i >= 0; i-- {
		if c.inUse[i].from <= step {
			return c.inUse[i].stage, true
		}
	}
	return steer.Stage{}, false
}

// used is the record of the stage and weights step ran with: the weights
// the trainer sent with it (version 2), else, on a step the curriculum
// counted (counted), those of the stage the trainer's acknowledgements put
// in force at that step. nil when there is nothing to record.
func (c *steering) used(step int, weights map[string]float64, counted bool) map[string]float64 {
	if c.afterAck != nil {
		c.took(step, *c.afterAck)
		c.afterAck = nil
	}
	st, known := c.at(step)
	if weights == nil && (!counted || !known) {
		return nil
	}
	out := map[string]float64{}
	if known && c.s != nil {
		out["curriculum/stage"] = float64(st.Index)
	}
	if weights == nil {
		weights = st.Weights
	}
	for comp, w := range weights {
		out["curriculum/weight/"+comp] = w
	}
	return out
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

// stage is the stage for welcome, which the trainer runs with from step
// from on: nil without a curriculum.
func (c *steering) stage(from int) *steer.Stage {
	if c.s == nil {
		return nil
	}
	st := c.s.Current()
	c.took(from, st)
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

// observe feeds a step, under pixelis's names, to the curriculum: its
// decisions become events, a new stage goes to the trainer, to apply from
// the next step on, and the curriculum's metrics of the step (its KPIs, its
// stage and weights) are returned.
func (s *session) observe(step int, named map[string]float64) map[string]float64 {
	if s.steer.s == nil {
		return nil
	}
	u, err := s.steer.s.Observe(step, named)
	for _, w := range u.Warnings {
		s.emit(telemetry.EventWarning, fmt.Sprintf("step %d: %s", step, w), nil)
	}
	if err != nil {
		s.emit(telemetry.EventWarning, err.Error(), nil)
	}
	for _, e := range u.Events {
		e.Phase, e.PhaseStep = telemetry.PhaseSteps, e.Step
		s.w.Sink.Emit(e)
	}
	if u.Stage != nil {
		s.sendFrom(KindStage, map[string]any{"index": u.Stage.Index, "name": u.Stage.Name, "weights": u.Stage.Weights}, step+1)
	}
	return u.Metrics
}
