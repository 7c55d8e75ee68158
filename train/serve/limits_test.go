package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
)

// TestRequestsRefusedThatJSONLetsPass: a key given twice, a null member and
// a wrong-case scheme name are each answered for what they are.
func TestRequestsRefusedThatJSONLetsPass(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{Token: "s3cret-s3cret-s3cret"})
	auth := []string{"Authorization", "bearer s3cret-s3cret-s3cret"}
	for _, c := range []struct {
		path, body, field string
	}{
		{"/v1/episodes", `{"split":"val","split":"train"}`, "split"},
		{"/v1/episodes", `{"split":null}`, "split"},
		{"/v1/episodes", `{"index":1,"observation":{"pixels":8,"pixels":16}}`, "observation.pixels"},
		{"/v1/score", `{"items":[{"task":{"index":1,"index":2},"actions":[{"op":"ANSWER","answer":"red"}]}]}`, "items[0].task.index"},
		{"/v1/score", `{"items":[{"episode":"e"},{"task":{"seed":null}}]}`, "items[1].task.seed"},
		{"/v1/score", `{"items":[{"ep\u0069sode":"e","episode":"f"}]}`, "items[0].episode"},
	} {
		status, _, b := ts.do("POST", c.path, c.body, auth...)
		if e := apiErr(t, b); status != 400 || e.Field != c.field {
			t.Errorf("%s: %d %+v, want 400 on %s", c.body, status, e, c.field)
		}
	}
	for _, h := range []string{"bearer s3cret-s3cret-s3cret", "BEARER  s3cret-s3cret-s3cret", "Bearer s3cret-s3cret-s3cret "} {
		if status, _, b := ts.do("GET", "/v1/spec", nil, "Authorization", h); status != 200 {
			t.Errorf("Authorization %q: %d %s", h, status, b)
		}
	}
	for _, h := range []string{"Basic s3cret-s3cret-s3cret", "bearers3cret-s3cret-s3cret", "bearer s3cret"} {
		if status, _, _ := ts.do("GET", "/v1/spec", nil, "Authorization", h); status != 401 {
			t.Errorf("Authorization %q: %d, want 401", h, status)
		}
	}
}

// TestFramesTheTaskLacks: view.png?frame=k and /frames/k answer a frame
// the task lacks alike.
func TestFramesTheTaskLacks(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	var ep episodeView
	ts.json("POST", "/v1/episodes", map[string]any{"split": "val", "index": 0}, &ep)
	for _, k := range []int{1, 7, -1} {
		s1, _, b1 := ts.do("GET", fmt.Sprintf("/v1/episodes/%s/view.png?frame=%d", ep.Episode, k), nil)
		s2, _, b2 := ts.do("GET", fmt.Sprintf("/v1/episodes/%s/frames/%d", ep.Episode, k), nil)
		e1, e2 := apiErr(t, b1), apiErr(t, b2)
		if s1 != 404 || s2 != 404 || e1.Field != "frame" || e2.Field != "k" || !strings.Contains(e1.Message, "has 1 frame(s)") || !strings.Contains(e2.Message, "has 1 frame(s)") {
			t.Errorf("frame %d: %d %+v and %d %+v", k, s1, e1, s2, e2)
		}
	}
}

// TestWorldFullIs503: beyond the episode cap or the memory bound, creates
// get 503 with Retry-After, naming the bound.
func TestWorldFullIs503(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{MaxEpisodes: 4})
	status, h, b := ts.do("POST", "/v1/vectors", map[string]any{"n": 5})
	if status != 503 || h.Get("Retry-After") == "" || !strings.Contains(apiErr(t, b).Message, "--max-episodes") {
		t.Errorf("a vector beyond the cap: %d %q %s", status, h.Get("Retry-After"), b)
	}
	ts.json("POST", "/v1/vectors", map[string]any{"n": 4}, nil)
	if status, _, _ := ts.do("POST", "/v1/episodes", nil); status != 503 {
		t.Errorf("an episode beyond the cap: %d", status)
	}
	runtime.GC() // the live heap is measured at a collection
	small := newTestServer(t, smoke(t), Options{MaxMemory: int64(heapLive()) + episodeBytes/2})
	status, h, b = small.do("POST", "/v1/episodes", nil)
	if status != 503 || h.Get("Retry-After") == "" || !strings.Contains(apiErr(t, b).Message, "memory is full") {
		t.Errorf("an episode beyond the memory bound: %d %q %s", status, h.Get("Retry-After"), b)
	}
	if n, _ := small.srv.Live(); n != 0 {
		t.Errorf("%d episodes live after a refused create", n)
	}
}

// TestScoreWorkIsBounded: a score request that cannot get its share of the
// score work within ScoreWait gets 503 with Retry-After, and succeeds once
// the work is done.
func TestScoreWorkIsBounded(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{ScoreWait: 20 * time.Millisecond})
	item := expertItem(t, ts, 0)
	delete(item, "answer")
	body := map[string]any{"items": []any{item}}
	if err := ts.srv.scoreSem.Acquire(context.Background(), ts.srv.scoreCap); err != nil {
		t.Fatal(err)
	}
	status, h, b := ts.do("POST", "/v1/score", body)
	if status != 503 || h.Get("Retry-After") != "1" || !strings.Contains(apiErr(t, b).Message, "score work") {
		t.Errorf("score while the work is full: %d %q %s", status, h.Get("Retry-After"), b)
	}
	ts.srv.scoreSem.Release(ts.srv.scoreCap)
	ts.json("POST", "/v1/score", body, nil)
}

// expertItem is the expert's trajectory of training task i as a score item.
func expertItem(t *testing.T, ts *testServer, i int) map[string]any {
	var ex expertView
	ts.json("POST", "/v1/expert", map[string]any{"split": "train", "index": i}, &ex)
	var acts []map[string]any
	for _, a := range ex.Actions {
		acts = append(acts, map[string]any{"index": a.Index})
	}
	return map[string]any{"task": map[string]any{"split": "train", "index": i}, "actions": acts, "answer": *ex.Actions[len(ex.Actions)-1].Answer}
}

// TestLoneTrajectoryTotalIsItsWeightedRaw: scored alone, a right and a
// wrong episode get different totals, each the stage-weighted sum of its
// raw components; scored together, they are z-scored across the request,
// and every answer says which.
func TestLoneTrajectoryTotalIsItsWeightedRaw(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	right := expertItem(t, ts, 0)
	wrong := expertItem(t, ts, 0)
	other := "cross"
	if right["answer"] == other {
		other = "red"
	}
	acts := slices.Clone(right["actions"].([]map[string]any))
	acts[len(acts)-1] = map[string]any{"op": "ANSWER", "answer": other}
	wrong["actions"] = acts
	delete(right, "answer")
	delete(wrong, "answer")
	var totals []float64
	for _, it := range []map[string]any{right, wrong} {
		var res scoreResult
		ts.json("POST", "/v1/score", map[string]any{"items": []any{it}}, &res)
		item := res.Items[0]
		want := 0.0
		for _, n := range res.Names {
			w, weighted := res.Weights[n]
			if !weighted {
				w = 1 // penalty and cost are added as they are
			}
			want += w * item.Raw[n]
		}
		if res.Normalization.Mode != "none" || item.Total != want {
			t.Errorf("alone: total %v, normalization %+v; want %v (the weighted raw sum)", item.Total, res.Normalization, want)
		}
		totals = append(totals, item.Total)
	}
	if totals[0] <= totals[1] {
		t.Errorf("alone, the right episode's total %v is not above the wrong one's %v", totals[0], totals[1])
	}
	var res scoreResult
	ts.json("POST", "/v1/score", map[string]any{"items": []any{right, wrong}}, &res)
	if res.Normalization.Mode != "batch" || res.Normalization.Trajectories != 2 || res.Items[0].Norm["final"] <= 0 || res.Items[1].Norm["final"] >= 0 {
		t.Errorf("together: normalization %+v, norm %v and %v", res.Normalization, res.Items[0].Norm, res.Items[1].Norm)
	}
}

// TestExpertsCarryTheirObservations: the observations POST /v1/experts
// sends along each demonstration are those of the expert's actions played
// in process, and its CoTA records have a difficulty bucket.
func TestExpertsCarryTheirObservations(t *testing.T) {
	cfg := smoke(t)
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, cfg, Options{})
	var tasks []map[string]any
	for i := range 7 {
		tasks = append(tasks, map[string]any{"split": "train", "index": i})
	}
	f := ts.call("POST", "/v1/experts", map[string]any{"tasks": tasks, "observation": map[string]any{"encoding": "npy"}})
	var experts []expertView
	f.get(t, "experts", &experts)
	obs, mask := f.array(t, "obs"), f.array(t, "action_mask")
	w, nA := obsWidth(), env.NumActions()
	row := make([]float32, w)
	m := make([]bool, nA)
	for i, ex := range experts {
		task := env.Generate(ec, env.Train, i)
		acts := env.Solve(task)
		if ex.Rows == nil || ex.Rows[1]-ex.Rows[0] != len(acts) || len(ex.Actions) != len(acts) {
			t.Fatalf("task %d: rows %v for %d actions", i, ex.Rows, len(acts))
		}
		if !slices.Contains(env.Buckets, ex.Sample.Difficulty) {
			t.Errorf("task %d: difficulty %q", i, ex.Sample.Difficulty)
		}
		e := env.NewEpisode(ec)
		e.Reset(task)
		for k, a := range acts {
			r := ex.Rows[0] + k
			e.Observe(row)
			e.ActionMask(m)
			if !slices.Equal(toF64(row), obs[r*w:(r+1)*w]) {
				t.Errorf("task %d step %d: observation differs", i, k)
			}
			for j, ok := range m {
				if ok != (mask[r*nA+j] != 0) {
					t.Errorf("task %d step %d: mask differs at %d", i, k, j)
					break
				}
			}
			e.Step(a)
		}
	}
	// One task through /v1/expert answers the same rows.
	one := ts.call("POST", "/v1/expert", map[string]any{"split": "train", "index": 3, "observation": map[string]any{"encoding": "npy"}})
	r := experts[3].Rows
	if !slices.Equal(one.array(t, "obs"), obs[r[0]*w:r[1]*w]) {
		t.Error("POST /v1/expert's observations differ from POST /v1/experts'")
	}
	_, _, b := ts.do("POST", "/v1/expert", map[string]any{"split": "train", "index": 3})
	var plain map[string]json.RawMessage
	json.Unmarshal(b, &plain)
	if _, ok := plain["obs"]; ok || plain["sample"] == nil {
		t.Errorf("without observation, /v1/expert answers %s", b)
	}
}

// TestEpisodeBytesCoversALiveEpisode: the memory admission's estimate of a
// live episode (of the smoke world's mix of families) is not below what one
// holds.
func TestEpisodeBytesCoversALiveEpisode(t *testing.T) {
	const n = 256
	s, err := New(smoke(t), Options{MaxEpisodes: n})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runtime.GC()
	before := heapLive()
	for i := range n {
		if err := s.admit(1); err != nil {
			t.Fatal(err)
		}
		e := s.newEpisode(s.task(resolvedTask{split: env.Train, index: i}), defaultObs, "")
		s.episodes.insert(e.id, e)
	}
	runtime.GC()
	per := (int64(heapLive()) - int64(before)) / n
	if per > episodeBytes {
		t.Errorf("a live episode holds %d KiB, above episodeBytes = %d KiB", per>>10, episodeBytes>>10)
	}
	t.Logf("a live episode holds %d KiB (episodeBytes %d KiB)", per>>10, episodeBytes>>10)
}
