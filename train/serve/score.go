package serve

import (
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/setup"
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
// A lone trajectory is never normalised: z-scored against a batch of one, a
// right and a wrong answer would get the same total. POST /v1/score
// z-scores the components across the trajectories of its request when
// there are at least two, and otherwise totals the stage-weighted raw
// values; a scorer z-scores against its window, as a run does. Every answer
// says which ("normalization").
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
// config curriculum's first stage, or the named stage, then ws.Weights;
// with normalize false its components are not z-scored (whatever the
// config says).
func (s *Server) newOrchestrator(ws weightsSpec, normalize bool) (*reward.Orchestrator, *apiError) {
	cfg := s.cfg
	if !normalize && cfg.Reward.Normalize {
		cfg = cfg.Clone()
		cfg.Reward.Normalize = false
	}
	o, err := setup.Orchestrator(cfg)
	if err != nil {
		return nil, &apiError{Status: http.StatusInternalServerError, Message: err.Error()}
	}
	if ws.Stage == nil && len(s.cfg.Curriculum.Stages) > 0 {
		if err := o.SetWeights(reward.StageWeights(s.cfg.Curriculum.Stages[0].Weights)); err != nil {
			return nil, &apiError{Status: http.StatusInternalServerError, Message: err.Error()}
		}
	}
	if aerr := s.applyWeights(o, ws); aerr != nil {
		return nil, aerr
	}
	return o, nil
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
				if err := o.SetWeights(reward.StageWeights(st.Weights)); err != nil {
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
	if !s.scorers.reserve(1) {
		writeError(w, s.full("scorers", "--max-scorers", s.opt.MaxScorers, s.scorers.oldestUse()))
		return
	}
	o, err := s.newOrchestrator(ws, true)
	if err != nil {
		s.scorers.release(1)
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
	s.released()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleScore(w http.ResponseWriter, r *http.Request) {
	var req scoreRequest
	if err := decodeBody(w, r, &req, maxScoreBody, false); err != nil {
		writeError(w, err)
		return
	}
	plans, aerr := s.planScore(req.Items)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	together := len(plans) > 1 && s.cfg.Reward.Normalize
	o, aerr := s.newOrchestrator(req.weights(), together)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	trajs, release, aerr := s.replayScored(r, plans)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	defer release()
	out := scoreView(o, trajs, "", 1)
	switch {
	case together:
		out.Normalization = normalization{Mode: "batch", Trajectories: len(trajs),
			Note: "each weighted component is z-scored across the trajectories of this request, as in the first batch of a run"}
	case !s.cfg.Reward.Normalize:
		out.Normalization = normalization{Mode: "none", Trajectories: len(trajs),
			Note: "reward.normalize is false: total = clip(sum of w_c*raw_c + penalty + cost)"}
	default:
		out.Normalization = normalization{Mode: "none", Trajectories: 1,
			Note: "a lone trajectory is not normalised: total = clip(sum of w_c*raw_c + penalty + cost); send a group together to have it z-scored"}
	}
	writeJSON(w, http.StatusOK, out)
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
	plans, aerr := s.planScore(req.Items)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	trajs, release, aerr := s.replayScored(r, plans)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	defer release()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if aerr := s.applyWeights(sc.orch, req.weights()); aerr != nil {
		writeError(w, aerr)
		return
	}
	sc.batches++
	out := scoreView(sc.orch, trajs, sc.id, sc.batches)
	mode := "window"
	if !s.cfg.Reward.Normalize {
		mode = "none"
	}
	out.Normalization = normalization{Mode: mode, Trajectories: len(trajs),
		Note: "each weighted component is z-scored against this scorer's running window (its last reward.norm_window values, this batch included), as in a pixelis run"}
	writeJSON(w, http.StatusOK, out)
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

// normalization says what "norm" and "total" of an answer were measured
// against.
type normalization struct {
	Mode         string `json:"mode"` // none, batch or window
	Trajectories int    `json:"trajectories"`
	Note         string `json:"note"`
}

type scoreResult struct {
	Scorer        string             `json:"scorer,omitempty"`
	Batch         int                `json:"batch"`
	Names         []string           `json:"names"`
	Weights       map[string]float64 `json:"weights"`
	Normalization normalization      `json:"normalization"`
	Items         []scoredItem       `json:"items"`
	Metrics       map[string]float64 `json:"metrics"`
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
		out.Items[i] = scoredItem{Task: in[i].task, Group: t.Group, Steps: len(t.Steps), Answered: t.Answered, Correct: t.Correct,
			Total: tr.Total, Raw: tr.Raw, Norm: tr.Norm, PerStep: tr.Steps}
	}
	return out
}
