package tui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/serve"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/telemetry"
)

// brevity is a throwaway reward term: −0.01 per step, attributed to each step.
type brevity struct{}

func (brevity) Name() string { return "brevity" }

func (brevity) Score(trajs []*reward.Trajectory) []reward.Score {
	out := make([]reward.Score, len(trajs))
	for i, t := range trajs {
		per := make([]float64, len(t.Steps))
		for k := range per {
			per[k] = -0.01
		}
		out[i] = reward.Score{Value: -0.01 * float64(len(t.Steps)), PerStep: per}
	}
	return out
}

// recordSink keeps what a run sends.
type recordSink struct {
	mu     sync.Mutex
	points []telemetry.Point
	snaps  []telemetry.Snapshot
}

func (s *recordSink) Record(p telemetry.Point) {
	s.mu.Lock()
	s.points = append(s.points, p)
	s.mu.Unlock()
}
func (s *recordSink) Publish(p telemetry.Snapshot) {
	s.mu.Lock()
	s.snaps = append(s.snaps, p)
	s.mu.Unlock()
}
func (s *recordSink) Emit(telemetry.Event) {}

// The recipe of docs/architecture.md, "A reward term": a term added through
// the registry alone (reward.Register, what a row of reward/registry.go
// does) is a key of a stage's weights that configs parses and validates, a
// component of the orchestrator, a weight of the reward curriculum, metrics
// of a run, a column of pixelis serve's scores, a live-edit field, and a row
// of the console's reward pane, with its short label beside a sample's steps.
func TestRecipeRewardTerm(t *testing.T) {
	unregister, err := reward.Register(reward.Term{Name: "brevity", Short: "brev", Doc: "−0.01 a step",
		New: func(reward.Parts) (reward.Component, error) { return brevity{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unregister)

	cfg := configWithBrevity(t)
	o, err := setup.Orchestrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(o.Names(), "brevity") {
		t.Errorf("orchestrator components %v lack brevity", o.Names())
	}
	sink := runWithBrevity(t, cfg)
	serveScoresBrevity(t, cfg)
	if _, err := edit.Lookup(telemetry.PhaseRFT, cfg, "weight.brevity"); err != nil {
		t.Errorf("no live-edit field for the new weight: %v", err)
	}
	consoleShowsBrevity(t, sink)
	plainShowsBrevity(t, sink)
}

// configWithBrevity is the smoke config with brevity weighed 0.5 in the first
// stage, after checking that configs parses the key and refuses a slip of it.
func configWithBrevity(t *testing.T) *configs.Config {
	t.Helper()
	if _, err := configs.Parse("t.toml", "[[curriculum.stages]]\nname = \"only\"\nweights = { final = 1.0, brevty = 0.5 }\n"); err == nil ||
		!strings.Contains(err.Error(), "did you mean curriculum.stages[0].weights.brevity") {
		t.Errorf("a slip of the new term's name: %v", err)
	}
	parsed, err := configs.Parse("t.toml", "[[curriculum.stages]]\nname = \"only\"\nweights = { final = 1.0, brevity = 0.5 }\n")
	if err != nil || parsed.Curriculum.Stages[0].Weights["brevity"] != 0.5 {
		t.Fatalf("weights = { final = 1.0, brevity = 0.5 }: %v", err)
	}
	cfg, err := configs.Resolve("smoke", []string{"curriculum.stages[0].weights.brevity=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runWithBrevity trains a smoke run and checks its metrics and snapshots.
func runWithBrevity(t *testing.T, cfg *configs.Config) *recordSink {
	t.Helper()
	sink := &recordSink{}
	r, err := train.New(cfg, train.Options{RunDir: t.TempDir(), Phases: []string{train.PhaseSFT, train.PhaseRFT}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := sink.points[len(sink.points)-1]
	for _, m := range []string{"reward/brevity/raw", "reward/brevity/norm", "curriculum/weight/brevity"} {
		if _, ok := last.Metrics[m]; !ok {
			t.Errorf("the run's last point lacks %s", m)
		}
	}
	snap := sink.snaps[len(sink.snaps)-1]
	if !slices.ContainsFunc(snap.Rewards, func(r telemetry.RewardTerm) bool { return r.Name == "brevity" && r.Short == "brev" }) {
		t.Errorf("the run's snapshot lists rewards %+v, without brevity", snap.Rewards)
	}
	if w := snap.Curriculum.Stages[0].Weights; w["brevity"] != 0.5 {
		t.Errorf("the reward curriculum's first stage weighs %v", w)
	}
	return sink
}

// serveScoresBrevity checks that POST /v1/score returns the term.
func serveScoresBrevity(t *testing.T, cfg *configs.Config) {
	t.Helper()
	srv, err := serve.New(cfg, serve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/score",
		strings.NewReader(`{"items":[{"task":{"index":1},"actions":[{"op":"ANSWER","answer":"red"}]}]}`)))
	var scored struct {
		Names []string                           `json:"names"`
		Items []struct{ Raw map[string]float64 } `json:"items"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &scored); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("POST /v1/score: %d %s", rec.Code, rec.Body)
	}
	if !slices.Contains(scored.Names, "brevity") || len(scored.Items) != 1 || scored.Items[0].Raw["brevity"] != -0.01 {
		t.Errorf("serve's scores: %s", rec.Body)
	}
}

// consoleShowsBrevity feeds the run to a console and looks for the term's
// row, and its label beside a step.
func consoleShowsBrevity(t *testing.T, sink *recordSink) {
	t.Helper()
	snap := sink.snaps[len(sink.snaps)-1]
	hs := newHarness(t, newFakeFeed(false), Options{Color: "never"}, 160, 50)
	hs.send(feedMsg(telemetry.Update{Points: sink.points, Snapshot: &snap}))
	if frame := hs.frame(); !strings.Contains(frame, "brevity") {
		t.Errorf("the console does not show the new term:\n%s", frame)
	}
	if !strings.Contains(rewardParts(map[string]float64{"brevity": -0.01}, termsOf(&snap)), "brev -0.01") {
		t.Errorf("a step's reward parts do not label the new term")
	}
}

// plainShowsBrevity prints the run's snapshots headless and looks for the
// term by its short label in every RFT status line, and its value in the
// lines of the first stage, the one that weighs it.
func plainShowsBrevity(t *testing.T, sink *recordSink) {
	t.Helper()
	var out strings.Builder
	plain := Plain(&out, 1)
	for _, s := range sink.snaps {
		plain.Publish(s)
	}
	var rft []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "rft ") && strings.Contains(line, " | ") {
			rft = append(rft, line)
		}
	}
	if len(rft) == 0 {
		t.Fatalf("no RFT status line in the headless output:\n%s", out.String())
	}
	for _, line := range rft {
		if !strings.Contains(line, " brev ") {
			t.Errorf("an RFT status line without the new term: %q", line)
		}
		if strings.Contains(line, " stage 1/") && !strings.Contains(line, " brev -0.") {
			t.Errorf("a status line of the stage that weighs the new term without its value: %q", line)
		}
	}
}
