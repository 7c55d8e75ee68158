package serve

import (
	"fmt"
	"net/http"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
)

// Scoring replays every trajectory in a fresh episode, recording the
// observation before each step as a rollout does, so rewards never depend on
// what a client claims an operation returned. Items name a finished live
// episode, or a task with the actions taken on it.

// scorePlan is one item to replay: its task (a live episode's, or generated
// from split and index when replayed, so a request does not hold thousands
// of tasks' frames at once), its actions and its group.
type scorePlan struct {
	task  *env.Task
	split env.Split
	index int
	acts  []env.Action
	group int
}

// scored is a replayed trajectory with the id of the task it played.
type scored struct {
	task string
	traj *reward.Trajectory
}

// planScore validates the items and plans their replays. Groups are as
// given, else one per distinct task in order of appearance (the rollouts of
// one task are a GRPO group; RaPR is computed per group).
func (s *Server) planScore(items []scoreItem) ([]scorePlan, *apiError) {
	if err := checkItems(items); err != nil {
		return nil, err
	}
	plans := make([]scorePlan, len(items))
	groupOf := map[string]int{}
	for i, it := range items {
		p := itemPath(i)
		var err *apiError
		switch {
		case it.Episode != nil && (it.Task != nil || it.Actions != nil):
			return nil, badField(p+"episode", "give an episode, or a task with actions, not both")
		case it.Episode != nil:
			err = s.planEpisode(&plans[i], p, *it.Episode)
		case it.Task != nil:
			err = s.planActions(&plans[i], p, it)
		default:
			return nil, badField(p+"episode", "required: an episode id, or a task with actions")
		}
		if err != nil {
			return nil, err
		}
		if it.Group != nil {
			plans[i].group = *it.Group
			continue
		}
		key := fmt.Sprintf("%d/%d", plans[i].split, plans[i].index) // a task's identity
		g, ok := groupOf[key]
		if !ok {
			g = len(groupOf)
			groupOf[key] = g
		}
		plans[i].group = g
	}
	return plans, nil
}

// checkItems checks the item count and that groups are given for all or none.
func checkItems(items []scoreItem) *apiError {
	switch {
	case len(items) == 0:
		return badField("items", "required: at least one trajectory")
	case len(items) > maxScoreItems:
		return badField("items", "at most %d per request, got %d", maxScoreItems, len(items))
	}
	withGroup := 0
	for _, it := range items {
		if it.Group != nil {
			withGroup++
		}
	}
	if withGroup != 0 && withGroup != len(items) {
		for i, it := range items {
			if it.Group == nil {
				return badField(itemPath(i)+"group", "give a group for every item or for none")
			}
		}
	}
	return nil
}

// planEpisode plans the replay of a finished live episode.
func (s *Server) planEpisode(pl *scorePlan, p, id string) *apiError {
	e, err := s.lookup(id)
	if err != nil {
		err.Field = p + "episode"
		err.Message = p + "episode: " + err.Message
		return err
	}
	defer e.mu.Unlock()
	if !e.env.Done() {
		return errorf(http.StatusConflict, p+"episode", "episode %s is not finished (%d of %d steps, no ANSWER): only finished trajectories are scored", id, e.steps, s.envCfg.MaxSteps)
	}
	pl.task, pl.split, pl.index = e.task, e.task.Split, e.task.Index
	for _, st := range e.env.Trajectory() {
		pl.acts = append(pl.acts, st.Action)
	}
	return nil
}

// planActions plans the replay of a task's actions.
func (s *Server) planActions(pl *scorePlan, p string, it scoreItem) *apiError {
	rt, err := it.Task.resolve(p+"task.", s.envCfg.Families)
	if err != nil {
		return err
	}
	if rt.random {
		return badField(p+"task", "index or seed required: a scored trajectory names its task")
	}
	if len(it.Actions) == 0 {
		return badField(p+"actions", "required with task: the actions taken, ending with ANSWER or at the step limit")
	}
	if len(it.Actions) > s.envCfg.MaxSteps {
		return badField(p+"actions", "%d actions, more than env.max_steps = %d", len(it.Actions), s.envCfg.MaxSteps)
	}
	pl.split, pl.index = rt.split, rt.index
	for k := range it.Actions {
		a, err := it.Actions[k].action(fmt.Sprintf("%sactions[%d].", p, k))
		if err != nil {
			return err
		}
		pl.acts = append(pl.acts, a)
	}
	return nil
}

// replayScored waits for its share of the score work, then replays the
// plans in parallel. release gives the share back once the answer is sent.
func (s *Server) replayScored(r *http.Request, plans []scorePlan) (out []scored, release func(), _ *apiError) {
	var work int64
	for _, pl := range plans {
		work += scoreWork(len(pl.acts))
	}
	if err := s.acquireScore(r.Context(), work); err != nil {
		return nil, nil, err
	}
	release = func() {
		s.scoreSem.Release(min(work, s.scoreCap))
		s.released() // the replays, and the request's orchestrator
	}
	out = make([]scored, len(plans))
	errs := make([]*apiError, len(plans))
	parallel(len(plans), func(lo, hi int) {
		ep := s.pool.Get().(*env.Episode)
		defer s.pool.Put(ep)
		for i := lo; i < hi && errs[lo] == nil; i++ {
			t := plans[i].task
			if t == nil {
				t = env.Generate(s.envCfg, plans[i].split, plans[i].index)
			}
			tr, err := replay(ep, t, plans[i].acts)
			if err != nil {
				err.Field = itemPath(i) + err.Field
				err.Message = itemPath(i) + err.Message
				errs[lo] = err
				break
			}
			tr.Group = plans[i].group
			out[i] = scored{task: t.ID, traj: tr}
		}
	})
	for _, err := range errs {
		if err != nil {
			release()
			return nil, nil, err
		}
	}
	return out, release, nil
}

// replay plays acts on t in ep and returns the trajectory the reward sees:
// steps with the observation each action was chosen from, the final
// observation, and whether the answer was given and right.
func replay(ep *env.Episode, t *env.Task, acts []env.Action) (*reward.Trajectory, *apiError) {
	ep.Reset(t)
	w := obsWidth()
	obs := make([]float32, (len(acts)+1)*w)
	for k, a := range acts {
		if ep.Done() {
			return nil, badField(fmt.Sprintf("actions[%d]", k), "the episode ended at step %d; %d action(s) follow", k, len(acts)-k)
		}
		observeCoarse(ep, obs[k*w:(k+1)*w])
		ep.Step(a)
	}
	if !ep.Done() {
		return nil, badField("actions", "the trajectory is not finished (%d steps, no ANSWER, below the step limit): only finished trajectories are scored", len(acts))
	}
	n := len(acts)
	steps := ep.Trajectory()
	for k := range steps {
		steps[k].Obs = obs[k*w : (k+1)*w : (k+1)*w]
	}
	final := obs[n*w:]
	observeCoarse(ep, final)
	_, answered := ep.Answer()
	return &reward.Trajectory{Steps: steps, FinalObs: final, Answered: answered, Correct: ep.Correct(), Frames: len(t.Frames)}, nil
}
