package serve

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/env"
)

// Scoring. A pixelis reward is not a pure function of one trajectory: the
// weighted components are z-scored against a running window of earlier
// batches, the ICM curiosity model trains on every batch it scores, and RaPR
// compares a trajectory with the rest of its group in the batch. So the
// server keeps that state where a pixelis run keeps it, with the trainer:
//
//   - A scorer (POST /v1/scorers) is one reward orchestrator, built from the
//     server's config exactly as a run builds its own, owned by one trainer.
//     Each score call on it is one Orchestrator.Compute: the same raw values,
//     z-scores, totals and per-step attribution as a pixelis RFT step that
//     scored the same batches in the same order. Give each trainer (each
//     verl or TRL run) its own scorer and send its batches from one place.
//   - POST /v1/score scores with a fresh orchestrator and discards it: a pure
//     function of the request, as if the batch were a run's first. Its raw
//     values do not depend on any earlier request; with reward.curiosity.mode
//     = "icm" the curiosity (and coherence's similarity term) come from the
//     untrained model, so trainers that want the curiosity reward use a scorer.
//
// Trainers that normalise rewards themselves (GRPO's group baseline in verl
// and TRL) can use the raw components with the documented formula instead of
// the total: R = clip(Σ_c w_c·z_c + penalty + cost, ±clip), the raw value of
// each component being in "raw".

// scorer is one trainer's reward orchestrator.
type scorer struct {
	id      string
	mu      sync.Mutex
	orch    *reward.Orchestrator
	batches int
	used    atomic.Int64
}

func (sc *scorer) lastUse() *atomic.Int64 { return &sc.used }

// newOrchestrator builds an orchestrator with the weights ws chooses: the
// config curriculum's first stage, or the named stage, then ws.Weights.
func (s *Server) newOrchestrator(ws weightsSpec) (*reward.Orchestrator, *apiError) {
	o, err := train.NewOrchestrator(s.cfg)
	if err != nil {
		return nil, &apiError{Status: http.StatusInternalServerError, Message: err.Error()}
	}
	if ws.Stage == nil && len(s.cfg.Curriculum.Stages) > 0 {
		if err := o.SetWeights(stageWeights(s.cfg.Curriculum.Stages[0].Weights.Final, s.cfg.Curriculum.Stages[0].Weights.Coherence, s.cfg.Curriculum.Stages[0].Weights.Curiosity)); err != nil {
			return nil, &apiError{Status: http.StatusInternalServerError, Message: err.Error()}
		}
	}
	if aerr := s.applyWeights(o, ws); aerr != nil {
		return nil, aerr
	}
	return o, nil
}

func stageWeights(final, coherence, curiosity float64) map[string]float64 {
	return map[string]float64{reward.NameFinal: final, reward.NameCoherence: coherence, reward.NameCuriosity: curiosity}
}

// applyWeights sets a stage's weights, then individual ones.
func (s *Server) applyWeights(o *reward.Orchestrator, ws weightsSpec) *apiError {
	if ws.Stage != nil {
		var names []string
		found := false
		for _, st := range s.cfg.Curriculum.Stages {
			names = append(names, st.Name)
			if st.Name == *ws.Stage {
				found = true
				if err := o.SetWeights(stageWeights(st.Weights.Final, st.Weights.Coherence, st.Weights.Curiosity)); err != nil {
					return &apiError{Status: http.StatusInternalServerError, Message: err.Error()}
				}
			}
		}
		if !found {
			return badField("stage", "no stage %q in the config's reward curriculum (have %v)", *ws.Stage, names)
		}
	}
	weighted := o.Weights()
	for _, n := range slices.Sorted(maps.Keys(ws.Weights)) {
		if _, ok := weighted[n]; !ok {
			return badField("weights."+n, "not a weighted component (have %v; penalty and cost are added unweighted)", slices.Sorted(maps.Keys(weighted)))
		}
		if err := o.SetWeights(map[string]float64{n: ws.Weights[n]}); err != nil {
			return badField("weights."+n, "%v", err)
		}
	}
	return nil
}

func (s *Server) handleScorerCreate(w http.ResponseWriter, r *http.Request) {
	var ws weightsSpec
	if err := decodeBody(w, r, &ws, maxSmallBody, true); err != nil {
		writeError(w, err)
		return
	}
	if !s.scorers.reserve() {
		writeError(w, s.full("scorers", "--max-scorers", s.opt.MaxScorers, s.scorers.oldestUse()))
		return
	}
	o, err := s.newOrchestrator(ws)
	if err != nil {
		s.scorers.release()
		writeError(w, err)
		return
	}
	sc := &scorer{id: newID("sc-"), orch: o}
	sc.used.Store(s.opt.Now().UnixNano())
	s.scorers.insert(sc.id, sc)
	w.Header().Set("Location", "/v1/scorers/"+sc.id)
	writeJSON(w, http.StatusCreated, s.scorerView(sc))
}

type scorerView struct {
	Scorer  string             `json:"scorer"`
	Names   []string           `json:"names"`
	Weights map[string]float64 `json:"weights"`
	Batches int                `json:"batches"`
}

func (s *Server) scorerView(sc *scorer) scorerView {
	return scorerView{Scorer: sc.id, Names: sc.orch.Names(), Weights: sc.orch.Weights(), Batches: sc.batches}
}

func (s *Server) lookupScorer(id string) (*scorer, *apiError) {
	sc, ok := s.scorers.get(id)
	if !ok {
		return nil, errorf(http.StatusNotFound, "id", "no live scorer %q (closed, idle for more than %s, or never created)", id, s.opt.IdleTimeout)
	}
	sc.used.Store(s.opt.Now().UnixNano())
	return sc, nil
}

func (s *Server) handleScorerGet(w http.ResponseWriter, r *http.Request) {
	sc, err := s.lookupScorer(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	writeJSON(w, http.StatusOK, s.scorerView(sc))
}

func (s *Server) handleScorerDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := s.scorers.remove(id); !ok {
		writeError(w, errorf(http.StatusNotFound, "id", "no live scorer %q (closed, idle for more than %s, or never created)", id, s.opt.IdleTimeout))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleScore(w http.ResponseWriter, r *http.Request) {
	var req scoreRequest
	if err := decodeBody(w, r, &req, maxScoreBody, false); err != nil {
		writeError(w, err)
		return
	}
	trajs, aerr := s.trajectories(req.Items)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	o, aerr := s.newOrchestrator(req.weights())
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, scoreView(o, trajs, "", 1))
}

func (s *Server) handleScorerScore(w http.ResponseWriter, r *http.Request) {
	var req scoreRequest
	if err := decodeBody(w, r, &req, maxScoreBody, false); err != nil {
		writeError(w, err)
		return
	}
	sc, aerr := s.lookupScorer(r.PathValue("id"))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	trajs, aerr := s.trajectories(req.Items)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if aerr := s.applyWeights(sc.orch, req.weights()); aerr != nil {
		writeError(w, aerr)
		return
	}
	sc.batches++
	writeJSON(w, http.StatusOK, scoreView(sc.orch, trajs, sc.id, sc.batches))
}

// scoredItem is one trajectory's reward.
type scoredItem struct {
	Task     string               `json:"task"`
	Group    int                  `json:"group"`
	Steps    int                  `json:"steps"`
	Answered bool                 `json:"answered"`
	Correct  bool                 `json:"correct"`
	Total    float64              `json:"total"`
	Raw      map[string]float64   `json:"raw"`
	Norm     map[string]float64   `json:"norm"`
	PerStep  []map[string]float64 `json:"per_step"`
}

type scoreResult struct {
	Scorer  string             `json:"scorer,omitempty"`
	Batch   int                `json:"batch"`
	Names   []string           `json:"names"`
	Weights map[string]float64 `json:"weights"`
	Items   []scoredItem       `json:"items"`
	Metrics map[string]float64 `json:"metrics"`
}

// scored is a replayed trajectory with the task it played.
type scored struct {
	task *env.Task
	traj *reward.Trajectory
}

func scoreView(o *reward.Orchestrator, in []scored, id string, batch int) scoreResult {
	trajs := make([]*reward.Trajectory, len(in))
	for i, t := range in {
		trajs[i] = t.traj
	}
	o.BeginStep()
	b := o.Compute(trajs)
	out := scoreResult{Scorer: id, Batch: batch, Names: b.Names, Weights: o.Weights(), Items: make([]scoredItem, len(in)), Metrics: o.Metrics(b)}
	for i, tr := range b.Trajs {
		t := in[i].traj
		out.Items[i] = scoredItem{Task: in[i].task.ID, Group: t.Group, Steps: len(t.Steps), Answered: t.Answered, Correct: t.Correct,
			Total: tr.Total, Raw: tr.Raw, Norm: tr.Norm, PerStep: tr.Steps}
	}
	return out
}

// trajectories validates the items and replays each in a fresh episode,
// recording the observation before every step as a rollout does. Items name
// a finished live episode or a task with its actions; the rewards are always
// computed from the server's own replay, never from results a client sends.
func (s *Server) trajectories(items []scoreItem) ([]scored, *apiError) {
	switch {
	case len(items) == 0:
		return nil, badField("items", "required: at least one trajectory")
	case len(items) > maxScoreItems:
		return nil, badField("items", "at most %d per request, got %d", maxScoreItems, len(items))
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
				return nil, badField(itemPath(i)+"group", "give a group for every item or for none")
			}
		}
	}
	type plan struct {
		task *env.Task
		acts []env.Action
	}
	plans := make([]plan, len(items))
	for i, it := range items {
		p := itemPath(i)
		switch {
		case it.Episode != nil && (it.Task != nil || it.Actions != nil):
			return nil, badField(p+"episode", "give an episode, or a task with actions, not both")
		case it.Episode != nil:
			e, err := s.lookup(*it.Episode)
			if err != nil {
				err.Field = p + "episode"
				err.Message = p + "episode: " + err.Message
				return nil, err
			}
			if !e.env.Done() {
				n := len(e.env.Trajectory())
				e.mu.Unlock()
				return nil, errorf(http.StatusConflict, p+"episode", "episode %s is not finished (%d of %d steps, no ANSWER): only finished trajectories are scored", *it.Episode, n, s.envCfg.MaxSteps)
			}
			traj := e.env.Trajectory()
			plans[i].task = e.task
			for _, st := range traj {
				plans[i].acts = append(plans[i].acts, st.Action)
			}
			e.mu.Unlock()
		case it.Task != nil:
			rt, err := it.Task.resolve(p+"task.", s.envCfg.Families)
			if err != nil {
				return nil, err
			}
			if rt.random {
				return nil, badField(p+"task", "index or seed required: a scored trajectory names its task")
			}
			if len(it.Actions) == 0 {
				return nil, badField(p+"actions", "required with task: the actions taken, ending with ANSWER or at the step limit")
			}
			if len(it.Actions) > s.envCfg.MaxSteps {
				return nil, badField(p+"actions", "%d actions, more than env.max_steps = %d", len(it.Actions), s.envCfg.MaxSteps)
			}
			for k := range it.Actions {
				a, err := it.Actions[k].action(fmt.Sprintf("%sactions[%d].", p, k))
				if err != nil {
					return nil, err
				}
				plans[i].acts = append(plans[i].acts, a)
			}
			plans[i].task = env.Generate(s.envCfg, rt.split, rt.index)
		default:
			return nil, badField(p+"episode", "required: an episode id, or a task with actions")
		}
	}
	// Groups: as given, else one per distinct task in order of appearance
	// (the rollouts of one task are a GRPO group; RaPR is computed per group).
	groupOf := map[string]int{}
	out := make([]scored, len(items))
	ep := s.pool.Get().(*env.Episode)
	defer s.pool.Put(ep)
	for i, pl := range plans {
		tr, err := replay(ep, pl.task, pl.acts)
		if err != nil {
			err.Field = itemPath(i) + err.Field
			err.Message = itemPath(i) + err.Message
			return nil, err
		}
		if items[i].Group != nil {
			tr.Group = *items[i].Group
		} else {
			g, ok := groupOf[pl.task.ID]
			if !ok {
				g = len(groupOf)
				groupOf[pl.task.ID] = g
			}
			tr.Group = g
		}
		out[i] = scored{task: pl.task, traj: tr}
	}
	return out, nil
}

// replay plays acts on t in ep and returns the trajectory the reward sees:
// steps with the observation each action was chosen from, the final
// observation, and whether the answer was given and right.
func replay(ep *env.Episode, t *env.Task, acts []env.Action) (*reward.Trajectory, *apiError) {
	ep.Reset(t)
	obs := make([]float32, (len(acts)+1)*env.ObsDim)
	for k, a := range acts {
		if ep.Done() {
			return nil, badField(fmt.Sprintf("actions[%d]", k), "the episode ended at step %d; %d action(s) follow", k, len(acts)-k)
		}
		ep.Observe(obs[k*env.ObsDim : (k+1)*env.ObsDim])
		ep.Step(a)
	}
	if !ep.Done() {
		return nil, badField("actions", "the trajectory is not finished (%d steps, no ANSWER, below the step limit): only finished trajectories are scored", len(acts))
	}
	n := len(acts)
	steps := ep.Trajectory()
	for k := range steps {
		steps[k].Obs = obs[k*env.ObsDim : (k+1)*env.ObsDim : (k+1)*env.ObsDim]
	}
	final := obs[n*env.ObsDim:]
	ep.Observe(final)
	_, answered := ep.Answer()
	return &reward.Trajectory{Steps: steps, FinalObs: final, Answered: answered, Correct: ep.Correct(), Frames: len(t.Frames)}, nil
}
