package telemetry

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "reward/total", `quote " backslash \ slash /`, "tab\tnew\nline\r", "\x00\x01\x1f",
		"<html>&amp;", "ünïcödé ✓ 日本", "bad \xff utf8 \xc3", "line\u2028sep\u2029para",
	} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendString(nil, s)); got != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestPointJSONNonFinite(t *testing.T) {
	p := Point{Step: 7, Phase: PhaseRFT, Time: "2026-11-22T10:42:00Z", Metrics: map[string]float64{
		"policy/loss": math.NaN(), "policy/kl": math.Inf(1), "reward/total": 0.5, "tiny": 1e-9, "huge": 1e22,
	}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"step":7,"phase":"rft","time":"2026-11-22T10:42:00Z","m":{"huge":1e+22,"policy/kl":null,"policy/loss":null,"reward/total":0.5,"tiny":1e-09}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var q Point
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if q.Step != 7 || q.Phase != PhaseRFT || q.Time != p.Time {
		t.Errorf("header: %+v", q)
	}
	if !math.IsNaN(q.Metrics["policy/loss"]) || !math.IsNaN(q.Metrics["policy/kl"]) {
		t.Errorf("non-finite values should read back as NaN: %v", q.Metrics)
	}
	if q.Metrics["reward/total"] != 0.5 || q.Metrics["tiny"] != 1e-9 || q.Metrics["huge"] != 1e22 {
		t.Errorf("finite values changed: %v", q.Metrics)
	}
}

func TestSnapshotJSONNonFinite(t *testing.T) {
	nan := math.NaN()
	s := Snapshot{
		Run: "r", Phase: PhaseRFT, State: StateRunning, Step: 3, TotalSteps: 9,
		Time:      time.Date(2026, 11, 22, 10, 42, 0, 0, time.UTC),
		StepsPerS: math.Inf(-1),
		Metrics:   map[string]float64{"a": nan, "b": 2},
		Curriculum: Curriculum{
			Kind:     "reward",
			Stages:   []Stage{{Name: "one", Weights: map[string]float64{"final": 1, "curiosity": nan}, EnteredAt: 0}},
			Progress: []Condition{{Desc: "x > 1", Value: nan, Target: 1}},
		},
		Samples: []Sample{{Step: 3, Family: "text_extraction", Reward: nan,
			Steps: []SampleStep{{Op: "READ_TEXT", Rewards: map[string]float64{"coherence": nan, "final": 1}}}}},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("marshal must not fail on NaN: %v", err)
	}
	var got Snapshot
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	checks := map[string]float64{
		"steps_per_s":       got.StepsPerS,
		"m.a":               got.Metrics["a"],
		"stage weight":      got.Curriculum.Stages[0].Weights["curiosity"],
		"condition value":   got.Curriculum.Progress[0].Value,
		"sample reward":     got.Samples[0].Reward,
		"sample step award": got.Samples[0].Steps[0].Rewards["coherence"],
	}
	for name, v := range checks {
		if !math.IsNaN(v) {
			t.Errorf("%s = %v, want NaN", name, v)
		}
	}
	if got.Metrics["b"] != 2 || got.Curriculum.Progress[0].Target != 1 || got.Samples[0].Steps[0].Rewards["final"] != 1 ||
		got.Curriculum.Stages[0].Weights["final"] != 1 || got.Run != "r" || got.TotalSteps != 9 || !got.Time.Equal(s.Time) ||
		got.Samples[0].Family != "text_extraction" || got.Samples[0].Steps[0].Op != "READ_TEXT" {
		t.Errorf("finite fields changed: %+v", got)
	}
}

func TestEventJSONNeverFails(t *testing.T) {
	e := Event{Step: 1, Kind: EventEval, Message: "val", Data: map[string]any{
		"pass@1": math.NaN(), "list": []float64{1, math.Inf(1)}, "nested": map[string]any{"x": float32(math.NaN())}, "ok": 0.5,
	}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	data := got["data"].(map[string]any)
	if data["pass@1"] != nil || data["list"].([]any)[1] != nil || data["list"].([]any)[0] != 1.0 ||
		data["nested"].(map[string]any)["x"] != nil || data["ok"] != 0.5 {
		t.Errorf("data = %v", data)
	}

	e.Data = map[string]any{"ch": make(chan int)}
	b, err = json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"data_error"`) || !strings.Contains(string(b), `"message":"val"`) {
		t.Errorf("unencodable data: %s", b)
	}
}

func TestLineStep(t *testing.T) {
	for _, c := range []struct {
		line string
		step int
		ok   bool
	}{
		{`{"step":12,"phase":"rft"}`, 12, true},
		{`{"step":3}`, 3, true},
		{`{"phase":"sft","step":40}`, 40, true},
		{`{"kind":"x"}`, 0, false},
		{`{"step":`, 0, false},
		{`garbage`, 0, false},
	} {
		step, ok := lineStep([]byte(c.line))
		if step != c.step || ok != c.ok {
			t.Errorf("lineStep(%s) = %d,%v want %d,%v", c.line, step, ok, c.step, c.ok)
		}
	}
}

// A point's aliases survive metrics.jsonl, and Named gives its metrics
// under them; the logged names stay in Metrics.
func TestPointAliasRoundTrip(t *testing.T) {
	p := Point{Step: 4, Phase: PhaseSFT, Time: "t", Metrics: map[string]float64{"train/loss": 0.5, "custom": 1},
		Alias: map[string]string{"train/loss": "sft/loss"}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q Point
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if q.Metrics["train/loss"] != 0.5 || q.Alias["train/loss"] != "sft/loss" {
		t.Fatalf("round trip of %s: %+v", b, q)
	}
	if n := q.Named(); n["sft/loss"] != 0.5 || n["custom"] != 1 || len(n) != 2 {
		t.Errorf("Named() = %v", n)
	}
	if b2, _ := json.Marshal(Point{Step: 1, Metrics: map[string]float64{"a": 1}}); strings.Contains(string(b2), "alias") {
		t.Errorf("a point without aliases writes them: %s", b2)
	}
}
