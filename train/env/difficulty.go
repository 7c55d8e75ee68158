package env

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Difficulty weights. A sample's composite score is
//
//	0.5·steps + Σ opWeight[op] + familyWeight[family]
//	  + 0.3·objects + 0.5·distractors + (36 − target size)/16
//	  + 1·confusable + 1.5·mistakes + 1·skipped tries
//
// Operation weights rank sophistication (TRACK > READ > ZOOM > PROPERTIES >
// SEGMENT); family weights rank how many distinct skills the family chains;
// objects and distractors (others sharing a referred object's colour or
// shape) make the scene harder to search; a small target is harder to hit
// and its label is read at a smaller zoom; a confusable scene misleads the
// coarse view. Error patterns count as the seed's difficulty does: each
// avoided mistake and each skipped wrong try of a demonstration makes it
// harder.
var (
	opWeight     = [NumOps]float64{OpSegment: 1, OpProperties: 1.5, OpZoom: 2, OpReadText: 2.5, OpTrack: 3, OpAnswer: 0}
	familyWeight = [NumFamilies]float64{
		AttributeRecognition: 0, ObjectCounting: 1, SpatialReasoning: 1.5,
		GeometricComparison: 1.5, TextExtraction: 2, TemporalTracking: 2,
	}
)

// Buckets are the difficulty names, easiest first.
var Buckets = []string{"simple", "medium", "hard"}

// ScoreDifficulty is the composite difficulty of a sample (see the weights).
func ScoreDifficulty(s Sample) float64 {
	score := 0.5 * float64(len(s.Trajectory))
	for _, st := range s.Trajectory {
		if op, err := ParseOp(st.Action); err == nil {
			score += opWeight[op]
		}
	}
	if f, err := ParseFamily(s.TaskType); err == nil {
		score += familyWeight[f]
	}
	score += 0.3*float64(s.NumObjects) + 0.5*float64(s.Distractors)
	if s.TargetSize > 0 {
		score += float64(36-s.TargetSize) / 16
	}
	if s.Confusable {
		score++
	}
	for _, st := range s.Trajectory {
		switch st.Role {
		case RoleAvoid.String():
			score += 1.5
		case RoleSkip.String():
			score++
		}
	}
	return score
}

// AssignBuckets sets Difficulty from each sample's rank by DifficultyScore:
// below the 33rd percentile simple, below the 66th medium, else hard. Ties
// are broken by sample id so the split is exact thirds and reproducible.
func AssignBuckets(samples []Sample) {
	idx := make([]int, len(samples))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(samples[a].DifficultyScore, samples[b].DifficultyScore),
			cmp.Compare(samples[a].SampleID, samples[b].SampleID))
	})
	n := len(samples)
	for rank, i := range idx {
		samples[i].Difficulty = Buckets[min(rank*3/max(n, 1), 2)]
	}
}

// Summary counts samples per family and difficulty bucket, and per type.
type Summary struct {
	Total     int
	Types     map[string]int
	Counts    [NumFamilies][4]int // simple, medium, hard, unbucketed
	MeanSteps float64
}

// Summarize counts samples by family and bucket.
func Summarize(samples []Sample) Summary {
	s := Summary{Types: map[string]int{}}
	steps := 0
	for _, x := range samples {
		f, err := ParseFamily(x.TaskType)
		if err != nil {
			continue
		}
		b := slices.Index(Buckets, x.Difficulty)
		if b < 0 {
			b = 3
		}
		s.Counts[f][b]++
		s.Total++
		steps += len(x.Trajectory)
		s.Types[x.SampleType]++
	}
	if s.Total > 0 {
		s.MeanSteps = float64(steps) / float64(s.Total)
	}
	return s
}

// String renders the summary as a table.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %7s %7s %7s %7s %7s\n", "family", "simple", "medium", "hard", "none", "total")
	var col [4]int
	for f := range NumFamilies {
		c := s.Counts[f]
		fmt.Fprintf(&b, "%-22s %7d %7d %7d %7d %7d\n", f, c[0], c[1], c[2], c[3], c[0]+c[1]+c[2]+c[3])
		for i := range col {
			col[i] += c[i]
		}
	}
	fmt.Fprintf(&b, "%-22s %7d %7d %7d %7d %7d\n", "all", col[0], col[1], col[2], col[3], s.Total)
	var types []string
	for _, t := range SampleTypes {
		if n := s.Types[t]; n > 0 {
			types = append(types, fmt.Sprintf("%s %d", t, n))
		}
	}
	fmt.Fprintf(&b, "%s · mean trajectory %.2f steps\n", strings.Join(types, " · "), s.MeanSteps)
	return b.String()
}
