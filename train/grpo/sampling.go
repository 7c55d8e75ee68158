package grpo

// GroupSampler fills a step's batch with groups that carry a learning signal
// (dynamic sampling, DAPO, Yu et al. 2025): a group of G rollouts whose
// rewards are all equal has zero advantage everywhere, so while rounds remain
// it is set aside and a fresh task is rolled out in its place.
type GroupSampler struct {
	G           int  // rollouts per task
	Want        int  // groups in a batch
	Dynamic     bool // re-roll zero-std groups; false keeps the first round as it is
	MaxResample int  // re-roll rounds after the first
}

// SamplingStats counts the groups a Collect rolled out.
type SamplingStats struct {
	Groups  int // every group rolled out, kept or not
	ZeroStd int // of those, groups whose rewards were all equal
}

// Collect runs rounds of roll until Want groups are kept. roll(round, need)
// rolls out need new groups and returns their rewards, G per group in order;
// the groups of all rounds are numbered in the order rolled. Collect returns
// the numbers of the kept groups: each round's groups with a non-zero std
// (every group in the last round), then set-aside groups to fill up the batch.
func (s GroupSampler) Collect(roll func(round, need int) ([]float64, error)) ([]int, SamplingStats, error) {
	var kept, spare []int
	var st SamplingStats
	for round := 0; len(kept) < s.Want; round++ {
		rewards, err := roll(round, s.Want-len(kept))
		if err != nil {
			return nil, st, err
		}
		last := !s.Dynamic || round >= s.MaxResample
		for _, zero := range ZeroStdGroups(rewards, s.G) {
			if zero {
				st.ZeroStd++
			}
			if zero && !last {
				spare = append(spare, st.Groups)
			} else {
				kept = append(kept, st.Groups)
			}
			st.Groups++
		}
		if last {
			break
		}
	}
	for len(kept) < s.Want && len(spare) > 0 {
		kept, spare = append(kept, spare[0]), spare[1:]
	}
	return kept, st, nil
}
