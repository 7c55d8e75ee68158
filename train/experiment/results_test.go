package experiment

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeMetrics writes a run's metrics.jsonl: metric m at each step, then a test record.
func writeMetrics(t *testing.T, dir string, series []float64, test float64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, v := range series {
		fmt.Fprintf(&b, "{\"step\":%d,\"phase\":\"rft\",\"m\":{\"behavior/rapr\":%v}}\n", i+1, v)
	}
	fmt.Fprintf(&b, "not json, a line cut by a kill\n")
	fmt.Fprintf(&b, "{\"step\":%d,\"phase\":\"\",\"m\":{\"test/rft/all/pass@1\":%v}}\n", len(series)+1, test)
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Means and intervals computed by hand: seeds give test pass@1 0.6, 0.7, 0.8:
// mean 0.7, sd 0.1, interval t₀.₉₇₅,₂ · 0.1/√3 = 4.303 · 0.057735 = 0.248432.
func TestCollectByHand(t *testing.T) {
	out := t.TempDir()
	f := &File{Name: "e", Seeds: []uint64{1, 2, 3}, Tail: 2, Series: []string{"behavior/rapr"},
		Report: []string{"test/rft/all/pass@1", "behavior/rapr"}, Arms: []Arm{{Name: "a"}, {Name: "b"}}}
	for i, v := range []float64{0.6, 0.7, 0.8} {
		writeMetrics(t, filepath.Join(out, "runs", "a", fmt.Sprintf("seed-%d", i+1)), []float64{1, 0.5, 0.2 * float64(i+1)}, v)
	}
	writeMetrics(t, filepath.Join(out, "runs", "b", "seed-1"), []float64{1}, 0.5) // b has one finished seed
	res, err := Collect(f, out)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Arms[0].Metrics["test/rft/all/pass@1"]
	if math.Abs(a.Mean-0.7) > 1e-12 || math.Abs(a.CI95-4.303*0.1/math.Sqrt(3)) > 1e-9 || a.N != 3 {
		t.Fatalf("arm a: %+v", a)
	}
	// behavior/rapr over the last 2 steps per seed: (0.5+0.2)/2, (0.5+0.4)/2, (0.5+0.6)/2.
	if r := res.Arms[0].Metrics["behavior/rapr"]; math.Abs(r.Mean-0.45) > 1e-12 {
		t.Fatalf("rapr tail mean %+v, want 0.45", r)
	}
	if b := res.Arms[1].Metrics["test/rft/all/pass@1"]; b.N != 1 || !math.IsNaN(b.CI95) || !math.IsNaN(b.Values[1]) {
		t.Fatalf("arm b with one seed: %+v", b)
	}
	if s := res.Arms[0].Series["behavior/rapr"]; len(s) != 3 || s[0].Mean != 1 || s[0].N != 3 {
		t.Fatalf("series %+v", s)
	}
	if err := res.Write(out); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	if !strings.Contains(string(md), "| a | 3 | 0.700 ± 0.248 |") || !strings.Contains(string(md), "| b | 1 | 0.500 |") {
		t.Errorf("results.md:\n%s", md)
	}
	var back map[string]any
	js, _ := os.ReadFile(filepath.Join(out, "results.json"))
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	csv, _ := os.ReadFile(filepath.Join(out, "results.csv"))
	if !strings.Contains(string(csv), "a,2,test/rft/all/pass@1,0.7\n") || !strings.Contains(string(csv), "b,2,test/rft/all/pass@1,\n") {
		t.Errorf("results.csv:\n%s", csv)
	}
	if _, err := os.Stat(filepath.Join(out, "plot_behavior_rapr.png")); err != nil {
		t.Error(err)
	}
}
