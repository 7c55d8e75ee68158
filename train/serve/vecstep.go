package serve

import (
	"fmt"
	"net/http"

	"github.com/pixelis/pixelis/train/env"
)

// vecArrays are a vector step's per-slot scalars.
type vecArrays struct {
	reward     []float64 // n
	terms      []float64 // n × len(termNames)
	terminated []bool
	truncated  []bool
	finished   []*finishedSlot // n, nil where no episode ended
}

func (va *vecArrays) resize(n int) {
	va.reward = grow(va.reward, n)
	va.terms = grow(va.terms, n*len(termNames))
	va.terminated = grow(va.terminated, n)
	va.truncated = grow(va.truncated, n)
	va.finished = grow(va.finished, n)
	clear(va.finished)
}

// finishedSlot is an episode that ended at this step.
type finishedSlot struct {
	Slot       int    `json:"slot"`
	Episode    string `json:"episode"`
	Task       string `json:"task"`
	Steps      int    `json:"steps"`
	Terminated bool   `json:"terminated"`
	Truncated  bool   `json:"truncated"`
	finishView
}

// vectorStepView is a vector step's answer; its arrays follow.
type vectorStepView struct {
	Vector    string `json:"vector"`
	Step      int    `json:"step"`
	Autoreset string `json:"autoreset"`
	// Finished lists the episodes that ended at this step, in slot order;
	// with same_step auto-reset, row k of final_obs is Finished[k]'s last
	// observation.
	Finished    []*finishedSlot `json:"finished"`
	RewardTerms []string        `json:"reward_term_names"` // the columns of the reward_terms array
}

func (s *Server) handleVectorStep(w http.ResponseWriter, r *http.Request) {
	var req vectorStep
	if err := decodeBody(w, r, &req, maxVectorBody, false); err != nil {
		writeError(w, err)
		return
	}
	v, err := s.lookupVector(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer v.mu.Unlock()
	acts, err := v.actions(req.Actions)
	if err != nil {
		writeError(w, err)
		return
	}
	n := len(v.slots)
	v.rows.resize(v.obs, n)
	if v.autoreset == autoresetSame {
		v.final.resize(v.obs, n)
	}
	v.out.resize(n)
	closed := make([]bool, n)
	parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			closed[i] = !s.stepSlot(v, i, acts[i])
		}
	})
	for i, c := range closed {
		if c {
			writeError(w, errorf(http.StatusGone, "id", "slot %d's episode %s was closed: delete the vector", i, v.slots[i].id))
			return
		}
	}
	v.steps++
	head := vectorStepView{Vector: v.id, Step: v.steps, Autoreset: v.autoreset, Finished: []*finishedSlot{}, RewardTerms: termNames}
	for _, f := range v.out.finished[:n] {
		if f != nil {
			head.Finished = append(head.Finished, f)
		}
	}
	s.writeFrameBuf(w, r, &v.buf, http.StatusOK, v.obs.encoding, head, v.stepArrays(head.Finished))
}

// maxVectorBody bounds a vector step's body: an action index per slot.
const maxVectorBody = 1 << 20

// actions checks one action per slot; a slot that ignores its action
// (next_step auto-reset, or an ended slot without auto-reset) takes any
// integer.
func (v *vector) actions(idx []int) ([]env.Action, *apiError) {
	if len(idx) != len(v.slots) {
		return nil, badField("actions", "want one action index per slot, %d, got %d", len(v.slots), len(idx))
	}
	out := make([]env.Action, len(idx))
	for i, k := range idx {
		if v.ignores(i) {
			continue
		}
		a, err := env.DecodeAction(k)
		if err != nil {
			return nil, badField(fmt.Sprintf("actions[%d]", i), "must be in [0, %d), got %d", env.NumActions(), k)
		}
		out[i] = a
	}
	return out, nil
}

// ignores reports whether slot i ignores its next action. Slots change
// state only under the vector's lock, which the caller holds.
func (v *vector) ignores(i int) bool {
	return v.pending[i] || (v.autoreset == autoresetOff && v.slots[i].env.Done())
}

// stepSlot steps slot i with a and fills its rows of the answer; false when
// the slot's episode was closed.
func (s *Server) stepSlot(v *vector, i int, a env.Action) bool {
	e := v.slots[i]
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	out, nt := &v.out, len(termNames)
	terms := out.terms[i*nt : (i+1)*nt]
	clear(terms)
	out.reward[i], out.terminated[i], out.truncated[i] = 0, false, false
	switch {
	case v.pending[i]: // next_step: the episode ended at the last step
		e.reset(s.slotTask(v, i))
		v.pending[i] = false
	case e.env.Done(): // off: ended until the vector is reset
		out.terminated[i], out.truncated[i] = v.ended[i][0], v.ended[i][1]
	default:
		last, done := e.step(a)
		out.reward[i] = s.terms.of(e.env, last, terms)
		term, trunc := ending(last, done)
		out.terminated[i], out.truncated[i] = term, trunc
		if done {
			out.finished[i] = &finishedSlot{Slot: i, Episode: e.id, Task: e.task.ID, Steps: e.steps,
				Terminated: term, Truncated: trunc, finishView: s.finish(e)}
			switch v.autoreset {
			case autoresetSame:
				v.final.fill(i, e)
				e.reset(s.slotTask(v, i))
			case autoresetNext:
				v.pending[i] = true
			default:
				v.ended[i] = [2]bool{term, trunc}
			}
		}
	}
	v.rows.fill(i, e)
	return true
}

// stepArrays are a step answer's arrays: observations and masks of every
// slot, rewards, endings, and with same_step auto-reset the last
// observations of the episodes that ended, in the order of fin.
func (v *vector) stepArrays(fin []*finishedSlot) []*array {
	n, nt := len(v.slots), len(termNames)
	out := v.rows.arrays("", n, true)
	out = append(out,
		&array{name: "reward", shape: []int{n}, f64: v.out.reward[:n]},
		&array{name: "reward_terms", shape: []int{n, nt}, f64: v.out.terms[:n*nt]},
		&array{name: "terminated", shape: []int{n}, b: v.out.terminated[:n]},
		&array{name: "truncated", shape: []int{n}, b: v.out.truncated[:n]},
	)
	if v.autoreset == autoresetSame {
		for k, f := range fin { // rows of the ended slots, moved to the front in order
			v.final.moveRow(k, f.Slot)
		}
		out = append(out, v.final.arrays("final_", len(fin), false)...)
	}
	return out
}

// moveRow copies the observation of row from into row to.
func (r *obsRows) moveRow(to, from int) {
	if to == from {
		return
	}
	if r.opt.coarse {
		w := obsWidth()
		copy(r.coarse[to*w:(to+1)*w], r.coarse[from*w:(from+1)*w])
	}
	if p := r.opt.pixels; p > 0 {
		n := p * p * 3
		copy(r.pixels[to*n:(to+1)*n], r.pixels[from*n:(from+1)*n])
	}
}
