package grpo

import (
	"errors"
	"reflect"
	"testing"
)

// Rounds of groups of 2: "z" is a zero-std group, "s" one with signal.
func TestGroupSamplerCollect(t *testing.T) {
	group := map[byte][]float64{'z': {1, 1}, 's': {0, 1}}
	cases := []struct {
		name    string
		sampler GroupSampler
		rounds  []string // the groups each round returns, in order
		kept    []int
		stats   SamplingStats
	}{
		{"all signal", GroupSampler{G: 2, Want: 3, Dynamic: true, MaxResample: 2}, []string{"sss"}, []int{0, 1, 2}, SamplingStats{3, 0}},
		// round 0 keeps 0 and 2; round 1 rolls one group (3), which has signal
		{"one re-roll", GroupSampler{G: 2, Want: 3, Dynamic: true, MaxResample: 2}, []string{"szs", "s"}, []int{0, 2, 3}, SamplingStats{4, 1}},
		// the last round keeps what it gets; set-aside groups are not needed
		{"last round keeps zeros", GroupSampler{G: 2, Want: 2, Dynamic: true, MaxResample: 1}, []string{"zz", "zs"}, []int{2, 3}, SamplingStats{4, 3}},
		{"static keeps the first round", GroupSampler{G: 2, Want: 2, Dynamic: false, MaxResample: 5}, []string{"zs"}, []int{0, 1}, SamplingStats{2, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			round := 0
			kept, st, err := c.sampler.Collect(func(r, need int) ([]float64, error) {
				if r != round {
					t.Fatalf("round %d, want %d", r, round)
				}
				groups := c.rounds[round]
				if need != len(groups) && round > 0 {
					t.Fatalf("round %d asked for %d groups, fixture has %d", r, need, len(groups))
				}
				round++
				var out []float64
				for i := range groups {
					out = append(out, group[groups[i]]...)
				}
				return out, nil
			})
			if err != nil || !reflect.DeepEqual(kept, c.kept) || st != c.stats {
				t.Fatalf("kept %v %+v %v, want %v %+v", kept, st, err, c.kept, c.stats)
			}
		})
	}
	boom := errors.New("boom")
	if _, _, err := (GroupSampler{G: 2, Want: 1}).Collect(func(int, int) ([]float64, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
}

// When every round is all zeros the batch is filled from the set-aside groups
// in the order they were rolled.
func TestGroupSamplerFillsFromSpare(t *testing.T) {
	s := GroupSampler{G: 2, Want: 2, Dynamic: true, MaxResample: 1}
	kept, _, _ := s.Collect(func(round, need int) ([]float64, error) {
		if round == 0 {
			return []float64{1, 1, 2, 2}, nil // both zero-std, set aside
		}
		return []float64{0, 1}[:2*min(need, 1)], nil // one group with signal
	})
	if want := []int{2, 0}; !reflect.DeepEqual(kept, want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}
}
