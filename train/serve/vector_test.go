package serve

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
)

// frame is a decoded answer: its JSON members, and its arrays as float64
// with their shapes, whichever encoding carried them.
type frame struct {
	head   map[string]json.RawMessage
	arrays map[string][]float64
	shapes map[string][]int
}

var npyDict = regexp.MustCompile(`^\{'descr': '([<|][a-z][0-9])', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \} *\n$`)

// decodeFrame reads an answer in the npy or the JSON encoding.
func decodeFrame(t testing.TB, ctype string, body []byte) frame {
	t.Helper()
	f := frame{arrays: map[string][]float64{}, shapes: map[string][]int{}}
	if ctype == "application/json" {
		if err := json.Unmarshal(body, &f.head); err != nil {
			t.Fatalf("answer %s: %v", body, err)
		}
		return f
	}
	if ctype != npyContentType {
		t.Fatalf("content type %q", ctype)
	}
	hl := int(binary.LittleEndian.Uint32(body))
	if (4+hl)%npyAlign != 0 {
		t.Fatalf("arrays start at %d, not on a multiple of %d", 4+hl, npyAlign)
	}
	if err := json.Unmarshal(body[4:4+hl], &f.head); err != nil {
		t.Fatalf("header %s: %v", body[4:4+hl], err)
	}
	var infos []arrayInfo
	json.Unmarshal(f.head["arrays"], &infos)
	delete(f.head, "arrays")
	for _, a := range infos {
		npy := body[4+hl+a.Offset : 4+hl+a.Offset+a.Length]
		if string(npy[:8]) != "\x93NUMPY\x01\x00" {
			t.Fatalf("%s: no .npy magic", a.Name)
		}
		dl := int(binary.LittleEndian.Uint16(npy[8:]))
		if (4+hl+a.Offset+10+dl)%npyAlign != 0 {
			t.Errorf("%s: data not aligned", a.Name)
		}
		m := npyDict.FindStringSubmatch(string(npy[10 : 10+dl]))
		if m == nil {
			t.Fatalf("%s: .npy header %q", a.Name, npy[10:10+dl])
		}
		var shape []int
		n := 1
		for _, d := range strings.Split(m[2], ",") {
			if d = strings.TrimSpace(d); d != "" {
				k, _ := strconv.Atoi(d)
				shape = append(shape, k)
				n *= k
			}
		}
		data, vals := npy[10+dl:], make([]float64, n)
		for i := range vals {
			switch m[1] {
			case "<f4":
				vals[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
			case "<f8":
				vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
			case "|u1", "|b1":
				vals[i] = float64(data[i])
			default:
				t.Fatalf("%s: dtype %s", a.Name, m[1])
			}
		}
		f.arrays[a.Name], f.shapes[a.Name] = vals, shape
	}
	return f
}

// array returns a named array (from the JSON members when the answer was
// JSON: nested lists flattened, booleans as 0 and 1).
func (f frame) array(t testing.TB, name string) []float64 {
	t.Helper()
	if a, ok := f.arrays[name]; ok {
		return a
	}
	raw, ok := f.head[name]
	if !ok {
		t.Fatalf("answer has no %s", name)
	}
	var v any
	json.Unmarshal(raw, &v)
	var out []float64
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case float64:
			out = append(out, x)
		case bool:
			out = append(out, map[bool]float64{false: 0, true: 1}[x])
		}
	}
	walk(v)
	return out
}

func (f frame) get(t testing.TB, name string, dst any) {
	t.Helper()
	if err := json.Unmarshal(f.head[name], dst); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// call sends a request and decodes the 2xx answer.
func (s *testServer) call(method, path string, in any) frame {
	s.t.Helper()
	status, h, body := s.do(method, path, in)
	if status/100 != 2 {
		s.t.Fatalf("%s %s: %d %s", method, path, status, body)
	}
	return decodeFrame(s.t, h.Get("Content-Type"), body)
}

// maskIndices lists the allowed indices of a mask row.
func maskIndices(row []float64) []int {
	out := []int{}
	for i, v := range row {
		if v != 0 {
			out = append(out, i)
		}
	}
	return out
}

// TestVectorStepIsOneAtATimeStepping: the same actions stepped through a
// vector and through single episodes on the same tasks give the same
// observations, masks, rewards, endings and trajectories, in both
// encodings, and every mask a vector answers is the one GET
// /v1/episodes/{id} reports for that slot.
func TestVectorStepIsOneAtATimeStepping(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	for _, enc := range []string{encodingNPY, encodingJSON} {
		t.Run(enc, func(t *testing.T) {
			const n = 6
			obs := map[string]any{"coarse": true, "pixels": 16, "encoding": enc}
			var tasks []map[string]any
			for i := range n {
				tasks = append(tasks, map[string]any{"split": "val", "index": i})
			}
			vec := ts.call("POST", "/v1/vectors", map[string]any{"tasks": tasks, "observation": obs})
			var id string
			var slots []string
			vec.get(t, "vector", &id)
			vec.get(t, "episodes", &slots)
			singles := make([]string, n)
			for i := range n {
				ep := ts.call("POST", "/v1/episodes", map[string]any{"split": "val", "index": i, "observation": obs})
				ep.get(t, "episode", &singles[i])
				compareRows(t, "create", vec, i, ep)
			}
			r := rand.New(rand.NewPCG(uint64(len(enc)), 9))
			nA := env.NumActions()
			done := make([]bool, n)
			for step := 1; !allTrue(done); step++ {
				mask := vec.array(t, "action_mask")
				acts := make([]int, n)
				for i := range acts {
					if !done[i] {
						allowed := maskIndices(mask[i*nA : (i+1)*nA])
						acts[i] = allowed[r.IntN(len(allowed))]
					}
				}
				vec = ts.call("POST", "/v1/vectors/"+id+"/step", map[string]any{"actions": acts})
				term, trunc := vec.array(t, "terminated"), vec.array(t, "truncated")
				rew, terms := vec.array(t, "reward"), vec.array(t, "reward_terms")
				for i := range n {
					if done[i] {
						continue
					}
					one := ts.call("POST", "/v1/episodes/"+singles[i]+"/step", map[string]any{"index": acts[i]})
					where := fmt.Sprintf("step %d slot %d", step, i)
					compareRows(t, where, vec, i, one)
					var sv stepView
					json.Unmarshal(mustJSON(t, one.head), &sv)
					if sv.Terminated != (term[i] != 0) || sv.Truncated != (trunc[i] != 0) || sv.Reward != rew[i] {
						t.Errorf("%s: single %v/%v/%v, vector %v/%v/%v", where, sv.Terminated, sv.Truncated, sv.Reward, term[i], trunc[i], rew[i])
					}
					for k, name := range termNames {
						if sv.RewardTerms[name] != terms[i*len(termNames)+k] {
							t.Errorf("%s: %s %v, vector %v", where, name, sv.RewardTerms[name], terms[i*len(termNames)+k])
						}
					}
					got := ts.call("GET", "/v1/episodes/"+slots[i], nil)
					var ev episodeView
					json.Unmarshal(mustJSON(t, got.head), &ev)
					if want := maskIndices(vec.array(t, "action_mask")[i*nA : (i+1)*nA]); !slices.Equal(ev.AllowedActions, want) {
						t.Errorf("%s: the vector's mask %v, the server's %v", where, want, ev.AllowedActions)
					}
					done[i] = sv.Done
				}
			}
			for i := range n {
				_, _, a := ts.do("GET", "/v1/episodes/"+slots[i]+"/trajectory", nil)
				_, _, b := ts.do("GET", "/v1/episodes/"+singles[i]+"/trajectory", nil)
				var ta, tb trajectoryView
				json.Unmarshal(a, &ta)
				json.Unmarshal(b, &tb)
				if len(ta.Steps) == 0 || !jsonEqual(t, ta.Steps, tb.Steps) || !jsonEqual(t, ta.Finish, tb.Finish) {
					t.Errorf("slot %d: trajectory %s, single %s", i, a, b)
				}
			}
		})
	}
}

// compareRows checks that row i of a vector answer's observation arrays is
// a single episode's observation.
func compareRows(t *testing.T, where string, vec frame, i int, one frame) {
	t.Helper()
	for _, name := range []string{"obs", "pixels"} {
		row := one.array(t, name)
		all := vec.array(t, name)
		if got := all[i*len(row) : (i+1)*len(row)]; !slices.Equal(got, row) {
			t.Errorf("%s: %s of slot %d differs from the single episode's", where, name, i)
		}
	}
	var allowed []int
	one.get(t, "allowed_actions", &allowed)
	nA := env.NumActions()
	if got := maskIndices(vec.array(t, "action_mask")[i*nA : (i+1)*nA]); !slices.Equal(got, allowed) {
		t.Errorf("%s: mask %v, single episode's %v", where, got, allowed)
	}
}

func allTrue(b []bool) bool { return !slices.Contains(b, false) }

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonEqual(t testing.TB, a, b any) bool { return string(mustJSON(t, a)) == string(mustJSON(t, b)) }

// TestVectorAutoreset: each auto-reset mode follows gymnasium's semantics,
// a slot's tasks come from its own stream (a function of the seed and the
// slot), and the observations are pixelis's own: the in-process episodes
// of the same tasks, stepped with the same actions, observe the same.
func TestVectorAutoreset(t *testing.T) {
	cfg := smoke(t)
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, cfg, Options{})
	const n, seed = 4, 11
	for _, mode := range []string{autoresetSame, autoresetNext, autoresetOff} {
		t.Run(mode, func(t *testing.T) {
			vec := ts.call("POST", "/v1/vectors", map[string]any{"n": n, "seed": seed, "autoreset": mode, "split": "train", "observation": map[string]any{"encoding": "npy"}})
			var id string
			vec.get(t, "vector", &id)
			m := newVectorMirror(ec, mode, n, seed)
			nA := env.NumActions()
			r := rand.New(rand.NewPCG(1, 1))
			for step := 1; step <= 3*ec.MaxSteps; step++ {
				acts := make([]int, n)
				mask := vec.array(t, "action_mask")
				for i := range n {
					if allowed := maskIndices(mask[i*nA : (i+1)*nA]); len(allowed) > 0 {
						acts[i] = allowed[r.IntN(len(allowed))]
					}
				}
				vec = ts.call("POST", "/v1/vectors/"+id+"/step", map[string]any{"actions": acts})
				m.checkStep(t, step, acts, vec)
			}
			if m.ended == 0 {
				t.Fatal("no episode ended: the test saw no reset")
			}
		})
	}
}

// vectorMirror plays a vector's episodes in process, as the server should under its autoreset mode.
type vectorMirror struct {
	ec      env.Config
	mode    string
	rngs    []*rand.Rand
	eps     []*env.Episode
	pending []bool    // next: the slot resets on the coming step
	endings [][2]bool // off: how each ended episode ended
	obs     []float32
	ended   int // episodes ended so far
}

// newVectorMirror starts n episodes, slot i on the tasks the seed's stream i draws.
func newVectorMirror(ec env.Config, mode string, n int, seed uint64) *vectorMirror {
	m := &vectorMirror{ec: ec, mode: mode, rngs: make([]*rand.Rand, n), eps: make([]*env.Episode, n),
		pending: make([]bool, n), endings: make([][2]bool, n), obs: make([]float32, obsWidth())}
	for i := range n {
		m.rngs[i] = rand.New(rand.NewPCG(seed, uint64(i)))
		m.eps[i] = env.NewEpisode(ec)
		m.eps[i].Reset(m.next(i))
	}
	return m
}

// next is slot i's next task.
func (m *vectorMirror) next(i int) *env.Task {
	return env.Generate(m.ec, env.Train, drawIndex(m.rngs[i], -1, len(m.ec.Families)))
}

// checkStep takes acts in process and checks the server's answer to the same step, slot by slot:
// the endings, the finished list, the final observations and the observations.
func (m *vectorMirror) checkStep(t *testing.T, step int, acts []int, vec frame) {
	t.Helper()
	w := obsWidth()
	var fin []finishedSlot
	vec.get(t, "finished", &fin)
	term, trunc, rew := vec.array(t, "terminated"), vec.array(t, "truncated"), vec.array(t, "reward")
	got, k := vec.array(t, "obs"), 0
	for i, e := range m.eps {
		where := fmt.Sprintf("step %d slot %d", step, i)
		wantTerm, wantTrunc := false, false
		switch {
		case m.pending[i]:
			e.Reset(m.next(i))
			m.pending[i] = false
		case e.Done(): // off: the ending is repeated, with reward 0
			wantTerm, wantTrunc = m.endings[i][0], m.endings[i][1]
			if rew[i] != 0 {
				t.Errorf("%s: an ended slot has reward %v", where, rew[i])
			}
		default:
			a, _ := env.DecodeAction(acts[i])
			if _, done := e.Step(a); done {
				traj := e.Trajectory()
				wantTerm, wantTrunc = ending(traj[len(traj)-1], true)
				m.endings[i] = [2]bool{wantTerm, wantTrunc}
				if k >= len(fin) || fin[k].Slot != i {
					t.Fatalf("%s: episode ended, finished %+v", where, fin)
				}
				m.ended++
				switch m.mode {
				case autoresetSame:
					e.Observe(m.obs)
					if !slices.Equal(toF64(m.obs), vec.array(t, "final_obs")[k*w:(k+1)*w]) {
						t.Errorf("%s: final_obs differs", where)
					}
					e.Reset(m.next(i))
				case autoresetNext:
					m.pending[i] = true
				}
				k++
			}
		}
		if (term[i] != 0) != wantTerm || (trunc[i] != 0) != wantTrunc {
			t.Errorf("%s: terminated %v truncated %v, want %v %v", where, term[i], trunc[i], wantTerm, wantTrunc)
		}
		e.Observe(m.obs)
		if !slices.Equal(toF64(m.obs), got[i*w:(i+1)*w]) {
			t.Errorf("%s: observation differs from in-process play", where)
		}
	}
	if k != len(fin) {
		t.Errorf("step %d: %d episodes ended in process, the server lists %+v", step, k, fin)
	}
}

func toF64(xs []float32) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// TestVectorResetSlots resets some slots of a vector (gymnasium's reset_mask):
// those start their slot streams' next tasks, the others keep their episodes
// and steps; a mask of another length, one splitting a group or resetting
// nothing is refused naming slots.
func TestVectorResetSlots(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	const n = 4
	var vec vectorView
	ts.json("POST", "/v1/vectors", map[string]any{"n": n, "seed": 5, "split": "train"}, &vec)
	ts.json("POST", "/v1/vectors/"+vec.Vector+"/step", map[string]any{"actions": []int{0, 0, 0, 0}}, nil)
	stepsOf := func(id string) int {
		var ep struct {
			Steps int `json:"steps"`
		}
		ts.json("GET", "/v1/episodes/"+id, nil, &ep)
		return ep.Steps
	}
	var before, after vectorView
	ts.json("GET", "/v1/vectors/"+vec.Vector, nil, &before)
	slots := []bool{true, false, true, false}
	ts.json("POST", "/v1/vectors/"+vec.Vector+"/reset", map[string]any{"slots": slots}, &after)
	// A fresh vector of the same seed draws each slot's second task from the same stream.
	var again vectorView
	ts.json("POST", "/v1/vectors", map[string]any{"n": n, "seed": 5, "split": "train"}, &again)
	ts.json("POST", "/v1/vectors/"+again.Vector+"/reset", nil, &again)
	for i := range n {
		steps := stepsOf(after.Episodes[i])
		if slots[i] {
			if steps != 0 || after.Tasks[i].ID != again.Tasks[i].ID {
				t.Errorf("slot %d reset: steps %d, task %s; want 0 and its stream's next task %s", i, steps, after.Tasks[i].ID, again.Tasks[i].ID)
			}
		} else if steps != 1 || after.Tasks[i].ID != before.Tasks[i].ID {
			t.Errorf("slot %d kept: steps %d, task %s; want 1 and %s", i, steps, after.Tasks[i].ID, before.Tasks[i].ID)
		}
	}
	var grouped vectorView
	ts.json("POST", "/v1/vectors", map[string]any{"tasks": []map[string]any{{"split": "val", "index": 0}, {"split": "val", "index": 1}}, "group": 2}, &grouped)
	for _, c := range []struct {
		vector string
		slots  []bool
	}{
		{vec.Vector, []bool{true, false}},
		{vec.Vector, []bool{false, false, false, false}},
		{grouped.Vector, []bool{true, false, true, true}},
	} {
		status, _, body := ts.do("POST", "/v1/vectors/"+c.vector+"/reset", map[string]any{"slots": c.slots})
		if e := apiErr(t, body); status != 400 || e.Field != "slots" {
			t.Errorf("slots %v: %d %s, want 400 naming slots", c.slots, status, body)
		}
	}
	var ok vectorView
	ts.json("POST", "/v1/vectors/"+grouped.Vector+"/reset", map[string]any{"slots": []bool{false, false, true, true}}, &ok)
}
