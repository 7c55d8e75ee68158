package serve

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
)

// A vector is N episodes stepped together: one request creates them, one
// request steps all of them with N actions, and every answer carries the N
// next observations, masks, endings and reward terms as arrays (in the
// vector's encoding). Its slots are live episodes (GET /v1/episodes/{id}
// shows each, and they count against --max-episodes); the vector owns them.
//
// Tasks: given (each played by group consecutive slots, a GRPO group), or
// drawn at random from the vector's own streams, one per slot (PCG seeded
// with the vector's seed and the slot), so a slot's sequence of tasks is a
// function of the seed and the slot alone, whatever the timing of requests.
//
// Auto-reset, as gymnasium's vector environments do it:
//
//   - "next_step": a slot whose episode ended starts its next task at the
//     next step, ignoring that step's action; that answer has reward 0 and
//     neither terminated nor truncated (gymnasium's default);
//   - "same_step": a slot whose episode ended starts its next task at once;
//     the answer carries the new episode's observation, and the ended
//     episode's last observation in final_obs;
//   - "off": an ended slot stays ended, ignores its actions, and answers its
//     ending again with reward 0, until the vector is reset (every slot, or
//     the slots a reset's slots mask names: gymnasium's reset_mask).
//
// Auto-reset draws random tasks, so it needs random tasks and group 1 (a
// group's episodes end at different steps).
type vector struct {
	id        string
	mu        sync.Mutex
	closed    bool
	slots     []*episode
	group     int
	autoreset string
	obs       obsOptions
	src       resolvedTask // where random tasks come from
	seed      uint64
	rngs      []*rand.Rand // each slot's task stream
	pending   []bool       // next_step: the slot's episode ended at the last step
	ended     [][2]bool    // off: how each ended slot ended (terminated, truncated)
	steps     int          // vector steps since the last reset
	used      atomic.Int64
	rows      obsRows   // the answer's observations
	final     obsRows   // same_step: the last observations of ended episodes
	buf       frameBuf  // the answer's body
	out       vecArrays // the answer's per-slot scalars
}

func (v *vector) lastUse() *atomic.Int64 { return &v.used }

// Auto-reset modes.
const (
	autoresetNext = "next_step"
	autoresetSame = "same_step"
	autoresetOff  = "off"
)

// maxVector bounds the slots of one vector.
const maxVector = 4096

// vectorRequest is the body of POST /v1/vectors.
type vectorRequest struct {
	N           *int       `json:"n,omitempty"`
	Group       *int       `json:"group,omitempty"`
	Tasks       []taskSpec `json:"tasks,omitempty"`
	Split       *string    `json:"split,omitempty"`
	Family      *string    `json:"family,omitempty"`
	Seed        *uint64    `json:"seed,omitempty"`
	Autoreset   *string    `json:"autoreset,omitempty"`
	Observation *obsSpec   `json:"observation,omitempty"`
}

// vectorReset is the body of POST /v1/vectors/{id}/reset.
type vectorReset struct {
	Tasks  []taskSpec `json:"tasks,omitempty"`
	Split  *string    `json:"split,omitempty"`
	Family *string    `json:"family,omitempty"`
	Seed   *uint64    `json:"seed,omitempty"`
	// Slots, when given, names the slots that start new episodes (one bool per
	// slot, whole GRPO groups); the others keep theirs. gymnasium's reset_mask.
	Slots []bool `json:"slots,omitempty"`
}

// vectorStep is the body of POST /v1/vectors/{id}/step.
type vectorStep struct {
	Actions []int `json:"actions"`
}

// vectorPlan is a validated create or reset: the vector's shape and its
// tasks' sources.
type vectorPlan struct {
	n, group  int
	tasks     []resolvedTask // one per group; nil: random from src
	src       resolvedTask
	seed      *uint64
	autoreset string
	obs       obsOptions
	only      []bool // reset: the slots that start new episodes; nil: all
}

func (s *Server) planVector(req *vectorRequest) (vectorPlan, *apiError) {
	p := vectorPlan{group: 1, autoreset: autoresetOff}
	if req.Group != nil {
		if g := *req.Group; g < 1 || g > maxVector {
			return p, badField("group", "must be in [1, %d], got %d", maxVector, g)
		}
		p.group = *req.Group
	}
	if req.Autoreset != nil {
		switch a := *req.Autoreset; a {
		case autoresetNext, autoresetSame, autoresetOff:
			p.autoreset = a
		default:
			return p, badField("autoreset", "want %s, %s or %s, got %q", autoresetNext, autoresetSame, autoresetOff, a)
		}
	}
	var err *apiError
	if p.obs, err = req.Observation.resolve("observation."); err != nil {
		return p, err
	}
	if err := s.planTasks(&p, vectorReset{Tasks: req.Tasks, Split: req.Split, Family: req.Family, Seed: req.Seed}); err != nil {
		return p, err
	}
	switch {
	case req.Tasks != nil && req.N != nil && *req.N != len(req.Tasks)*p.group:
		return p, badField("n", "%d tasks × group %d make %d slots, not %d (or leave n out)", len(req.Tasks), p.group, len(req.Tasks)*p.group, *req.N)
	case req.Tasks != nil:
		p.n = len(req.Tasks) * p.group
	case req.N == nil:
		return p, badField("n", "required without tasks: the number of episodes")
	case *req.N < 1 || *req.N > maxVector:
		return p, badField("n", "must be in [1, %d], got %d", maxVector, *req.N)
	case *req.N%p.group != 0:
		return p, badField("group", "%d episodes do not split into groups of %d", *req.N, p.group)
	default:
		p.n = *req.N
	}
	if p.n > maxVector {
		return p, badField("tasks", "%d tasks × group %d make %d slots, more than %d", len(req.Tasks), p.group, p.n, maxVector)
	}
	if p.autoreset != autoresetOff && (p.group > 1 || p.tasks != nil) {
		return p, badField("autoreset", "%s draws a random task for each slot whose episode ended: it needs random tasks (no tasks) and group 1 (a group's episodes end at different steps); reset the vector instead", p.autoreset)
	}
	return p, nil
}

// planTasks checks the task part of a create or reset.
func (s *Server) planTasks(p *vectorPlan, r vectorReset) *apiError {
	src := taskSpec{Split: r.Split, Family: r.Family}
	rt, err := src.resolve("", s.envCfg.Families)
	if err != nil {
		return err
	}
	p.src, p.seed = rt, r.Seed
	if r.Tasks == nil {
		return nil
	}
	if r.Split != nil || r.Family != nil {
		f := "split"
		if r.Split == nil {
			f = "family"
		}
		return badField(f, "give it in each task, or draw random tasks without tasks")
	}
	if len(r.Tasks) == 0 || len(r.Tasks) > maxVector {
		return badField("tasks", "want 1 to %d tasks, got %d", maxVector, len(r.Tasks))
	}
	p.tasks = make([]resolvedTask, len(r.Tasks))
	for i := range r.Tasks {
		if p.tasks[i], err = r.Tasks[i].resolve(fmt.Sprintf("tasks[%d].", i), s.envCfg.Families); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) handleVectorCreate(w http.ResponseWriter, r *http.Request) {
	var req vectorRequest
	if err := decodeBody(w, r, &req, maxSmallBody, false); err != nil {
		writeError(w, err)
		return
	}
	p, err := s.planVector(&req)
	if err != nil {
		writeError(w, err)
		return
	}
	if !s.vectors.reserve(1) {
		writeError(w, s.full("vectors", "--max-episodes", s.opt.MaxEpisodes, s.vectors.oldestUse()))
		return
	}
	if err := s.admit(p.n); err != nil {
		s.vectors.release(1)
		writeError(w, err)
		return
	}
	v := &vector{id: newID("vec-"), group: p.group, autoreset: p.autoreset, obs: p.obs,
		slots: make([]*episode, p.n), pending: make([]bool, p.n), ended: make([][2]bool, p.n)}
	v.reseed(p, s.tasks.seed())
	tasks := s.vectorTasks(v, p)
	for i := range v.slots {
		v.slots[i] = s.newEpisode(tasks[i], p.obs, v.id)
		s.episodes.insert(v.slots[i].id, v.slots[i])
	}
	v.used.Store(s.opt.Now().UnixNano())
	s.vectors.insert(v.id, v)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		writeError(w, errorf(http.StatusNotFound, "id", "vector %s closed before it was returned", v.id))
		return
	}
	w.Header().Set("Location", "/v1/vectors/"+v.id)
	s.writeVectorState(w, r, http.StatusCreated, v)
}

// reseed sets the vector's task source and, with a seed (or on creation,
// the server's fresh seed), its slots' streams.
func (v *vector) reseed(p vectorPlan, fresh uint64) {
	v.src = p.src
	if p.seed == nil && v.rngs != nil {
		return
	}
	v.seed = fresh
	if p.seed != nil {
		v.seed = *p.seed
	}
	v.rngs = make([]*rand.Rand, len(v.slots))
	for i := range v.rngs {
		v.rngs[i] = rand.New(rand.NewPCG(v.seed, uint64(i)))
	}
}

// vectorTasks generates the tasks of every slot: the plan's, or random
// ones, one per group, drawn from the group's first slot's stream.
func (s *Server) vectorTasks(v *vector, p vectorPlan) []*env.Task {
	out := make([]*env.Task, p.n)
	parallel(p.n/p.group, func(lo, hi int) {
		for g := lo; g < hi; g++ {
			if p.only != nil && !p.only[g*p.group] {
				continue // the group keeps its episodes
			}
			var t *env.Task
			if p.tasks != nil {
				t = s.task(p.tasks[g])
			} else {
				t = s.slotTask(v, g*p.group)
			}
			for k := range p.group {
				out[g*p.group+k] = t
			}
		}
	})
	return out
}

// slotTask draws slot i's next random task.
func (s *Server) slotTask(v *vector, i int) *env.Task {
	rt := v.src
	rt.index = drawIndex(v.rngs[i], rt.family, len(s.envCfg.Families))
	return env.Generate(s.envCfg, rt.split, rt.index)
}

// lookupVector finds a live vector and locks it; the caller unlocks.
func (s *Server) lookupVector(id string) (*vector, *apiError) {
	v, ok := s.vectors.get(id)
	if ok {
		v.mu.Lock()
		if !v.closed {
			v.touch(s.opt.Now().UnixNano())
			return v, nil
		}
		v.mu.Unlock()
	}
	return nil, errorf(http.StatusNotFound, "id", "no live vector %q (closed, idle for more than %s, or never created)", id, s.opt.IdleTimeout)
}

// touch marks the vector and its slots used.
func (v *vector) touch(now int64) {
	v.used.Store(now)
	for _, e := range v.slots {
		e.used.Store(now)
	}
}

// closeVector closes the vector and its slots' episodes.
func (s *Server) closeVector(v *vector) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	v.closed = true
	for _, e := range v.slots {
		if _, ok := s.episodes.remove(e.id); ok {
			s.closeEpisode(e)
		}
	}
}

func (s *Server) handleVectorGet(w http.ResponseWriter, r *http.Request) {
	v, err := s.lookupVector(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer v.mu.Unlock()
	s.writeVectorState(w, r, http.StatusOK, v)
}

func (s *Server) handleVectorDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, ok := s.vectors.remove(id)
	if !ok {
		writeError(w, errorf(http.StatusNotFound, "id", "no live vector %q (closed, idle for more than %s, or never created)", id, s.opt.IdleTimeout))
		return
	}
	s.closeVector(v)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleVectorReset(w http.ResponseWriter, r *http.Request) {
	var req vectorReset
	if err := decodeBody(w, r, &req, maxSmallBody, true); err != nil {
		writeError(w, err)
		return
	}
	v, err := s.lookupVector(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer v.mu.Unlock()
	p := vectorPlan{n: len(v.slots), group: v.group, autoreset: v.autoreset, obs: v.obs}
	if err := resetSlots(&p, req.Slots); err != nil {
		writeError(w, err)
		return
	}
	if err := s.planTasks(&p, req); err != nil {
		writeError(w, err)
		return
	}
	if p.tasks != nil && len(p.tasks)*v.group != len(v.slots) {
		writeError(w, badField("tasks", "%d tasks × group %d make %d slots; the vector has %d", len(p.tasks), v.group, len(p.tasks)*v.group, len(v.slots)))
		return
	}
	if p.tasks != nil && v.autoreset != autoresetOff {
		writeError(w, badField("tasks", "the vector auto-resets (%s) to random tasks: reset it with a seed, split or family instead", v.autoreset))
		return
	}
	v.reseed(p, s.tasks.seed())
	tasks := s.vectorTasks(v, p)
	if err := v.lockSlots(); err != nil {
		writeError(w, err)
		return
	}
	for i, e := range v.slots {
		if p.only == nil || p.only[i] {
			e.reset(tasks[i])
			v.pending[i], v.ended[i] = false, [2]bool{}
		}
		e.mu.Unlock()
	}
	if p.only == nil {
		v.steps = 0
	}
	s.writeVectorState(w, r, http.StatusOK, v)
}

// resetSlots checks a reset's slots mask: one entry per slot, at least one
// slot reset, and a GRPO group reset whole (its samples share one task).
func resetSlots(p *vectorPlan, slots []bool) *apiError {
	if slots == nil {
		return nil
	}
	if len(slots) != p.n {
		return badField("slots", "%d entries; the vector has %d slots", len(slots), p.n)
	}
	any := false
	for g := 0; g < p.n; g += p.group {
		for k := g; k < g+p.group; k++ {
			if slots[k] != slots[g] {
				return badField("slots", "slots %d and %d are of one group (group %d): reset a group whole", g, k, p.group)
			}
		}
		any = any || slots[g]
	}
	if !any {
		return badField("slots", "no slot is reset: name at least one")
	}
	p.only = slots
	return nil
}

// lockSlots locks every slot's episode, or none when one was closed.
func (v *vector) lockSlots() *apiError {
	for i, e := range v.slots {
		e.mu.Lock()
		if e.closed {
			for _, f := range v.slots[:i+1] {
				f.mu.Unlock()
			}
			return errorf(http.StatusGone, "id", "slot %d's episode %s was closed: delete the vector", i, e.id)
		}
	}
	return nil
}

// vectorView is the state of a vector; its observations follow as arrays.
type vectorView struct {
	Vector       string      `json:"vector"`
	N            int         `json:"n"`
	Group        int         `json:"group"`
	Autoreset    string      `json:"autoreset"`
	Seed         uint64      `json:"seed"`
	Steps        int         `json:"steps"`
	Episodes     []string    `json:"episodes"`
	Tasks        []taskView  `json:"tasks"`
	MaxSteps     int         `json:"max_steps"`
	IdleTimeoutS float64     `json:"idle_timeout_s"`
	Observation  obsSpace    `json:"observation"`
	Reward       rewardTerms `json:"reward"`
}

// rewardTerms says what a step's reward holds.
type rewardTerms struct {
	Terms   []string           `json:"terms"`
	Weights map[string]float64 `json:"weights"`
	Formula string             `json:"formula"`
}

func (s *Server) rewardTerms() rewardTerms {
	rt := rewardTerms{Terms: termNames, Weights: map[string]float64{}}
	var sum, weighted, batch []string
	for i, n := range termNames {
		if t, _ := reward.Lookup(n); t.Priced {
			sum = append(sum, n)
			continue
		}
		rt.Weights[n] = s.terms.weights[i]
		sum, weighted = append(sum, "w_"+n+"·"+n), append(weighted, "w_"+n)
	}
	for _, t := range reward.Terms() {
		if !t.PerStep {
			batch = append(batch, t.Name)
		}
	}
	rt.Formula = "reward = " + strings.Join(sum, " + ") + " (" + strings.Join(weighted, ", ") + " of the first reward stage); " +
		strings.Join(batch, " and ") + " exist only for a scored batch (POST /v1/score)"
	return rt
}

func (s *Server) writeVectorState(w http.ResponseWriter, r *http.Request, status int, v *vector) {
	if err := v.lockSlots(); err != nil {
		writeError(w, err)
		return
	}
	n := len(v.slots)
	vv := vectorView{Vector: v.id, N: n, Group: v.group, Autoreset: v.autoreset, Seed: v.seed, Steps: v.steps,
		Episodes: make([]string, n), Tasks: make([]taskView, n), MaxSteps: s.envCfg.MaxSteps,
		IdleTimeoutS: s.opt.IdleTimeout.Seconds(), Observation: v.obs.space(), Reward: s.rewardTerms()}
	v.rows.resize(v.obs, n)
	for i, e := range v.slots {
		vv.Episodes[i], vv.Tasks[i] = e.id, publicTask(e.task)
		v.rows.fill(i, e)
		e.mu.Unlock()
	}
	s.writeFrame(w, r, status, v.obs.encoding, vv, v.rows.arrays("", n, true))
}

// parallel runs f over [0, n) split into one contiguous chunk per CPU.
func parallel(n int, f func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n)
	if w <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := range w {
		lo, hi := k*n/w, (k+1)*n/w
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}
