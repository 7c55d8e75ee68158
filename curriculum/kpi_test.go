package curriculum

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(a), math.Abs(b)) }

func TestSlope(t *testing.T) {
	tests := []struct {
		name string
		ys   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one point", []float64{5}, 0},
		{"two points", []float64{1, 2}, 1},
		{"line 2x", []float64{0, 2, 4, 6, 8}, 2},
		{"flat", []float64{3, 3, 3}, 0},
		{"falling", []float64{0.9, 0.7, 0.5}, -0.2},
		// x̄=1, ȳ=2: Σ(x−x̄)(y−ȳ) = (−1)(−1)+0·1+1·0 = 1; Σ(x−x̄)² = 2.
		{"zigzag", []float64{1, 3, 2}, 0.5},
		// ȳ=0.523; Σ(x−x̄)(y−ȳ) = −2(−0.023) −1(−0.003) +0 +1(0.007) +2(0.012) = 0.080; Σ(x−x̄)² = 10.
		{"plateau", []float64{0.50, 0.52, 0.53, 0.53, 0.535}, 0.008},
		// ȳ=0.52, x̄=1.5: (−1.5)(−0.02)+(−0.5)(0)+(0.5)(0.01)+(1.5)(0.01) = 0.05; Σ(x−x̄)² = 5.
		{"four points", []float64{0.50, 0.52, 0.53, 0.53}, 0.01},
		// Large offset: the centred form keeps full precision.
		{"offset", []float64{1e12 + 1, 1e12 + 2, 1e12 + 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Slope(tt.ys); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Slope(%v) = %v, want %v", tt.ys, got, tt.want)
			}
		})
	}
}

// TestSlopeMatchesNormalEquations checks the centred formula against the
// textbook normal-equation form on well-scaled data.
func TestSlopeMatchesNormalEquations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 2; n <= 40; n++ {
		ys := make([]float64, n)
		for i := range ys {
			ys[i] = 0.3*float64(i) + rng.Float64()
		}
		var sx, sy, sxy, sxx float64
		for i, y := range ys {
			x := float64(i)
			sx, sy, sxy, sxx = sx+x, sy+y, sxy+x*y, sxx+x*x
		}
		fn := float64(n)
		want := (fn*sxy - sx*sy) / (fn*sxx - sx*sx)
		if got := Slope(ys); math.Abs(got-want) > 1e-9 {
			t.Errorf("n=%d: Slope = %v, normal equations %v", n, got, want)
		}
	}
}

// TestMovingAverageTwoPass compares every intermediate mean, length and
// content with a direct computation over the last K values of the full series.
func TestMovingAverageTwoPass(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	series := make([]float64, 250)
	for i := range series {
		series[i] = rng.NormFloat64()*0.2 + 0.5
	}
	for _, k := range []int{1, 3, 5, 100} {
		m := NewMovingAverage(k)
		for i, v := range series {
			if !m.Add(v) {
				t.Fatalf("k=%d: Add(%v) refused", k, v)
			}
			win := series[max(0, i+1-k) : i+1]
			// two passes: the mean, then the deviations from it (which sum to ~0)
			mean := 0.0
			for _, w := range win {
				mean += w
			}
			mean /= float64(len(win))
			dev := 0.0
			for _, w := range win {
				dev += w - mean
			}
			mean += dev / float64(len(win))
			if !near(m.Mean(), mean) {
				t.Fatalf("k=%d after %d: Mean = %v, want %v", k, i+1, m.Mean(), mean)
			}
			if m.Len() != len(win) || m.Full() != (len(win) == k) {
				t.Fatalf("k=%d after %d: Len %d Full %v, window %d", k, i+1, m.Len(), m.Full(), len(win))
			}
			if !slices.Equal(m.Values(), win) {
				t.Fatalf("k=%d after %d: Values %v, want %v", k, i+1, m.Values(), win)
			}
			if !near(m.Slope(), Slope(win)) {
				t.Fatalf("k=%d after %d: Slope %v, want %v", k, i+1, m.Slope(), Slope(win))
			}
		}
	}
}

func TestMovingAverageRefusesNonFinite(t *testing.T) {
	m := NewMovingAverage(3)
	m.Add(1)
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if m.Add(v) {
			t.Errorf("Add(%v) accepted", v)
		}
	}
	if m.Len() != 1 || m.Mean() != 1 {
		t.Errorf("after refused values: Len %d Mean %v, want 1 and 1", m.Len(), m.Mean())
	}
	if e := NewMovingAverage(2); e.Mean() != 0 || e.Len() != 0 || e.Full() {
		t.Errorf("empty moving average: Mean %v Len %d Full %v", e.Mean(), e.Len(), e.Full())
	}
}

func TestMovingAverageState(t *testing.T) {
	m := NewMovingAverage(4)
	for _, v := range []float64{1, 2, 3, 4, 5, 6} {
		m.Add(v)
	}
	b, err := json.Marshal(m.State())
	if err != nil {
		t.Fatal(err)
	}
	var s MovingAverageState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r := NewMovingAverage(4)
	if err := r.Restore(s); err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{7, 8.5, -1} {
		m.Add(v)
		r.Add(v)
		if m.Mean() != r.Mean() || !slices.Equal(m.Values(), r.Values()) {
			t.Fatalf("restored diverges: %v vs %v", r.Values(), m.Values())
		}
	}

	bad := []struct {
		name string
		s    MovingAverageState
		want string
	}{
		{"window", MovingAverageState{K: 5}, "window 5"},
		{"too many", MovingAverageState{K: 4, Values: []float64{1, 2, 3, 4, 5}}, "holds 5 values"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			err := NewMovingAverage(4).Restore(tt.s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Restore: %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestTrackerKPIs(t *testing.T) {
	tr, err := NewTracker(TrackerConfig{Window: 3, Names: []string{"success_rate", "coherence"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.KPIs(); len(got) != 0 {
		t.Errorf("empty tracker KPIs = %v, want none", got)
	}
	steps := []map[string]float64{
		{"success_rate": 0, "coherence": 0.1},
		{"success_rate": 1},
		{"success_rate": 1, "coherence": math.NaN()},
		{"success_rate": 0.5, "coherence": 0.3},
	}
	for _, s := range steps {
		if err := tr.Observe(s); err != nil {
			t.Fatal(err)
		}
	}
	// success_rate ring [1, 1, 0.5]: mean 2.5/3, slope (0.5−1)/2 = −0.25.
	// coherence ring [0.1, 0.3] (NaN skipped): mean 0.2, slope 0.2.
	want := map[string]float64{
		"success_rate_ma3":       2.5 / 3,
		"success_rate_ma3_slope": -0.25,
		"coherence_ma3":          0.2,
		"coherence_ma3_slope":    0.2,
	}
	got := tr.KPIs()
	if len(got) != len(want) {
		t.Fatalf("KPIs = %v, want keys of %v", got, want)
	}
	for k, w := range want {
		if !near(got[k], w) {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}

	if err := tr.Observe(map[string]float64{"success_rate": 0, "succes_rate": 1}); err == nil || !strings.Contains(err.Error(), `"succes_rate"`) {
		t.Errorf("unknown name: %v", err)
	}
	if !near(tr.KPIs()["success_rate_ma3"], 2.5/3) {
		t.Error("a refused Observe changed the tracker")
	}

	t2, _ := NewTracker(TrackerConfig{Window: 1, Names: []string{"x"}})
	t2.Observe(map[string]float64{"x": 4})
	if got := t2.KPIs(); len(got) != 1 || got["x_ma1"] != 4 {
		t.Errorf("one value: KPIs = %v, want only x_ma1 = 4 (no slope)", got)
	}
}

func TestTrackerStateRoundTrip(t *testing.T) {
	cfg := seedTrackerConfig()
	cfg.Window = 5
	a, _ := NewTracker(cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	batch := func() map[string]float64 {
		out := map[string]float64{}
		for _, n := range cfg.Names {
			out[n] = rng.Float64()
		}
		return out
	}
	for range 8 {
		a.Observe(batch())
	}
	b, err := json.Marshal(a.State())
	if err != nil {
		t.Fatal(err)
	}
	var s TrackerState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, _ := NewTracker(cfg)
	if err := r.Restore(s); err != nil {
		t.Fatal(err)
	}
	for range 7 {
		x := batch()
		a.Observe(x)
		r.Observe(x)
		ka, kr := a.KPIs(), r.KPIs()
		for k, v := range ka {
			if kr[k] != v {
				t.Fatalf("%s: restored %v, original %v", k, kr[k], v)
			}
		}
	}

	other, _ := NewTracker(TrackerConfig{Window: 6, Names: cfg.Names})
	if err := other.Restore(s); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("restore into another window: %v", err)
	}
	fewer, _ := NewTracker(TrackerConfig{Window: 5, Names: []string{"success_rate"}})
	if err := fewer.Restore(s); err == nil {
		t.Error("restore into other names: no error")
	}
}

func TestTrackerConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  TrackerConfig
		want []string
	}{
		{"default", seedTrackerConfig(), nil},
		{"window", TrackerConfig{Window: 0, Names: []string{"a"}}, []string{"window:"}},
		{"no names", TrackerConfig{Window: 3}, []string{"names:"}},
		{"empty and twice", TrackerConfig{Window: 3, Names: []string{"a", "", "a"}}, []string{"names[1]: empty", `names[2]: "a" listed twice`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, tt.cfg.Validate(), tt.want)
		})
	}
}

// checkErrs fails unless err mentions every want (and is nil when want is empty).
func checkErrs(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}
