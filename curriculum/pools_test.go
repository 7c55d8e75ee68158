package curriculum

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
)

var testLabels = []string{"simple", "hard", "medium", "simple", "medium", "hard", "simple"}

func TestPoolsStages(t *testing.T) {
	p, err := NewPools(testLabels, seedMixes)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		op     string // "advance", "rollback" or "" (initial)
		ok     bool
		stage  int
		active []int
	}{
		{"", true, 0, []int{0, 3, 6}},
		{"rollback", false, 0, []int{0, 3, 6}},
		{"advance", true, 1, []int{0, 2, 3, 4, 6}},
		{"advance", true, 2, []int{0, 1, 2, 3, 4, 5, 6}},
		{"advance", false, 2, []int{0, 1, 2, 3, 4, 5, 6}},
		{"rollback", true, 1, []int{0, 2, 3, 4, 6}},
		{"rollback", true, 0, []int{0, 3, 6}},
	}
	for i, s := range steps {
		ok := true
		switch s.op {
		case "advance":
			ok = p.Advance()
		case "rollback":
			ok = p.Rollback()
		}
		if ok != s.ok || p.Stage() != s.stage || !slices.Equal(p.Active(), s.active) || p.Len() != len(s.active) {
			t.Errorf("step %d %s: ok %v stage %d active %v, want %v %d %v", i, s.op, ok, p.Stage(), p.Active(), s.ok, s.stage, s.active)
		}
	}
	if p.NumStages() != 3 || p.Mix(1) != "simple+medium" {
		t.Errorf("NumStages %d Mix(1) %q", p.NumStages(), p.Mix(1))
	}
}

// TestPoolsRollbackExact: after advance and rollback, the pool and the draws
// a fresh copy of the same random stream makes from it are what they were.
func TestPoolsRollbackExact(t *testing.T) {
	labels := make([]string, 60)
	for i := range labels {
		labels[i] = []string{"simple", "medium", "hard"}[(i*7)%3]
	}
	p, err := NewPools(labels, seedMixes)
	if err != nil {
		t.Fatal(err)
	}
	p.Advance()
	beforeActive := p.Active()
	beforeDraws := p.Sample(rand.New(rand.NewPCG(9, 9)), 50, nil)

	p.Advance()
	during := p.Sample(rand.New(rand.NewPCG(9, 9)), 50, nil)
	if slices.Equal(during, beforeDraws) {
		t.Fatal("draws on the larger pool equal those on the smaller one; the test cannot tell pools apart")
	}
	if !p.Rollback() {
		t.Fatal("Rollback refused")
	}
	if !slices.Equal(p.Active(), beforeActive) {
		t.Errorf("active after rollback %v, want %v", p.Active(), beforeActive)
	}
	if after := p.Sample(rand.New(rand.NewPCG(9, 9)), 50, nil); !slices.Equal(after, beforeDraws) {
		t.Errorf("draws after rollback %v, want %v", after, beforeDraws)
	}
}

func TestPoolsSample(t *testing.T) {
	p, _ := NewPools(testLabels, seedMixes)
	rng := rand.New(rand.NewPCG(1, 1))
	buf := []int{-1}
	got := p.Sample(rng, 200, buf)
	if len(got) != 201 || got[0] != -1 {
		t.Fatalf("Sample must append to dst: len %d first %d", len(got), got[0])
	}
	seen := map[int]int{}
	for _, i := range got[1:] {
		if testLabels[i] != "simple" {
			t.Fatalf("drew sample %d (%s) at stage 0", i, testLabels[i])
		}
		seen[i]++
	}
	if len(seen) != 3 {
		t.Errorf("200 draws from 3 samples hit %d of them", len(seen))
	}
	// Only the passed stream is used: the same seed gives the same draws.
	again := p.Sample(rand.New(rand.NewPCG(1, 1)), 200, nil)
	if !slices.Equal(again, got[1:]) {
		t.Error("same stream, different draws")
	}
}

func TestNewPoolsErrors(t *testing.T) {
	tests := []struct {
		name   string
		labels []string
		mixes  []string
		want   []string
	}{
		{"custom mixes", []string{"a", "b"}, []string{"a", "b", "a+b"}, nil},
		{"unknown label", []string{"simple", "Hard"}, seedMixes, []string{`sample 1: bucket "Hard"`}},
		{"empty bucket", []string{"simple"}, []string{"simple", "simple+"}, []string{`mixes[1] "simple+": empty bucket`}},
		{"twice", []string{"simple"}, []string{"simple+simple"}, []string{`bucket "simple" listed twice`}},
		{"empty pool", []string{"simple"}, []string{"simple", "medium"}, []string{`mixes[1] "medium": no sample`}},
		{"no samples", nil, seedMixes, []string{`mixes[0] "simple": no sample`}},
		{"no mixes", []string{"simple"}, nil, []string{"no stage mixes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPools(tt.labels, tt.mixes)
			checkErrs(t, err, tt.want)
		})
	}
}

func TestPoolsState(t *testing.T) {
	p, _ := NewPools(testLabels, seedMixes)
	p.Advance()
	b, err := json.Marshal(p.State())
	if err != nil {
		t.Fatal(err)
	}
	var s PoolsState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, _ := NewPools(testLabels, seedMixes)
	if err := r.Restore(s); err != nil {
		t.Fatal(err)
	}
	if r.Stage() != 1 || !slices.Equal(r.Active(), p.Active()) {
		t.Errorf("restored stage %d active %v, want 1 %v", r.Stage(), r.Active(), p.Active())
	}
	// The round trip must keep rollback working the same.
	if !r.Rollback() || !p.Rollback() || !slices.Equal(r.Active(), p.Active()) {
		t.Error("rollback after restore differs")
	}

	relabelled := slices.Clone(testLabels)
	relabelled[0], relabelled[1] = relabelled[1], relabelled[0]
	bad := []struct {
		name   string
		labels []string
		mixes  []string
		edit   func(*PoolsState)
		want   string
	}{
		{"relabelled", relabelled, seedMixes, nil, "fingerprint"},
		{"other size", testLabels[:6], seedMixes, nil, "7 samples"},
		{"other mixes", testLabels, []string{"simple", "simple+medium+hard"}, nil, "mixes"},
		{"stage", testLabels, seedMixes, func(s *PoolsState) { s.Stage = 3 }, "stage 3"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			q, err := NewPools(tt.labels, tt.mixes)
			if err != nil {
				t.Fatal(err)
			}
			st := s
			if tt.edit != nil {
				tt.edit(&st)
			}
			checkErrs(t, q.Restore(st), []string{tt.want})
		})
	}
}

func TestPoolsCounts(t *testing.T) {
	p, err := NewPools([]string{"simple", "medium", "simple", "hard"}, []string{"simple", "simple+medium", "simple+medium+hard"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Counts(1); got["simple"] != 2 || got["medium"] != 1 || len(got) != 2 {
		t.Fatalf("Counts(1) = %v", got)
	}
}
