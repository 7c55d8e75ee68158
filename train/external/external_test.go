package external

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/stream"
)

// agentEnv names the scripted agent a test runs: this test binary, started
// again with it set, plays the plan as the agent of that name and exits.
const agentEnv = "PIXELIS_TEST_AGENT"

func TestMain(m *testing.M) {
	if name := os.Getenv(agentEnv); name != "" {
		if err := scriptedAgent(name); err != nil {
			fmt.Fprintln(os.Stderr, "agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The scripted agents. Each knows the right answers (it generates the tasks
// itself from the smoke config), so what it scores is known exactly:
//
//	even    greedy: right on even task indices; sampled: right when the
//	        attempt's seed is even; SEGMENT_OBJECT_AT once before answering
//	wrong   answers "zzz", never right, no operation
//	idle    plays nothing: every episode stays unfinished
//	reset   restarts its first episode, then plays as wrong
//	fail    exits 3
func scriptedAgent(name string) error {
	if name == "fail" {
		os.Exit(3)
	}
	data, err := os.ReadFile(os.Getenv(EnvPlan))
	if err != nil {
		return err
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	cfg, err := configs.Named("smoke")
	if err != nil {
		return err
	}
	envCfg, err := setup.EnvConfig(cfg)
	if err != nil {
		return err
	}
	for i, a := range p.Attempts {
		if name == "idle" {
			continue
		}
		if name == "reset" && i == 0 {
			if err := post(a.Episode, "reset", nil); err != nil {
				return err
			}
		}
		answer := "zzz"
		if name == "even" {
			if err := post(a.Episode, "step", map[string]any{"op": "SEGMENT_OBJECT_AT", "x": 32, "y": 32}); err != nil {
				return err
			}
			if (a.Greedy && a.Index%2 == 0) || (!a.Greedy && a.Seed%2 == 0) {
				answer = env.Generate(envCfg, env.Test, a.Index).Answer
			}
		}
		if err := post(a.Episode, "step", map[string]any{"op": "ANSWER", "answer": answer}); err != nil {
			return err
		}
	}
	return nil
}

// post sends body to /v1/episodes/{id}/{what} on the evaluation's server.
func post(id, what string, body any) error {
	b, _ := json.Marshal(body)
	if body == nil {
		b = nil
	}
	req, err := http.NewRequest("POST", os.Getenv(EnvURL)+"/v1/episodes/"+id+"/"+what, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+os.Getenv(EnvToken))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", what, id, resp.Status)
	}
	return nil
}

const (
	testTasks   = 6
	testSamples = 3
)

func evaluate(t *testing.T, agent string) (Result, error) {
	t.Helper()
	cfg, err := configs.Named("smoke")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentEnv, agent)
	var out bytes.Buffer
	res, err := Evaluate(context.Background(), Options{Config: cfg, Split: env.Test, Tasks: testTasks, Samples: testSamples,
		Command: []string{os.Args[0]}, Stdout: &out, Stderr: &out})
	if out.Len() > 0 {
		t.Logf("agent %s said: %s", agent, out.String())
	}
	return res, err
}

// wantEven is what the even agent scores on each task.
func wantEven(t *testing.T, seed uint64) (greedy, pass1 []float64) {
	for i := range testTasks {
		g, p := 0.0, 0.0
		if i%2 == 0 {
			g = 1
		}
		for k := range testSamples {
			// The seed pixelis's own test phase samples attempt k of task i with.
			if stream.New(seed, stream.Eval, 0, i*testSamples+k).Uint64()>>11%2 == 0 {
				p += 1.0 / testSamples
			}
		}
		greedy, pass1 = append(greedy, g), append(pass1, p)
	}
	return greedy, pass1
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// pairedSE is the standard error of the mean of d: sd(d)/√n.
func pairedSE(d []float64) float64 {
	m, ss := mean(d), 0.0
	for _, x := range d {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(len(d)-1)) / math.Sqrt(float64(len(d)))
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestScriptedAgentsScoreAndPairExactly(t *testing.T) {
	even, err := evaluate(t, "even")
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := evaluate(t, "wrong")
	if err != nil {
		t.Fatal(err)
	}
	greedy, pass1 := wantEven(t, even.Seed)
	if mean(pass1) == 0 || mean(pass1) == 1 {
		t.Fatalf("the seeds make pass@1 %v: pick other sizes, the test would not tell", mean(pass1))
	}
	r := even.Result
	if !near(r.Greedy["all"], mean(greedy)) || !near(r.Pass1["all"], mean(pass1)) || r.RaPR["all"] != 1 {
		t.Errorf("even agent: greedy %v pass@1 %v rapr %v, want %v %v 1", r.Greedy["all"], r.Pass1["all"], r.RaPR["all"], mean(greedy), mean(pass1))
	}
	for i, s := range even.PerTask {
		if want := fmt.Sprintf("test-%06d", i); s.ID != want || s.Greedy != greedy[i] || !near(s.Pass1, pass1[i]) {
			t.Errorf("task %d: %+v, want %s greedy %v pass@1 %v", i, s, want, greedy[i], pass1[i])
		}
	}
	if even.Unfinished != 0 || wrong.Unfinished != 0 {
		t.Errorf("unfinished: %d and %d, want 0", even.Unfinished, wrong.Unfinished)
	}
	if want := testTasks * (1 + testSamples); even.Operations != want || wrong.Operations != 0 {
		t.Errorf("operations: %d and %d, want %d (one an attempt) and 0", even.Operations, wrong.Operations, want)
	}
	if w := wrong.Result; w.Greedy["all"] != 0 || w.Pass1["all"] != 0 || w.PassN["all"] != 0 || w.RaPR["all"] != 0 {
		t.Errorf("wrong agent: %+v, want all 0", w)
	}
	c, err := Paired(wrong, even)
	if err != nil {
		t.Fatal(err)
	}
	if !near(c.Greedy, mean(greedy)) || !near(c.GreedySE, pairedSE(greedy)) || !near(c.Pass1, mean(pass1)) || !near(c.Pass1SE, pairedSE(pass1)) {
		t.Errorf("even − wrong: %+v, want greedy %v ± %v, pass@1 %v ± %v", *c, mean(greedy), pairedSE(greedy), mean(pass1), pairedSE(pass1))
	}
}

// The plan's seeds are the streams rollout.Evaluate samples the same
// attempts from: sampled episode j of an evaluation plays task j/n.
func TestPlanSeedsAreTheTestPhaseStreams(t *testing.T) {
	for _, c := range []struct{ i, k int }{{0, 0}, {1, 2}, {5, 1}} {
		if got, want := attemptSeed(7, 3, c.i, c.k), stream.New(7, stream.Eval, 0, 3*c.i+c.k).Uint64()>>11; got != want {
			t.Errorf("task %d sample %d: seed %d, want %d", c.i, c.k, got, want)
		}
	}
}

func TestUnfinishedEpisodesAreWrong(t *testing.T) {
	res, err := evaluate(t, "idle")
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Result; r.Greedy["all"] != 0 || r.Pass1["all"] != 0 || r.Tasks != testTasks || res.Unfinished != testTasks*(1+testSamples) {
		t.Errorf("idle agent: %+v, %d unfinished, want %d tasks, none right, all unfinished", r, res.Unfinished, testTasks)
	}
}

func TestAgentThatCannotBeReadIsAnError(t *testing.T) {
	for _, c := range []struct{ agent, want string }{
		{"reset", "reset episode"},
		{"fail", "exit status 3"},
	} {
		_, err := evaluate(t, c.agent)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s agent: error %v, want one saying %q", c.agent, err, c.want)
		}
	}
}

func TestPairRefusesOtherAttempts(t *testing.T) {
	a := Result{Split: "test", Tasks: 2, Samples: 1, PerTask: []TaskScore{{ID: "test-000000"}, {ID: "test-000001"}}}
	b := a
	b.Samples = 2
	if _, err := Paired(a, b); err == nil {
		t.Error("paired 1 and 2 samples a task")
	}
	b = a
	b.PerTask = []TaskScore{{ID: "test-000000"}, {ID: "test-000002"}}
	if _, err := Paired(a, b); err == nil || !strings.Contains(err.Error(), "test-000002") {
		t.Errorf("paired other tasks: %v", err)
	}
}
