package serve

import (
	"fmt"
	"image"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
)

// What every answer about an episode carries, for a trainer that steps it:
// the observation (the coarse view pixelis's own policy reads, and/or the
// view's pixels), the action mask, how the episode ended, and the reward
// terms known at the step. A session (an episode, a vector of episodes)
// chooses its observations and their encoding when it is created.

// obsSpec is the "observation" member of a create request.
type obsSpec struct {
	Coarse   *bool   `json:"coarse,omitempty"`
	Pixels   *int    `json:"pixels,omitempty"`
	Encoding *string `json:"encoding,omitempty"`
}

// obsOptions are a session's resolved observation choices.
type obsOptions struct {
	coarse   bool   // the coarse view, obsWidth float32
	pixels   int    // the view's pixels at pixels² RGB, 0 for none
	encoding string // encodingJSON or encodingNPY
}

// defaultObs is what a session gets when it does not choose: the coarse
// view as JSON numbers.
var defaultObs = obsOptions{coarse: true, encoding: encodingJSON}

func (o *obsSpec) resolve(path string) (obsOptions, *apiError) {
	out := defaultObs
	if o == nil {
		return out, nil
	}
	if o.Coarse != nil {
		out.coarse = *o.Coarse
	}
	if o.Pixels != nil {
		if p := *o.Pixels; p != 0 && (p < minImageSize || p > maxImageSize) {
			return out, badField(path+"pixels", "must be 0 (none) or in [%d, %d], got %d", minImageSize, maxImageSize, p)
		}
		out.pixels = *o.Pixels
	}
	if o.Encoding != nil {
		if e := *o.Encoding; e != encodingJSON && e != encodingNPY {
			return out, badField(path+"encoding", "want %s or %s, got %q", encodingJSON, encodingNPY, e)
		}
		out.encoding = *o.Encoding
	}
	return out, nil
}

// obsWidth is the width of the coarse view: the floats env.Episode.Observe
// writes, which is the input pixelis's own policy reads (train/rollout/rollout.go
// feeds them to the policy as they are). Every buffer and every shape the
// server describes takes its width from here.
func obsWidth() int { return env.ObsDim }

// observeCoarse writes the policy input of e's current state into dst.
func observeCoarse(e *env.Episode, dst []float32) { e.Observe(dst) }

// space describes one array of an observation: its element type and shape.
type space struct {
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
}

// coarseSpace describes the coarse view's array and the observation version
// its floats follow: the layout GET /v1/spec publishes as
// observation.coarse.layout, whose version it equals (env.ObsVersion).
type coarseSpace struct {
	space
	Version int `json:"version"`
}

// obsSpace describes a session's observations (one environment's).
type obsSpace struct {
	Encoding string       `json:"encoding"`
	Coarse   *coarseSpace `json:"coarse,omitempty"`
	Pixels   *space       `json:"pixels,omitempty"`
	Mask     space        `json:"action_mask"`
}

func (o obsOptions) space() obsSpace {
	out := obsSpace{Encoding: o.encoding, Mask: space{"bool", []int{env.NumActions()}}}
	if o.coarse {
		out.Coarse = &coarseSpace{space{"float32", []int{obsWidth()}}, env.ObsVersion}
	}
	if o.pixels > 0 {
		out.Pixels = &space{"uint8", []int{o.pixels, o.pixels, 3}}
	}
	return out
}

// obsRows are the observation arrays of n environments.
type obsRows struct {
	opt    obsOptions
	coarse []float32 // n × obsWidth
	pixels []uint8   // n × pixels² × 3
	mask   []bool    // n × NumActions
}

// resize makes room for n rows, reusing the buffers.
func (r *obsRows) resize(opt obsOptions, n int) {
	r.opt = opt
	if opt.coarse {
		r.coarse = grow(r.coarse, n*obsWidth())
	}
	if opt.pixels > 0 {
		r.pixels = grow(r.pixels, n*opt.pixels*opt.pixels*3)
	}
	r.mask = grow(r.mask, n*env.NumActions())
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// fill writes row i: the observation of e's current state.
func (r *obsRows) fill(i int, e *episode) {
	if r.opt.coarse {
		w := obsWidth()
		observeCoarse(e.env, r.coarse[i*w:(i+1)*w])
	}
	if p := r.opt.pixels; p > 0 {
		n := p * p * 3
		resample(r.pixels[i*n:(i+1)*n], 3, e.task.Frames[0], e.region, p)
	}
	a := env.NumActions()
	e.env.ActionMask(r.mask[i*a : (i+1)*a])
}

// arrays returns rows [0, n) as the answer's arrays, named prefix+"obs",
// prefix+"pixels" and (when mask) "action_mask".
func (r *obsRows) arrays(prefix string, n int, mask bool) []*array {
	var out []*array
	if r.opt.coarse {
		out = append(out, &array{name: prefix + "obs", shape: []int{n, obsWidth()}, f32: r.coarse[:n*obsWidth()]})
	}
	if p := r.opt.pixels; p > 0 {
		out = append(out, &array{name: prefix + "pixels", shape: []int{n, p, p, 3}, u8: r.pixels[:n*p*p*3]})
	}
	if mask {
		a := env.NumActions()
		out = append(out, &array{name: "action_mask", shape: []int{n, a}, b: r.mask[:n*a]})
	}
	return out
}

// squeeze drops the leading dimension of arrays of one environment.
func squeeze(as []*array) []*array {
	for _, a := range as {
		a.shape = a.shape[1:]
	}
	return as
}

// Reward terms known at a step, before any batch is scored: the reward
// registry's per-step terms (the final reward's raw value on the answering
// step, the misuse penalty of the step with the no-answer charge on a step
// that ends the episode unanswered, the price of its operation). Their sums
// over an episode are the episode's raw values of POST /v1/score. The other
// terms (coherence, curiosity) compare an episode with others, so they exist
// only for a scored batch. The list is read from the registry once, when
// this package is initialised: a per-step term is registered from an init
// function of a package this one's importer loads first.
var termNames = perStepNames()

func perStepNames() []string {
	var names []string
	for _, t := range reward.Terms() {
		if t.PerStep {
			names = append(names, t.Name)
		}
	}
	return names
}

// stepTerms computes the terms with the reward's own components.
type stepTerms struct {
	comps   []reward.Component // one per termNames entry
	weights []float64          // a weighted term's weight in the config's first reward stage; 1 for a price
}

// newStepTerms builds the per-step terms of cfg's reward.
func newStepTerms(cfg *configs.Config) (stepTerms, error) {
	var st stepTerms
	var first configs.Weights
	if len(cfg.Curriculum.Stages) > 0 {
		first = cfg.Curriculum.Stages[0].Weights
	}
	for _, n := range termNames {
		t, _ := reward.Lookup(n)
		c, err := t.New(reward.Parts{Config: cfg.Reward})
		if err != nil {
			return st, fmt.Errorf("reward %s: %w", n, err)
		}
		w := 1.0
		if !t.Priced && first != nil {
			w = first[n]
		}
		st.comps, st.weights = append(st.comps, c), append(st.weights, w)
	}
	return st, nil
}

// of writes the terms of e's last step into terms (one per termNames entry)
// and returns their sum weighted as the first stage weighs them (prices are
// never weighted).
func (st *stepTerms) of(e *env.Episode, last env.Step, terms []float64) (sum float64) {
	_, answered := e.Answer()
	tr := []*reward.Trajectory{{Steps: []env.Step{last}, Answered: !e.Done() || answered, Correct: e.Done() && e.Correct()}}
	for i, c := range st.comps {
		terms[i] = c.Score(tr)[0].Value
		sum += st.weights[i] * terms[i]
	}
	return sum
}

// ending says how a step ended its episode, in gymnasium's terms:
// terminated by ANSWER, truncated at the step limit.
func ending(last env.Step, done bool) (terminated, truncated bool) {
	if !done {
		return false, false
	}
	return last.Action.Op == env.OpAnswer, last.Result.CutOff
}

// regionAfter is the view region after a step: ZOOM_IN reports its new
// region, nothing else moves the view.
func regionAfter(region image.Rectangle, a env.Action, res env.Result) image.Rectangle {
	if a.Op == env.OpZoom && res.Misuse == env.MisuseNone {
		return res.BBox
	}
	return region
}
