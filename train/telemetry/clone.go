package telemetry

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of s, sharing nothing mutable with it, so a snapshot can
// cross goroutines while the trainer keeps changing its own.
func (s Snapshot) Clone() Snapshot {
	s.Metrics = maps.Clone(s.Metrics)
	s.Curriculum = s.Curriculum.Clone()
	s.Rewards = slices.Clone(s.Rewards)
	if s.TTRL != nil {
		t := *s.TTRL
		s.TTRL = &t
	}
	if s.Process != nil {
		p := *s.Process
		s.Process = &p
	}
	if s.Samples != nil {
		samples := make([]Sample, len(s.Samples))
		for i, x := range s.Samples {
			samples[i] = x.Clone()
		}
		s.Samples = samples
	}
	return s
}

// Clone returns a deep copy of c.
func (c Curriculum) Clone() Curriculum {
	if c.Stages != nil {
		stages := make([]Stage, len(c.Stages))
		for i, st := range c.Stages {
			st.Weights = maps.Clone(st.Weights)
			st.Exit = slices.Clone(st.Exit)
			st.Pool = maps.Clone(st.Pool)
			stages[i] = st
		}
		c.Stages = stages
	}
	c.Progress = slices.Clone(c.Progress)
	c.History = slices.Clone(c.History)
	return c
}

// Clone returns a deep copy of s.
func (s Sample) Clone() Sample {
	if s.Steps != nil {
		steps := make([]SampleStep, len(s.Steps))
		for i, st := range s.Steps {
			st.Rewards = maps.Clone(st.Rewards)
			steps[i] = st
		}
		s.Steps = steps
	}
	s.Thumb.Pix = slices.Clone(s.Thumb.Pix)
	return s
}
