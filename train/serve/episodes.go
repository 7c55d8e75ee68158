package serve

import (
	"image"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

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
	used   atomic.Int64    // last use, Unix ns
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

// draw returns a random index of split whose family is families[family]
// (any family when family < 0).
func (ts *taskStream) draw(family, nf int) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if family < 0 {
		return ts.r.IntN(randomSpan)
	}
	return ts.r.IntN(randomSpan/nf)*nf + family
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
}

// full is the answer to a create beyond a cap: 503 with the time until the
// least recently used entry would expire.
func (s *Server) full(what, flag string, limit int, oldest int64) *apiError {
	e := errorf(http.StatusServiceUnavailable, "", "%d live %s, the most this server keeps (%s); close finished ones (DELETE) or retry once idle ones expire (idle timeout %s)",
		limit, what, flag, s.opt.IdleTimeout)
	wait := time.Second
	if oldest > 0 {
		wait = time.Duration(oldest + int64(s.opt.IdleTimeout) - s.opt.Now().UnixNano())
	}
	e.retryAfter = max(1, int((wait+time.Second-1)/time.Second))
	return e
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var spec taskSpec
	if err := decodeBody(w, r, &spec, maxSmallBody, true); err != nil {
		writeError(w, err)
		return
	}
	rt, err := spec.resolve("", s.envCfg.Families)
	if err != nil {
		writeError(w, err)
		return
	}
	if !s.episodes.reserve() {
		writeError(w, s.full("episodes", "--max-episodes", s.opt.MaxEpisodes, s.episodes.oldestUse()))
		return
	}
	e := &episode{id: newID("ep-"), env: s.pool.Get().(*env.Episode)}
	e.task = s.task(rt)
	e.env.Reset(e.task)
	e.region = fullView
	e.used.Store(s.opt.Now().UnixNano())
	s.episodes.insert(e.id, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed { // expired or deleted in the instant since insert
		writeError(w, errorf(http.StatusNotFound, "id", "episode %s closed before it was returned", e.id))
		return
	}
	w.Header().Set("Location", "/v1/episodes/"+e.id)
	writeJSON(w, http.StatusCreated, s.episodeView(e))
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer e.mu.Unlock()
	writeJSON(w, http.StatusOK, s.episodeView(e))
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e, ok := s.episodes.remove(id)
	if !ok {
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
	var rt resolvedTask
	if spec != nil {
		var err *apiError
		if rt, err = spec.resolve("", s.envCfg.Families); err != nil {
			writeError(w, err)
			return
		}
	}
	var t *env.Task
	if spec != nil { // generated before taking the episode's lock
		t = s.task(rt)
	}
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer e.mu.Unlock()
	if t != nil {
		e.task = t
	}
	e.env.Reset(e.task)
	e.region = fullView
	writeJSON(w, http.StatusOK, s.episodeView(e))
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
	if e.env.Done() {
		n := len(e.env.Trajectory())
		writeError(w, errorf(http.StatusConflict, "id", "episode %s is over after %d steps; reset it or create another", e.id, n))
		return
	}
	res, done := e.env.Step(a)
	if a.Op == env.OpZoom && res.Misuse == env.MisuseNone {
		e.region = res.BBox // ZOOM_IN reports the new view region
	}
	traj := e.env.Trajectory()
	k := len(traj) - 1
	out := stepView{Step: k + 1, stepJSON: stepOf(traj[k]), Done: done, Region: rectJSON(e.region)}
	if done {
		fin := s.finish(e)
		out.Finish = &fin
	}
	writeJSON(w, http.StatusOK, out)
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
		if err := s.heldOut(e.task); err != nil {
			writeError(w, err)
			return
		}
		if !e.env.Done() {
			writeError(w, errorf(http.StatusConflict, "format", "a CoTA record holds the ground truth: finish the episode first"))
			return
		}
		writeJSON(w, http.StatusOK, cotaRecord(e.task, traj))
		return
	}
	out := trajectoryView{Episode: e.id, Task: publicTask(e.task), Steps: stepsOf(traj), Done: e.env.Done()}
	if out.Done {
		fin := s.finish(e)
		out.Finish = &fin
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleExpert(w http.ResponseWriter, r *http.Request) {
	var spec taskSpec
	if err := decodeBody(w, r, &spec, maxSmallBody, true); err != nil {
		writeError(w, err)
		return
	}
	rt, err := spec.resolve("", s.envCfg.Families)
	if err != nil {
		writeError(w, err)
		return
	}
	t := s.task(rt)
	if err := s.heldOut(t); err != nil {
		writeError(w, err)
		return
	}
	ep := s.pool.Get().(*env.Episode)
	defer s.pool.Put(ep)
	acts := env.SolveIn(ep, t) // in an episode with the server's budgets, as pixelis data gen
	sample := cotaRecord(t, ep.Trajectory())
	out := expertView{Task: publicTask(t), Sample: sample}
	out.Task.GroundTruth = t.Answer
	for _, a := range acts {
		out.Actions = append(out.Actions, actionOut(a))
	}
	writeJSON(w, http.StatusOK, out)
}

// heldOut refuses the expert's trajectory or a CoTA record of a validation or
// test task unless the server was started to hand them out (Options.HeldOutExpert).
func (s *Server) heldOut(t *env.Task) *apiError {
	if t.Split == env.Train || s.opt.HeldOutExpert != "" {
		return nil
	}
	return errorf(http.StatusForbidden, "split", "task %s is of the %s split: this server hands out expert trajectories and CoTA records of training tasks only, so that no client trains on the tasks it is scored on (start it with --heldout-expert WHY to allow them)", t.ID, t.Split)
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

func (s *Server) episodeView(e *episode) episodeView {
	v := episodeView{
		Episode: e.id, Task: publicTask(e.task), Steps: len(e.env.Trajectory()), MaxSteps: s.envCfg.MaxSteps,
		Done: e.env.Done(), Region: rectJSON(e.region), IdleTimeoutS: s.opt.IdleTimeout.Seconds(),
		AllowedActions: []int{},
	}
	mask := make([]bool, env.NumActions())
	e.env.ActionMask(mask)
	for i, ok := range mask {
		if ok {
			v.AllowedActions = append(v.AllowedActions, i)
		}
	}
	if v.Done {
		f := s.finish(e)
		v.Finish = &f
	}
	return v
}
