package serve

import (
	"fmt"
	"net/http"

	"github.com/pixelis/pixelis/train/env"
)

// The expert's demonstrations: for one task (POST /v1/expert) or many
// (POST /v1/experts), its actions and CoTA record, and on request the
// observation and mask each action was taken on, so behaviour cloning from
// the coarse view or from pixels needs no replay.

// expertRequest is the body of POST /v1/expert: a task, and optionally the
// observations to send along the demonstration.
type expertRequest struct {
	taskSpec
	Observation *obsSpec `json:"observation,omitempty"`
}

// expertsRequest is the body of POST /v1/experts.
type expertsRequest struct {
	Tasks       []taskSpec `json:"tasks"`
	Observation *obsSpec   `json:"observation,omitempty"`
}

// maxExperts bounds the tasks of one POST /v1/experts.
const maxExperts = 1024

// demo is one task's demonstration: rows [first, first+len(actions)) of
// the answer's arrays are the observations its actions were taken on.
type demo struct {
	task    *env.Task
	actions []env.Action
	steps   []env.Step
	first   int
}

// demonstrate solves every task in parallel, in episodes with the server's
// budgets (as pixelis data gen does), and numbers the observation rows.
func (s *Server) demonstrate(tasks []*env.Task) ([]demo, int) {
	out := make([]demo, len(tasks))
	parallel(len(tasks), func(lo, hi int) {
		ep := s.pool.Get().(*env.Episode)
		defer s.pool.Put(ep)
		for i := lo; i < hi; i++ {
			out[i] = demo{task: tasks[i], actions: env.SolveIn(ep, tasks[i])}
			out[i].steps = ep.Trajectory()
		}
	})
	rows := 0
	for i := range out {
		out[i].first = rows
		rows += len(out[i].actions)
	}
	return out, rows
}

// observeDemos replays each demonstration and writes the observation before
// every action into rows.
func (s *Server) observeDemos(demos []demo, rows *obsRows) {
	parallel(len(demos), func(lo, hi int) {
		e := &episode{env: s.pool.Get().(*env.Episode)}
		defer s.pool.Put(e.env)
		for _, d := range demos[lo:hi] {
			e.reset(d.task)
			for k, a := range d.actions {
				rows.fill(d.first+k, e)
				e.step(a)
			}
		}
	})
}

// expertView is one demonstration.
type expertView struct {
	Task    taskView     `json:"task"`
	Actions []actionJSON `json:"actions"`
	// Sample is the CoTA record of the expert's episode, as one line of
	// `pixelis data gen` (its difficulty bucket from the server's reference
	// cut points, see cota.go).
	Sample env.Sample `json:"sample"`
	// Rows, when observations were asked for, are the rows [first, end) of
	// the answer's arrays: the observation each action was taken on.
	Rows *[2]int `json:"rows,omitempty"`
}

func (s *Server) expertView(d demo, withRows bool) expertView {
	out := expertView{Task: publicTask(d.task), Sample: s.cotaRecord(d.task, d.steps)}
	out.Task.GroundTruth = d.task.Answer
	for _, a := range d.actions {
		out.Actions = append(out.Actions, actionOut(a))
	}
	if withRows {
		out.Rows = &[2]int{d.first, d.first + len(d.actions)}
	}
	return out
}

func (s *Server) handleExpert(w http.ResponseWriter, r *http.Request) {
	var req expertRequest
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
	t := s.task(rt)
	if err := s.heldOut(t, ""); err != nil {
		writeError(w, err)
		return
	}
	demos, n := s.demonstrate([]*env.Task{t})
	if req.Observation == nil {
		writeJSON(w, http.StatusOK, s.expertView(demos[0], false))
		return
	}
	var rows obsRows
	rows.resize(opt, n)
	s.observeDemos(demos, &rows)
	s.writeFrame(w, r, http.StatusOK, opt.encoding, s.expertView(demos[0], true), rows.arrays("", n, true))
}

func (s *Server) handleExperts(w http.ResponseWriter, r *http.Request) {
	var req expertsRequest
	if err := decodeBody(w, r, &req, maxSmallBody, false); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Tasks) == 0 || len(req.Tasks) > maxExperts {
		writeError(w, badField("tasks", "want 1 to %d tasks, got %d", maxExperts, len(req.Tasks)))
		return
	}
	opt, err := req.Observation.resolve("observation.")
	if err != nil {
		writeError(w, err)
		return
	}
	rts := make([]resolvedTask, len(req.Tasks))
	for i := range req.Tasks {
		if rts[i], err = req.Tasks[i].resolve(fmt.Sprintf("tasks[%d].", i), s.envCfg.Families); err != nil {
			writeError(w, err)
			return
		}
	}
	tasks := make([]*env.Task, len(rts))
	for i, rt := range rts {
		tasks[i] = s.task(rt)
		if err := s.heldOut(tasks[i], fmt.Sprintf("tasks[%d].", i)); err != nil {
			writeError(w, err)
			return
		}
	}
	demos, n := s.demonstrate(tasks)
	var rows obsRows
	rows.resize(opt, n)
	s.observeDemos(demos, &rows)
	head := struct {
		Experts     []expertView `json:"experts"`
		Observation obsSpace     `json:"observation"`
	}{Experts: make([]expertView, len(demos)), Observation: opt.space()}
	for i, d := range demos {
		head.Experts[i] = s.expertView(d, true)
	}
	s.writeFrame(w, r, http.StatusOK, opt.encoding, head, rows.arrays("", n, true))
}

// heldOut refuses the expert's trajectory or a CoTA record of a validation or
// test task unless the server was started to hand them out
// (Options.HeldOutExpert); prefix names the task in the request.
func (s *Server) heldOut(t *env.Task, prefix string) *apiError {
	if t.Split == env.Train || s.opt.HeldOutExpert != "" {
		return nil
	}
	return errorf(http.StatusForbidden, prefix+"split", "task %s is of the %s split: this server hands out expert trajectories and CoTA records of training tasks only, so that no client trains on the tasks it is scored on (start it with --heldout-expert WHY to allow them)", t.ID, t.Split)
}
