package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
)

// sameResult compares a served result with the env's own, field by field.
func sameResult(got env.StepResult, want env.Result) error {
	misuse := ""
	if want.Misuse != env.MisuseNone {
		misuse = want.Misuse.String()
	}
	rect := func(r image.Rectangle) [4]int { return [4]int{r.Min.X, r.Min.Y, r.Max.X, r.Max.Y} }
	var bbox, centre []int
	if got.BBox != nil {
		bbox = got.BBox[:]
	}
	if got.Centre != nil {
		centre = got.Centre[:]
	}
	var wantBox, wantCentre []int
	if !want.BBox.Empty() {
		b := rect(want.BBox)
		wantBox = b[:]
	}
	if want.Centre != (image.Point{}) {
		wantCentre = []int{want.Centre.X, want.Centre.Y}
	}
	var track [][4]int
	for _, r := range want.Track {
		track = append(track, rect(r))
	}
	if got.Misuse != misuse || got.Summary != want.Summary || got.ObjectID != want.ObjectID || got.Area != want.Area ||
		got.Colour != want.Colour || got.Shape != want.Shape || got.Text != want.Text || got.Confidence != want.Confidence ||
		!reflect.DeepEqual(bbox, wantBox) || !reflect.DeepEqual(centre, wantCentre) || !reflect.DeepEqual(got.Track, track) {
		return fmt.Errorf("served %+v, in process %+v", got, want)
	}
	return nil
}

// TestExpertEpisodesMatchInProcess plays the expert through the server on
// tasks of every family and compares every step with the same episode played
// in process.
func TestExpertEpisodesMatchInProcess(t *testing.T) {
	cfg := smoke(t)
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, cfg, Options{})
	const n = 18 // three tasks of each of the six families
	for i := range n {
		task := env.Generate(ec, env.Train, i)
		local := env.NewEpisode(ec)
		acts := env.SolveIn(local, task)
		want := local.Trajectory()
		var ep episodeView
		ts.json("POST", "/v1/episodes", map[string]any{"split": "train", "index": i}, &ep)
		if ep.Task.Question != task.Question || ep.Task.Family != task.Family.String() || ep.Task.Seed != task.Seed || ep.Done || ep.Steps != 0 {
			t.Fatalf("task %d: episode %+v, want %s %q", i, ep, task.Family, task.Question)
		}
		if ep.Task.GroundTruth != "" || ep.Finish != nil {
			t.Fatalf("task %d: a live episode reveals its ground truth: %+v", i, ep)
		}
		var ex expertView
		ts.json("POST", "/v1/expert", map[string]any{"split": "train", "index": i}, &ex)
		if len(ex.Actions) != len(acts) || ex.Task.GroundTruth != task.Answer {
			t.Fatalf("task %d: expert plan %+v, in process %v", i, ex, acts)
		}
		for k, a := range ex.Actions {
			if got := (env.Action{Op: must(env.ParseOp(a.Op)), X: deref(a.X), Y: deref(a.Y), Answer: deref(a.Answer)}); got != acts[k] {
				t.Fatalf("task %d: expert action %d %+v, in process %+v", i, k, got, acts[k])
			}
			var st stepView
			ts.json("POST", "/v1/episodes/"+ep.Episode+"/step", actionSpec{Op: &a.Op, X: a.X, Y: a.Y, Answer: a.Answer}, &st)
			if err := sameResult(st.Result, want[k].Result); err != nil {
				t.Fatalf("task %d step %d: %v", i, k+1, err)
			}
			if st.Action != acts[k].Op.String() || st.Index != want[k].Index || st.CutOff != want[k].Result.CutOff ||
				st.Step != k+1 || st.Done != (k == len(acts)-1) {
				t.Fatalf("task %d step %d: %+v", i, k+1, st)
			}
		}
		var traj trajectoryView
		ts.json("GET", "/v1/episodes/"+ep.Episode+"/trajectory", nil, &traj)
		var cota env.Sample
		ts.json("GET", "/v1/episodes/"+ep.Episode+"/trajectory?format=cota", nil, &cota)
		if cota.SampleID != task.ID || cota.Question != task.Question || cota.GroundTruth != task.Answer || cota.Answer != task.Answer ||
			cota.Split != "train" || cota.Index != i || cota.Seed != task.Seed || len(cota.Trajectory) != len(traj.Steps) {
			t.Fatalf("task %d: CoTA record %+v", i, cota)
		}
		for k, st := range traj.Steps {
			if !reflect.DeepEqual(cota.Trajectory[k], st.TrajStep) || !reflect.DeepEqual(ex.Sample.Trajectory[k], st.TrajStep) {
				t.Fatalf("task %d: step %d of the trajectory, the CoTA record and the expert's record differ", i, k+1)
			}
		}
		var fin episodeView
		ts.json("GET", "/v1/episodes/"+ep.Episode, nil, &fin)
		if !fin.Done || fin.Finish == nil || !fin.Finish.Correct || fin.Finish.GroundTruth != task.Answer || *fin.Finish.Answer != task.Answer {
			t.Fatalf("task %d: finished episode %+v", i, fin)
		}
		var res struct {
			Results []env.StepResult `json:"results"`
		}
		ts.json("GET", "/v1/episodes/"+ep.Episode+"/results", nil, &res)
		for k, r := range res.Results {
			if err := sameResult(r, want[k].Result); err != nil {
				t.Fatalf("task %d: result %d: %v", i, k, err)
			}
		}
		if status, _, body := ts.do("POST", "/v1/episodes/"+ep.Episode+"/step", `{"op":"READ_TEXT"}`); status != http.StatusConflict {
			t.Fatalf("step after the end: %d %s", status, body)
		}
		ts.json("DELETE", "/v1/episodes/"+ep.Episode, nil, nil)
	}
	if eps, _ := ts.srv.Live(); eps != 0 {
		t.Errorf("%d episodes live after closing all", eps)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func TestTaskSpecs(t *testing.T) {
	cfg := smoke(t)
	ts := newTestServer(t, cfg, Options{})
	create := func(body any) (int, episodeView, apiError) {
		status, _, b := ts.do("POST", "/v1/episodes", body)
		var ev episodeView
		if status == http.StatusCreated {
			json.Unmarshal(b, &ev)
			return status, ev, apiError{}
		}
		return status, ev, apiErr(t, b)
	}
	// By seed: the same task as by split and index.
	_, a, _ := create(map[string]any{"split": "test", "index": 7})
	_, b, _ := create(map[string]any{"seed": a.Task.Seed})
	if a.Task != b.Task {
		t.Errorf("by seed %+v, by index %+v", b.Task, a.Task)
	}
	// Random tasks of a family are of that family and of the split asked.
	for range 10 {
		status, ev, _ := create(map[string]any{"family": "temporal_tracking", "split": "val"})
		if status != http.StatusCreated || ev.Task.Family != "temporal_tracking" || ev.Task.Split != "val" || ev.Task.Frames != cfg.Env.Frames {
			t.Fatalf("random tracking task: %d %+v", status, ev.Task)
		}
	}
	if status, ev, _ := create(nil); status != http.StatusCreated || ev.Task.Split != "train" {
		t.Fatalf("empty body: %d %+v", status, ev)
	}
	bad := []struct {
		body  string
		field string
		msg   string
	}{
		{`{"split":"dev"}`, "split", `unknown split "dev"`},
		{`{"index":-1}`, "index", "must be in [0, 2^40)"},
		{`{"index":"3"}`, "index", "must be an integer, got string"},
		{`{"index":1.5}`, "index", "must be an integer"},
		{`{"index":1,"seed":2}`, "seed", "not both"},
		{`{"seed":4398046511104}`, "seed", "no task seed"},
		{`{"seed":1099511627776,"split":"train"}`, "split", "belongs to split val"},
		{`{"family":"colour"}`, "family", `unknown task family "colour"`},
		{`{"index":0,"family":"text_extraction"}`, "family", "is attribute_recognition, not text_extraction"},
		{`{"splitt":"val"}`, "splitt", "unknown field"},
		{`{"split":"val"`, "body", "truncated"},
		{`[1,2]`, "body", "must be an object"},
		{`{"split":"val"} {}`, "body", "trailing data"},
	}
	for _, c := range bad {
		status, _, e := create(c.body)
		if status != http.StatusBadRequest || e.Field != c.field || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s: %d %+v, want 400 field %s %q", c.body, status, e, c.field, c.msg)
		}
	}
	// A family left out of env.families is refused by name.
	cfg2 := smoke(t)
	cfg2.Env.Families = []string{"object_counting"}
	ts2 := newTestServer(t, cfg2, Options{})
	status, _, body := ts2.do("POST", "/v1/episodes", `{"family":"text_extraction"}`)
	if e := apiErr(t, body); status != 400 || e.Field != "family" || !strings.Contains(e.Message, "not among this server's env.families") {
		t.Errorf("family outside the config: %d %+v", status, e)
	}
}

func TestStepValidationNamesTheField(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	var ep episodeView
	ts.json("POST", "/v1/episodes", `{"split":"val","index":0}`, &ep)
	cases := []struct {
		body  string
		field string
		msg   string
	}{
		{``, "body", "empty"},
		{`{}`, "op", "required"},
		{`{"op":"SEGMENT_OBJECT_AT","y":3}`, "x", "required for SEGMENT_OBJECT_AT"},
		{`{"op":"SEGMENT_OBJECT_AT","x":3}`, "y", "required"},
		{`{"op":"SEGMENT_OBJECT_AT","x":"3","y":3}`, "x", "must be an integer, got string"},
		{`{"op":"SEGMENT_OBJECT_AT","x":1e30,"y":3}`, "x", "must be an integer"},
		{`{"op":"SEGMENT_OBJECT_AT","x":3,"y":3,"answer":"red"}`, "answer", "takes x and y only"},
		{`{"op":"ANSWER"}`, "answer", "required for ANSWER"},
		{`{"op":"ANSWER","answer":"red","x":1}`, "x", "takes an answer only"},
		{`{"op":"ANSWER","answer":"` + strings.Repeat("a", 65) + `"}`, "answer", "longer than 64"},
		{`{"op":"ZOOM_IN","x":1}`, "x", "takes no arguments"},
		{`{"op":"zoom_in"}`, "op", "unknown operation"},
		{`{"op":7}`, "op", "must be a string, got number"},
		{`{"index":-1}`, "index", "must be in [0,"},
		{`{"index":100000}`, "index", "must be in [0,"},
		{`{"index":3,"op":"READ_TEXT"}`, "index", "not both"},
		{`{"index":3,"x":1}`, "index", "drop x, y and answer"},
		{`{"op":"READ_TEXT","extra":1}`, "extra", "unknown field"},
		{`{"op":"READ_TEXT"`, "body", "truncated"},
		{`{"op":"READ_TEXT"}x`, "body", "trailing"},
		{`nul`, "body", "truncated"},
		{`{"op":READ_TEXT}`, "body", "invalid JSON at byte 7"},
	}
	for _, c := range cases {
		status, _, body := ts.do("POST", "/v1/episodes/"+ep.Episode+"/step", c.body)
		e := apiErr(t, body)
		if status != http.StatusBadRequest || e.Field != c.field || !strings.Contains(e.Message, c.msg) || !strings.HasPrefix(e.Message, c.field+": ") {
			t.Errorf("%s: %d %+v, want 400 field %q with %q", c.body, status, e, c.field, c.msg)
		}
	}
	// Nothing was recorded.
	var now episodeView
	ts.json("GET", "/v1/episodes/"+ep.Episode, nil, &now)
	if now.Steps != 0 {
		t.Errorf("bad requests recorded %d steps", now.Steps)
	}
	// An agent's mistakes are misuses, recorded as a policy's would be.
	var st stepView
	ts.json("POST", "/v1/episodes/"+ep.Episode+"/step", `{"op":"SEGMENT_OBJECT_AT","x":500,"y":-3}`, &st)
	if st.Result.Misuse != "out_of_range" || st.Index != -1 {
		t.Errorf("segment outside the view: %+v", st)
	}
	ts.json("POST", "/v1/episodes/"+ep.Episode+"/step", `{"op":"ANSWER","answer":"maybe"}`, &st)
	if st.Result.Misuse != "bad_answer" || !st.Done || st.Finish == nil || st.Finish.Correct {
		t.Errorf("answer outside the vocabulary: %+v", st)
	}
	// Unknown ids, paths and methods are JSON errors too.
	for _, c := range []struct {
		method, path string
		status       int
		field        string
	}{
		{"GET", "/v1/episodes/ep-nope", 404, "id"},
		{"POST", "/v1/episodes/ep-nope/step", 404, "id"},
		{"GET", "/v1/nothing", 404, "path"},
		{"GET", "/v1/episodes/" + ep.Episode + "/step", 405, "method"},
		{"PUT", "/v1/episodes", 405, "method"},
	} {
		body := ""
		if c.method == "POST" {
			body = `{"op":"READ_TEXT"}`
		}
		status, h, b := ts.do(c.method, c.path, body)
		if e := apiErr(t, b); status != c.status || e.Field != c.field || h.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %+v %s", c.method, c.path, status, e, h.Get("Content-Type"))
		}
	}
}

// decodePNG decodes a served PNG to RGB bytes.
func decodePNG(t *testing.T, b []byte) (int, []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	r := img.Bounds()
	out := make([]byte, 0, r.Dx()*r.Dy()*3)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c, g, bb, a := img.At(x, y).RGBA()
			if a != 0xffff {
				t.Fatalf("pixel (%d,%d) not opaque", x, y)
			}
			out = append(out, byte(c>>8), byte(g>>8), byte(bb>>8))
		}
	}
	return r.Dx(), out
}

// TestImagesAreTheTasksPixels checks the frames against the task's own
// pixels and the view against the region the episode reports.
func TestImagesAreTheTasksPixels(t *testing.T) {
	cfg := smoke(t)
	ec, _ := setup.EnvConfig(cfg)
	ts := newTestServer(t, cfg, Options{})
	// Task 1 is text_extraction: the expert zooms, so the view changes.
	task := env.Generate(ec, env.Val, 1)
	var ep episodeView
	ts.json("POST", "/v1/episodes", map[string]any{"split": "val", "index": 1}, &ep)
	status, h, b := ts.do("GET", "/v1/episodes/"+ep.Episode+"/frames/0.png", nil)
	if status != 200 || h.Get("Content-Type") != "image/png" {
		t.Fatalf("frame: %d %s", status, b)
	}
	if side, rgb := decodePNG(t, b); side != env.SourceSize || !bytes.Equal(rgb, task.RGB(0, env.SourceSize, env.SourceSize)) {
		t.Errorf("frame 0 is not the task's source frame")
	}
	// The full view is the task's frame box-filtered to ViewSize, as the env sees it.
	_, _, b = ts.do("GET", "/v1/episodes/"+ep.Episode+"/view.png", nil)
	if side, rgb := decodePNG(t, b); side != env.ViewSize || !bytes.Equal(rgb, task.RGB(0, env.ViewSize, env.ViewSize)) {
		t.Errorf("full view is not the frame at %d pixels", env.ViewSize)
	}
	for _, a := range env.Solve(task)[:2] { // SEGMENT, ZOOM_IN
		spec := actionSpec{Index: new(int)}
		*spec.Index, _ = env.EncodeAction(a)
		ts.json("POST", "/v1/episodes/"+ep.Episode+"/step", spec, nil)
	}
	ts.json("GET", "/v1/episodes/"+ep.Episode, nil, &ep)
	reg := image.Rect(ep.Region[0], ep.Region[1], ep.Region[2], ep.Region[3])
	if reg == fullView || reg.Empty() {
		t.Fatalf("region after ZOOM_IN: %v", reg)
	}
	status, h, b = ts.do("GET", "/v1/episodes/"+ep.Episode+"/view.png?size=200", nil)
	if status != 200 || h.Get("X-Pixelis-Region") != fmt.Sprintf("%d,%d,%d,%d", reg.Min.X, reg.Min.Y, reg.Max.X, reg.Max.Y) {
		t.Fatalf("view: %d region header %q", status, h.Get("X-Pixelis-Region"))
	}
	side, rgb := decodePNG(t, b)
	if side != 200 {
		t.Fatalf("view side %d", side)
	}
	// Enlarged beyond the region, every view pixel is one source pixel of it.
	src := task.Frames[0]
	for _, p := range []image.Point{{0, 0}, {199, 199}, {57, 123}} {
		sx, sy := reg.Min.X+p.X*reg.Dx()/200, reg.Min.Y+p.Y*reg.Dy()/200
		o, d := src.PixOffset(sx, sy), (p.Y*200+p.X)*3
		if !bytes.Equal(rgb[d:d+3], src.Pix[o:o+3]) {
			t.Errorf("view pixel %v = %v, source pixel (%d,%d) = %v", p, rgb[d:d+3], sx, sy, src.Pix[o:o+3])
		}
	}
	for _, c := range []struct {
		path   string
		status int
		field  string
	}{
		{"/view.png?size=4", 400, "size"},
		{"/view.png?size=big", 400, "size"},
		{"/view.png?frame=1", 404, "frame"},
		{"/frames/1.png", 404, "k"},
		{"/frames/x.png", 400, "k"},
		{"/trajectory?format=xml", 400, "format"},
		{"/trajectory?format=cota", 403, "split"}, // a validation task's record
	} {
		status, _, b := ts.do("GET", "/v1/episodes/"+ep.Episode+c.path, nil)
		if e := apiErr(t, b); status != c.status || e.Field != c.field {
			t.Errorf("%s: %d %+v, want %d on %s", c.path, status, e, c.status, c.field)
		}
	}
	// A video task has every frame.
	var vid episodeView
	ts.json("POST", "/v1/episodes", map[string]any{"family": "temporal_tracking"}, &vid)
	vt := env.Generate(ec, env.Train, vid.Task.Index)
	for k := range vt.Frames {
		_, _, b := ts.do("GET", fmt.Sprintf("/v1/episodes/%s/frames/%d", vid.Episode, k), nil)
		if _, rgb := decodePNG(t, b); !bytes.Equal(rgb, vt.RGB(k, env.SourceSize, env.SourceSize)) {
			t.Errorf("video frame %d differs", k)
		}
	}
}

// inProcess plays the expert on tasks in process, with its own loop, and
// returns the trajectories the reward sees.
func inProcess(t *testing.T, ec env.Config, split env.Split, idx []int, mutate func(i int, acts []env.Action) []env.Action) []*reward.Trajectory {
	t.Helper()
	var out []*reward.Trajectory
	for i, ix := range idx {
		task := env.Generate(ec, split, ix)
		acts := env.Solve(task)
		if mutate != nil {
			acts = mutate(i, acts)
		}
		e := env.NewEpisode(ec)
		e.Reset(task)
		var obs [][]float32
		for _, a := range acts {
			o := make([]float32, env.ObsDim)
			e.Observe(o)
			obs = append(obs, o)
			e.Step(a)
		}
		steps := e.Trajectory()
		for k := range steps {
			steps[k].Obs = obs[k]
		}
		final := make([]float32, env.ObsDim)
		e.Observe(final)
		_, answered := e.Answer()
		out = append(out, &reward.Trajectory{Steps: steps, FinalObs: final, Answered: answered, Correct: e.Correct(), Frames: len(task.Frames), Group: i})
	}
	return out
}

// TestScoresMatchInProcess compares the server's rewards with an
// orchestrator built in process, for the stateless endpoint and for two
// batches through one scorer.
func TestScoresMatchInProcess(t *testing.T) {
	for _, mode := range []string{"icm", "rapr"} {
		t.Run(mode, func(t *testing.T) {
			cfg := smoke(t)
			cfg.Reward.Curiosity.Mode = mode
			cfg.Env.MaxSteps = 8 // trajectory 3's eight actions are a cut-off
			ec, _ := setup.EnvConfig(cfg)
			ts := newTestServer(t, cfg, Options{})
			idx := []int{0, 1, 2, 3, 4, 5, 6, 7}
			// Some trajectories go wrong: a wrong answer, a misuse, a cut-off.
			mutate := func(i int, acts []env.Action) []env.Action {
				switch i {
				case 1:
					acts[len(acts)-1].Answer = "cross"
				case 2:
					acts = append([]env.Action{{Op: env.OpProperties}}, acts...)
				case 3: // alternating calls, none an immediate repeat, until the step limit
					acts = nil
					for k := 0; len(acts) < ec.MaxSteps; k++ {
						acts = append(acts, env.Action{Op: env.OpSegment, X: 1 + 8*k, Y: 1}, env.Action{Op: env.OpReadText})
					}
					acts = acts[:ec.MaxSteps]
				}
				return acts
			}
			want := inProcess(t, ec, env.Val, idx, mutate)
			items := scoreItems(t, ts, ec, idx, mutate)
			check := func(name string, got scoreResult, orch *reward.Orchestrator) {
				t.Helper()
				checkScores(t, name, got, orch, want)
			}
			fresh := func() *reward.Orchestrator {
				o, err := setup.Orchestrator(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return o
			}
			var got scoreResult
			ts.json("POST", "/v1/score", scoreRequest{Items: items}, &got)
			check("stateless", got, fresh())
			// The same request again gives the same answer.
			var again scoreResult
			ts.json("POST", "/v1/score", scoreRequest{Items: items}, &again)
			if !reflect.DeepEqual(got, again) {
				t.Errorf("stateless scoring is not a function of the request")
			}
			// A scorer carries its state over, as a run's orchestrator does.
			stage := cfg.Curriculum.Stages[2].Name
			var sc scorerView
			ts.json("POST", "/v1/scorers", map[string]any{"stage": stage}, &sc)
			if sc.Weights[reward.NameCuriosity] != cfg.Curriculum.Stages[2].Weights[reward.NameCuriosity] {
				t.Fatalf("scorer weights %v", sc.Weights)
			}
			orch := fresh()
			orch.SetWeights(sc.Weights)
			for batch := 1; batch <= 2; batch++ {
				var r scoreResult
				ts.json("POST", "/v1/scorers/"+sc.Scorer+"/score", scoreRequest{Items: items}, &r)
				if r.Batch != batch || r.Scorer != sc.Scorer {
					t.Fatalf("batch %d: %+v", batch, r)
				}
				check(fmt.Sprintf("scorer batch %d", batch), r, orch)
			}
			if mode == "icm" {
				var r1, r2 scoreResult // the ICM learned: the curiosity of a repeated batch changes
				ts.json("POST", "/v1/scorers/"+sc.Scorer+"/score", scoreRequest{Items: items[:1]}, &r1)
				ts.json("POST", "/v1/scorers/"+sc.Scorer+"/score", scoreRequest{Items: items[:1]}, &r2)
				if r1.Items[0].Raw[reward.NameCuriosity] == r2.Items[0].Raw[reward.NameCuriosity] {
					t.Errorf("ICM curiosity did not change between batches of a scorer")
				}
			}
			ts.json("DELETE", "/v1/scorers/"+sc.Scorer, nil, nil)
			if status, _, _ := ts.do("POST", "/v1/scorers/"+sc.Scorer+"/score", scoreRequest{Items: items}); status != 404 {
				t.Errorf("score on a closed scorer: %d", status)
			}
		})
	}
}

// scoreItems are the trajectories of idx (each mutated) as /v1/score items: the even ones as live
// episodes played on ts, the odd ones as a task and its actions.
func scoreItems(t *testing.T, ts *testServer, ec env.Config, idx []int, mutate func(i int, acts []env.Action) []env.Action) []scoreItem {
	t.Helper()
	var items []scoreItem
	for i, ix := range idx {
		task := env.Generate(ec, env.Val, ix)
		acts := mutate(i, env.Solve(task))
		var specs []actionSpec
		for _, a := range acts {
			js := actionOut(a)
			specs = append(specs, actionSpec{Op: &js.Op, X: js.X, Y: js.Y, Answer: js.Answer})
		}
		if i%2 == 0 {
			var ep episodeView
			ts.json("POST", "/v1/episodes", map[string]any{"split": "val", "index": ix}, &ep)
			for _, s := range specs {
				ts.json("POST", "/v1/episodes/"+ep.Episode+"/step", s, nil)
			}
			id := ep.Episode
			items = append(items, scoreItem{Episode: &id})
		} else {
			split, index := "val", int64(ix)
			items = append(items, scoreItem{Task: &taskSpec{Split: &split, Index: &index}, Actions: specs})
		}
	}
	return items
}

// checkScores checks a served score against orch's for the in-process trajectories want: the
// components, every item's totals and steps, and the metrics.
func checkScores(t *testing.T, name string, got scoreResult, orch *reward.Orchestrator, want []*reward.Trajectory) {
	t.Helper()
	orch.BeginStep()
	b := orch.Compute(want)
	if !reflect.DeepEqual(got.Names, b.Names) {
		t.Fatalf("%s: names %v, want %v", name, got.Names, b.Names)
	}
	for i, tr := range b.Trajs {
		g := got.Items[i]
		if g.Total != tr.Total || !reflect.DeepEqual(g.Raw, tr.Raw) || !reflect.DeepEqual(g.Norm, tr.Norm) || !reflect.DeepEqual(g.PerStep, tr.Steps) {
			t.Fatalf("%s item %d:\nserved  total %v raw %v norm %v\nprocess total %v raw %v norm %v", name, i, g.Total, g.Raw, g.Norm, tr.Total, tr.Raw, tr.Norm)
		}
		if g.Correct != want[i].Correct || g.Answered != want[i].Answered || g.Group != i || g.Steps != len(want[i].Steps) {
			t.Fatalf("%s item %d: %+v", name, i, g)
		}
	}
	if !reflect.DeepEqual(got.Metrics, orch.Metrics(b)) {
		t.Errorf("%s: metrics differ", name)
	}
}

func TestScoreValidation(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	var live episodeView
	ts.json("POST", "/v1/episodes", `{"split":"val","index":0}`, &live)
	cases := []struct {
		body   string
		status int
		field  string
		msg    string
	}{
		{`{}`, 400, "items", "at least one"},
		{`{"items":[{}]}`, 400, "items[0].episode", "required"},
		{`{"items":[{"episode":"ep-x"}]}`, 404, "items[0].episode", "no live episode"},
		{`{"items":[{"episode":"` + live.Episode + `"}]}`, 409, "items[0].episode", "not finished"},
		{`{"items":[{"task":{"split":"val"},"actions":[{"op":"READ_TEXT"}]}]}`, 400, "items[0].task", "index or seed required"},
		{`{"items":[{"task":{"split":"val","index":0}}]}`, 400, "items[0].actions", "required with task"},
		{`{"items":[{"task":{"split":"val","index":0},"actions":[{"op":"READ_TEXT"}]}]}`, 400, "items[0].actions", "not finished"},
		{`{"items":[{"task":{"split":"val","index":0},"actions":[{"op":"ANSWER","answer":"red"},{"op":"READ_TEXT"}]}]}`, 400, "items[0].actions[1]", "ended at step 1"},
		{`{"items":[{"task":{"split":"val","index":0},"actions":[{"op":"ANSWER","answer":"red"}]},{"task":{"split":"val","index":0},"actions":[{"op":"SEGMENT_OBJECT_AT","x":1}]}]}`, 400, "items[1].actions[0].y", "required"},
		{`{"items":[{"task":{"split":"vall","index":0},"actions":[{"op":"ANSWER","answer":"red"}]}]}`, 400, "items[0].task.split", "unknown split"},
		{`{"items":[{"task":{"split":"val","index":0},"actions":[{"op":"ANSWER","answer":"red"}],"group":1},{"task":{"split":"val","index":0},"actions":[{"op":"ANSWER","answer":"red"}]}]}`, 400, "items[1].group", "every item or for none"},
		{`{"items":[{"episode":"x","task":{"index":0}}]}`, 400, "items[0].episode", "not both"},
		{`{"items":[{"task":{"split":"val","index":0},"actions":[{"op":"ANSWER","answer":"red"}]}],"weights":{"penalty":1}}`, 400, "weights.penalty", "not a weighted component"},
		{`{"items":[{"task":{"split":"val","index":0},"actions":[{"op":"ANSWER","answer":"red"}]}],"stage":"Phase9"}`, 400, "stage", "no stage"},
		{`{"items":[{"task":{"split":"val","index":0},"actions":[{"op":"ANSWER","answer":"red"}]}],"weights":{"final":"1"}}`, 400, "weights", "must be a number"},
		{`{"items":{}}`, 400, "items", "must be an array"},
	}
	for _, c := range cases {
		status, _, body := ts.do("POST", "/v1/score", c.body)
		e := apiErr(t, body)
		if status != c.status || e.Field != c.field || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s:\n %d %+v, want %d field %s %q", c.body, status, e, c.status, c.field, c.msg)
		}
	}
	big := `{"items":[` + strings.Repeat(`{"episode":"x"},`, maxScoreItems) + `{"episode":"x"}]}`
	if status, _, body := ts.do("POST", "/v1/score", big); status != 400 || apiErr(t, body).Field != "items" {
		t.Errorf("too many items: %d %s", status, body)
	}
	huge := `{"items":[{"episode":"` + strings.Repeat("x", maxScoreBody) + `"}]}`
	if status, _, body := ts.do("POST", "/v1/score", huge); status != http.StatusRequestEntityTooLarge || apiErr(t, body).Field != "body" {
		t.Errorf("oversized body: %d %.200s", status, body)
	}
}

func TestEpisodeCapAndIdleTimeout(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	ts := newTestServer(t, smoke(t), Options{MaxEpisodes: 3, MaxScorers: 1, IdleTimeout: time.Hour, Now: clock})
	var ids []string
	for i := range 3 {
		var ep episodeView
		ts.json("POST", "/v1/episodes", map[string]any{"index": i}, &ep)
		ids = append(ids, ep.Episode)
		now.Add(int64(time.Minute))
	}
	status, h, body := ts.do("POST", "/v1/episodes", nil)
	e := apiErr(t, body)
	if status != http.StatusServiceUnavailable || !strings.Contains(e.Message, "3 live episodes") || !strings.Contains(e.Message, "--max-episodes") {
		t.Fatalf("over the cap: %d %+v", status, e)
	}
	// The oldest was last used 3 minutes ago: it expires in 57 minutes.
	if h.Get("Retry-After") != "3420" {
		t.Errorf("Retry-After %q, want 3420", h.Get("Retry-After"))
	}
	ts.json("DELETE", "/v1/episodes/"+ids[0], nil, nil)
	var ep episodeView
	ts.json("POST", "/v1/episodes", nil, &ep)
	ids[0] = ep.Episode
	// Using an episode keeps it alive; the others expire.
	now.Add(int64(50 * time.Minute))
	ts.json("GET", "/v1/episodes/"+ids[1], nil, nil)
	now.Add(int64(20 * time.Minute))
	ts.srv.expire()
	if eps, _ := ts.srv.Live(); eps != 1 {
		t.Fatalf("%d live after expiry, want 1", eps)
	}
	if status, _, body := ts.do("GET", "/v1/episodes/"+ids[2], nil); status != 404 || !strings.Contains(apiErr(t, body).Message, "idle for more than 1h0m0s") {
		t.Errorf("expired episode: %d %s", status, body)
	}
	ts.json("GET", "/v1/episodes/"+ids[1], nil, nil)
	// Scorers have their cap too.
	ts.json("POST", "/v1/scorers", nil, nil)
	if status, _, body := ts.do("POST", "/v1/scorers", nil); status != 503 || !strings.Contains(apiErr(t, body).Message, "--max-scorers") {
		t.Errorf("over the scorer cap: %d %s", status, body)
	}
}

func TestTokenGuardsEverythingButHealth(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{Token: "s3cret"})
	if status, _, _ := ts.do("GET", "/v1/health", nil); status != 200 {
		t.Errorf("health without token: %d", status)
	}
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret"}} {
		status, hdr, body := ts.do("POST", "/v1/episodes", nil, h...)
		if e := apiErr(t, body); status != 401 || e.Field != "Authorization" || hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("header %v: %d %+v", h, status, e)
		}
	}
	if status, _, _ := ts.do("GET", "/v1/spec", nil, "Authorization", "Bearer s3cret"); status != 200 {
		t.Errorf("with the token: %d", status)
	}
	for addr, want := range map[string]bool{"127.0.0.1:80": true, "localhost:0": true, "[::1]:9": true, "127.8.9.1:1": true,
		"0.0.0.0:80": false, ":8080": false, "10.0.0.5:80": false, "example.org:80": false, "nonsense": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) = %v", addr, !want)
		}
	}
}

// TestManyConcurrentEpisodes runs 256 clients at once, each playing
// expert episodes, and checks every answer; run with -race.
func TestManyConcurrentEpisodes(t *testing.T) {
	cfg := smoke(t)
	ec, _ := setup.EnvConfig(cfg)
	ts := newTestServer(t, cfg, Options{MaxEpisodes: 512})
	ts.ts.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	const clients, each = 256, 3
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			for k := range each {
				idx := c*each + k
				task := env.Generate(ec, env.Train, idx)
				var ep episodeView
				ts.json("POST", "/v1/episodes", map[string]any{"index": idx}, &ep)
				var st stepView
				for _, a := range env.Solve(task) {
					ts.json("POST", "/v1/episodes/"+ep.Episode+"/step", actionSpec{Index: ptr(must(env.EncodeAction(a)))}, &st)
				}
				if !st.Done || st.Finish == nil || !st.Finish.Correct {
					errs <- fmt.Errorf("task %d: %+v", idx, st)
				}
				if k < each-1 {
					ts.json("DELETE", "/v1/episodes/"+ep.Episode, nil, nil)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if eps, _ := ts.srv.Live(); eps != clients {
		t.Errorf("%d live episodes, want %d", eps, clients)
	}
}

func ptr[T any](v T) *T { return &v }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestSpecDescribesTheWorld(t *testing.T) {
	cfg := smoke(t)
	ts := newTestServer(t, cfg, Options{})
	var sp spec
	ts.json("GET", "/v1/spec", nil, &sp)
	if sp.ActionSpace.Size != env.NumActions() || len(sp.AnswerVocab) != len(env.AnswerVocab) || len(sp.Families) != len(cfg.Env.Families) ||
		sp.Limits.MaxSteps != cfg.Env.MaxSteps || len(sp.Operations) != int(env.NumOps) || len(sp.Reward.Stages) != len(cfg.Curriculum.Stages) ||
		sp.Reward.Curiosity != cfg.Reward.Curiosity.Mode || len(sp.ConfigHash) != 64 {
		t.Errorf("spec %+v", sp)
	}
	// Every operation's arguments are the ones the step endpoint takes.
	for _, op := range sp.Operations {
		a := actionSpec{Op: &op.Name}
		for _, arg := range op.Args {
			switch arg {
			case "x":
				a.X = ptr(1)
			case "y":
				a.Y = ptr(1)
			case "answer":
				a.Answer = ptr("red")
			}
		}
		if _, err := a.action(""); err != nil {
			t.Errorf("%s with args %v: %v", op.Name, op.Args, err)
		}
	}
}

func TestServerSurvivesPanics(t *testing.T) {
	var log bytes.Buffer
	s, err := New(smoke(t), Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.mux.HandleFunc("GET /v1/boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/boom", nil))
	if rec.Code != 500 || apiErr(t, rec.Body.Bytes()).Status != 500 || !strings.Contains(log.String(), "panic serving GET /v1/boom: boom") {
		t.Errorf("status %d, log %q", rec.Code, log.String())
	}
}

// Expert trajectories and CoTA records of validation and test tasks are
// refused (403 on split) unless the server was started to hand them out,
// with a reason it publishes; training tasks' are always served.
func TestHeldOutExpertData(t *testing.T) {
	cfg := smoke(t)
	ts := newTestServer(t, cfg, Options{})
	for _, split := range []string{"val", "test"} {
		status, _, b := ts.do("POST", "/v1/expert", map[string]any{"split": split, "index": 2})
		if e := apiErr(t, b); status != http.StatusForbidden || e.Field != "split" || !strings.Contains(e.Message, "--heldout-expert") {
			t.Errorf("expert of a %s task: %d %+v, want 403 on split", split, status, e)
		}
		var ep episodeView
		ts.json("POST", "/v1/episodes", map[string]any{"split": split, "index": 2}, &ep)
		ts.json("POST", "/v1/episodes/"+ep.Episode+"/step", map[string]any{"op": "ANSWER", "answer": "yes"}, nil)
		status, _, b = ts.do("GET", "/v1/episodes/"+ep.Episode+"/trajectory?format=cota", nil)
		if e := apiErr(t, b); status != http.StatusForbidden || e.Field != "split" {
			t.Errorf("CoTA record of a finished %s episode: %d %+v, want 403 on split", split, status, e)
		}
	}
	if status, _, b := ts.do("POST", "/v1/expert", map[string]any{"split": "train", "index": 2}); status != http.StatusOK {
		t.Errorf("expert of a training task: %d %s", status, b)
	}
	var sp spec
	ts.json("GET", "/v1/spec", nil, &sp)
	if l := sp.Observation.Coarse.Layout; sp.Server.HeldOut != "" || l.Version != env.ObsVersion || l.Width != env.ObsDim || len(l.Global) == 0 {
		t.Errorf("spec: held-out %q, observation layout %+v", sp.Server.HeldOut, l)
	}
	// A session's answers name the observation version of their coarse floats.
	var ep episodeView
	ts.json("POST", "/v1/episodes", map[string]any{"split": "train", "index": 1}, &ep)
	var vec vectorView
	ts.json("POST", "/v1/vectors", map[string]any{"n": 2, "split": "train"}, &vec)
	for what, o := range map[string]obsSpace{"episode": ep.Observation, "vector": vec.Observation, "spec default": sp.Observation.Default} {
		if o.Coarse == nil || o.Coarse.Version != sp.Observation.Coarse.Layout.Version || o.Coarse.Shape[0] != sp.Observation.Coarse.Layout.Width {
			t.Errorf("%s observation %+v, want the coarse view of the spec's layout (version %d, width %d)", what, o.Coarse, env.ObsVersion, env.ObsDim)
		}
	}

	const why = "scoring a client's imitation of held-out tasks"
	open := newTestServer(t, cfg, Options{HeldOutExpert: why})
	if status, _, b := open.do("POST", "/v1/expert", map[string]any{"split": "test", "index": 2}); status != http.StatusOK {
		t.Errorf("expert of a test task with a reason given: %d %s", status, b)
	}
	open.json("GET", "/v1/spec", nil, &sp)
	if sp.Server.HeldOut != why {
		t.Errorf("spec says held-out %q, want %q", sp.Server.HeldOut, why)
	}
}
