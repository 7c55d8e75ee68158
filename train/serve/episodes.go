package serve

import (
	"image"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/pixelis/pixelis/train/env"
)

// episode is one live episode. Its mutex serialises the requests on it;
// closed is set (under the mutex) when it leaves the store, after which its
// env buffers belong to the pool and nothing may touch them.
type episode struct {
	id     string
	mu     sync.Mutex
	closed bool
	env    *env.Episode
	task   *env.Task
	region image.Rectangle // source region of the current view
	steps  int             // steps taken in the current episode
	obs    obsOptions      // what its answers carry
	vector string          // the vector it is a slot of, "" for none
	resets int             // restarts a client asked for (Outcome reports them)
	used   atomic.Int64    // last use, Unix ns
}

// reset starts t (nil: the same task again) in e.
func (e *episode) reset(t *env.Task) {
	if t != nil {
		e.task = t
	}
	e.env.Reset(e.task)
	e.region = fullView
	e.steps = 0
}

// step applies a (as the request decoders make it: no argument its
// operation does not take) and returns the step the episode recorded.
func (e *episode) step(a env.Action) (env.Step, bool) {
	res, done := e.env.Step(a)
	e.region = regionAfter(e.region, a, res)
	e.steps++
	idx, err := env.EncodeAction(a)
	if err != nil {
		idx = -1 // a segment outside the view has no index
	}
	return env.Step{Action: a, Result: res, Index: idx}, done
}

func (e *episode) lastUse() *atomic.Int64 { return &e.used }

// taskStream draws random tasks: a PCG stream seeded from run.seed, shared by
// every client. The draws' order depends on the order requests arrive, but
// every episode reports its split and index, so any task can be replayed.
type taskStream struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newTaskStream(seed uint64) *taskStream {
	return &taskStream{r: rand.New(rand.NewPCG(seed, 0x70697865_6c697321))}
}

// randomSpan is the range of task indices random tasks are drawn from.
const randomSpan = 1 << 30

// draw returns a random task index whose family is families[family] (any
// family when family < 0) of nf families.
func (ts *taskStream) draw(family, nf int) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return drawIndex(ts.r, family, nf)
}

func drawIndex(r *rand.Rand, family, nf int) int {
	if family < 0 {
		return r.IntN(randomSpan)
	}
	return r.IntN(randomSpan/nf)*nf + family
}

// seed draws a seed for a vector's own task streams.
func (ts *taskStream) seed() uint64 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.r.Uint64() >> 11 // exact in a JSON number (2^53)
}

// task generates the task a resolved spec names.
func (s *Server) task(rt resolvedTask) *env.Task {
	if rt.random {
		rt.index = s.tasks.draw(rt.family, len(s.envCfg.Families))
	}
	return env.Generate(s.envCfg, rt.split, rt.index)
}

var fullView = image.Rect(0, 0, env.SourceSize, env.SourceSize)

// lookup finds a live episode and locks it; the caller unlocks.
func (s *Server) lookup(id string) (*episode, *apiError) {
	e, ok := s.episodes.get(id)
	if ok {
		e.mu.Lock()
		if !e.closed {
			e.used.Store(s.opt.Now().UnixNano())
			return e, nil
		}
		e.mu.Unlock()
	}
	return nil, errorf(http.StatusNotFound, "id", "no live episode %q (closed, idle for more than %s, or never created)", id, s.opt.IdleTimeout)
}

// closeEpisode hands the episode's buffers back to the pool once no request
// uses them.
func (s *Server) closeEpisode(e *episode) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.closed = true
	s.pool.Put(e.env)
	e.env, e.task = nil, nil
	s.released()
	s.closedSince.Add(1)
}

// full is the answer to a create beyond a cap: 503 with the time until the
// least recently used entry would expire.
func (s *Server) full(what, flag string, limit int, oldest int64) *apiError {
	e := errorf(http.StatusServiceUnavailable, "", "%d live %s, the most this server keeps (%s); close finished ones (DELETE) or retry once idle ones expire (idle timeout %s)",
		limit, what, flag, s.opt.IdleTimeout)
	e.retryAfter = s.retryAfter(oldest)
	return e
}

// episodeRequest is the body of POST /v1/episodes: a task and what the
// episode's answers carry.
type episodeRequest struct {
	taskSpec
	Observation *obsSpec `json:"observation,omitempty"`
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var req episodeRequest
	if err := decodeBody(w, r, &req, maxSmallBody, true); err != nil {
		writeError(w, err)
		return
	}
	rt, err := req.resolve("", s.envCfg.Families)
	if err != nil {
		writeError(w, err)
		return
	}
	opt, err := req.Observation.resolve("observation.")
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.admit(1); err != nil {
		writeError(w, err)
		return
	}
	e := s.newEpisode(s.task(rt), opt, "")
	s.episodes.insert(e.id, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed { // expired or deleted in the instant since insert
		writeError(w, errorf(http.StatusNotFound, "id", "episode %s closed before it was returned", e.id))
		return
	}
	w.Header().Set("Location", "/v1/episodes/"+e.id)
	s.writeEpisode(w, r, http.StatusCreated, e)
}

// newEpisode starts t in pooled buffers; the caller holds a store slot.
func (s *Server) newEpisode(t *env.Task, opt obsOptions, vector string) *episode {
	e := &episode{id: newID("ep-"), env: s.pool.Get().(*env.Episode), obs: opt, vector: vector}
	e.reset(t)
	e.used.Store(s.opt.Now().UnixNano())
	return e
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer e.mu.Unlock()
	s.writeEpisode(w, r, http.StatusOK, e)
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e, ok := s.episodes.get(id)
	if ok && e.vector != "" {
		writeError(w, errorf(http.StatusConflict, "id", "episode %s is slot of vector %s: DELETE /v1/vectors/%s closes it", id, e.vector, e.vector))
		return
	}
	if e, ok = s.episodes.remove(id); !ok {
		writeError(w, errorf(http.StatusNotFound, "id", "no live episode %q (closed, idle for more than %s, or never created)", id, s.opt.IdleTimeout))
		return
	}
	s.closeEpisode(e)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	var spec *taskSpec
	if err := decodeBody(w, r, &spec, maxSmallBody, true); err != nil {
		writeError(w, err)
		return
	}
	var t *env.Task
	if spec != nil { // generated before taking the episode's lock
		rt, err := spec.resolve("", s.envCfg.Families)
		if err != nil {
			writeError(w, err)
			return
		}
		t = s.task(rt)
	}
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer e.mu.Unlock()
	if e.vector != "" {
		writeError(w, errorf(http.StatusConflict, "id", "episode %s is a slot of vector %s: POST /v1/vectors/%s/reset resets it", e.id, e.vector, e.vector))
		return
	}
	e.reset(t)
	e.resets++
	s.writeEpisode(w, r, http.StatusOK, e)
}

func (s *Server) handleStep(w http.ResponseWriter, r *http.Request) {
	var req stepRequest
	if err := decodeBody(w, r, &req, maxSmallBody, false); err != nil {
		writeError(w, err)
		return
	}
	a, aerr := req.action("")
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer e.mu.Unlock()
	if e.vector != "" {
		writeError(w, errorf(http.StatusConflict, "id", "episode %s is a slot of vector %s: POST /v1/vectors/%s/step steps it", e.id, e.vector, e.vector))
		return
	}
	if e.env.Done() {
		n := e.steps
		writeError(w, errorf(http.StatusConflict, "id", "episode %s is over after %d steps; reset it or create another", e.id, n))
		return
	}
	out := s.applyStep(e, a)
	var rows obsRows
	rows.resize(e.obs, 1)
	rows.fill(0, e)
	out.AllowedActions = allowed(rows.mask)
	s.writeFrame(w, r, http.StatusOK, e.obs.encoding, out, squeeze(rows.arrays("", 1, false)))
}

// applyStep takes a step in e (live, not over) and describes it: how it
// left the episode and its reward terms; the caller adds the next mask.
func (s *Server) applyStep(e *episode, a env.Action) stepView {
	last, done := e.step(a)
	out := stepView{Step: e.steps, stepJSON: stepOf(last), Done: done, Region: rectJSON(e.region)}
	out.Terminated, out.Truncated = ending(last, done)
	out.RewardTerms, out.Reward = s.termsView(e.env, last)
	if done {
		fin := s.finish(e)
		out.Finish = &fin
	}
	return out
}

// termsView is a step's reward terms by name, and their weighted sum.
func (s *Server) termsView(e *env.Episode, last env.Step) (map[string]float64, float64) {
	terms, sum := s.terms.of(e, last)
	m := make(map[string]float64, len(termNames))
	for i, n := range termNames {
		m[n] = terms[i]
	}
	return m, sum
}

// allowed lists the indices a mask allows.
func allowed(mask []bool) []int {
	out := []int{}
	for i, ok := range mask {
		if ok {
			out = append(out, i)
		}
	}
	return out
}

func (s *Server) handleResults(w http.ResponseWriter, r *http.Request) {
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer e.mu.Unlock()
	steps := stepsOf(e.env.Trajectory())
	out := struct {
		Episode string           `json:"episode"`
		Results []env.StepResult `json:"results"`
	}{Episode: e.id, Results: make([]env.StepResult, len(steps))}
	for i, st := range steps {
		out.Results[i] = st.Result
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleTrajectory(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "steps" && format != "cota" {
		writeError(w, badField("format", "want steps (the default) or cota, got %q", format))
		return
	}
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer e.mu.Unlock()
	traj := e.env.Trajectory()
	if format == "cota" {
		if err := s.heldOut(e.task, ""); err != nil {
			writeError(w, err)
			return
		}
		if !e.env.Done() {
			writeError(w, errorf(http.StatusConflict, "format", "a CoTA record holds the ground truth: finish the episode first"))
			return
		}
		writeJSON(w, http.StatusOK, s.cotaRecord(e.task, traj))
		return
	}
	out := trajectoryView{Episode: e.id, Task: publicTask(e.task), Steps: stepsOf(traj), Done: e.env.Done()}
	if out.Done {
		fin := s.finish(e)
		out.Finish = &fin
	}
	writeJSON(w, http.StatusOK, out)
}

// finish is what an ended episode reveals.
func (s *Server) finish(e *episode) finishView {
	ans, ok := e.env.Answer()
	f := finishView{Answered: ok, Correct: e.env.Correct(), GroundTruth: e.task.Answer}
	if ok {
		f.Answer = &ans
	}
	return f
}

// writeEpisode answers with e's state and its current observation.
func (s *Server) writeEpisode(w http.ResponseWriter, r *http.Request, status int, e *episode) {
	var rows obsRows
	rows.resize(e.obs, 1)
	rows.fill(0, e)
	v := episodeView{
		Episode: e.id, Vector: e.vector, Task: publicTask(e.task), Steps: e.steps, MaxSteps: s.envCfg.MaxSteps,
		Done: e.env.Done(), Region: rectJSON(e.region), IdleTimeoutS: s.opt.IdleTimeout.Seconds(),
		AllowedActions: allowed(rows.mask), Observation: e.obs.space(),
	}
	if v.Done {
		f := s.finish(e)
		v.Finish = &f
	}
	s.writeFrame(w, r, status, e.obs.encoding, v, squeeze(rows.arrays("", 1, false)))
}
