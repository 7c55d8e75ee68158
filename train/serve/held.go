package serve

import (
	"fmt"

	"github.com/pixelis/pixelis/train/env"
)

// Open starts an episode of task (split, index) as POST /v1/episodes would,
// with the default observation, and returns its id. It is for a caller in the
// same process that hands episodes to an agent and reads them back with
// Outcome (`pixelis eval --serve`): the caller, not the agent, decides which
// task each episode plays.
func (s *Server) Open(split env.Split, index int) (string, error) {
	if index < 0 {
		return "", fmt.Errorf("open episode: task index %d < 0", index)
	}
	if err := s.admit(1); err != nil {
		return "", fmt.Errorf("open episode: %s", err.Message)
	}
	e := s.newEpisode(env.Generate(s.envCfg, split, index), defaultObs, "")
	s.episodes.insert(e.id, e)
	return e.id, nil
}

// Outcome is a live episode as it stands.
type Outcome struct {
	Task     *env.Task
	Steps    []env.Step
	Done     bool
	Answer   string
	Answered bool
	Correct  bool
	// Resets counts the times a client restarted the episode
	// (POST /v1/episodes/{id}/reset): its steps are the last play's only.
	Resets int
}

// Outcome reads live episode id: its task, the steps taken and how it ended.
func (s *Server) Outcome(id string) (Outcome, error) {
	e, err := s.lookup(id)
	if err != nil {
		return Outcome{}, fmt.Errorf("episode %s: %s", id, err.Message)
	}
	defer e.mu.Unlock()
	ans, answered := e.env.Answer()
	return Outcome{Task: e.task, Steps: e.env.Trajectory(), Done: e.env.Done(), Answer: ans, Answered: answered,
		Correct: e.env.Correct(), Resets: e.resets}, nil
}

// MaxSteps is the step limit of the server's episodes.
func (s *Server) MaxSteps() int { return s.envCfg.MaxSteps }
