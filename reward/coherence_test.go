package reward

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/train/env"
)

// testCoherence's terms: good +0.2, repeat −0.5, bad pair −0.3, contradiction −0.5.
func TestCoherenceRules(t *testing.T) {
	c := NewCoherence(testCoherence, nil)
	P, Z, R, T := op(env.OpProperties), op(env.OpZoom), op(env.OpReadText), op(env.OpTrack)
	cases := []struct {
		name  string
		steps []env.Step
		value float64
		per   []float64
	}{
		// pairs: SEG→PROPS +0.2, PROPS→ANS 0; mean over 2 pairs
		{"good SEGMENT→GET_PROPERTIES", stepsOf(seg(1, 1), P, ans("red")), 0.1, []float64{0, 0.1, 0}},
		// SEG→ZOOM +0.2, ZOOM→READ +0.2, READ→ANS 0; 0.4/3
		{"good SEGMENT→ZOOM_IN→READ_TEXT", stepsOf(seg(1, 1), Z, R, ans("K7")), 0.4 / 3, []float64{0, 0.2 / 3, 0.2 / 3, 0}},
		{"good SEGMENT→TRACK_OBJECT", stepsOf(seg(1, 1), T), 0.2, []float64{0, 0.2}},
		{"neutral pair", stepsOf(seg(1, 1), seg(2, 2)), 0, []float64{0, 0}},
		// SEG→PROPS +0.2, PROPS→PROPS repeat −0.5; −0.3/2
		{"repeat GET_PROPERTIES", stepsOf(seg(1, 1), P, P), -0.15, []float64{0, 0.1, -0.25}},
		// +0.2 +0.2 −0.5 over 3 pairs
		{"repeat READ_TEXT", stepsOf(seg(1, 1), Z, R, R), -0.1 / 3, []float64{0, 0.2 / 3, 0.2 / 3, -0.5 / 3}},
		// repeat −0.5 and re-segmenting the same point −0.5
		{"repeat SEGMENT same point", stepsOf(seg(5, 5), seg(5, 5)), -1, []float64{0, -1}},
		// SEG→ZOOM +0.2; ZOOM→ZOOM repeat −0.5 and bad pair −0.3
		{"bad ZOOM_IN→ZOOM_IN", stepsOf(seg(1, 1), Z, Z), -0.3, []float64{0, 0.1, -0.4}},
		{"bad TRACK→TRACK", stepsOf(seg(1, 1), T, T), -0.3, []float64{0, 0.1, -0.4}},
		// SEG→PROPS +0.2; PROPS→SEG same point: bad −0.3 and re-segment −0.5
		{"bad GET_PROPERTIES→SEGMENT same point", stepsOf(seg(3, 4), P, seg(3, 4)), -0.3, []float64{0, 0.1, -0.4}},
		{"GET_PROPERTIES→SEGMENT elsewhere is fine", stepsOf(seg(3, 4), P, seg(9, 9)), 0.1, []float64{0, 0.1, 0}},
		// step 0: properties before any segment −0.5 (counted in the first pair); SEG→PROPS +0.2
		{"contradiction GET_PROPERTIES first", stepsOf(P, seg(1, 1), P), -0.15, []float64{-0.25, 0, 0.1}},
		{"contradiction TRACK_OBJECT first", stepsOf(T, ans("up")), -0.5, []float64{-0.5, 0}},
		// SEG(2,2) again two steps later: −0.5 over 2 pairs
		{"contradiction re-segmenting", stepsOf(seg(2, 2), seg(6, 6), seg(2, 2)), -0.25, []float64{0, 0, -0.25}},
		// ZOOM_IN changes the view: the same pixel is another place
		{"zoom forgets segmented points", stepsOf(seg(2, 2), Z, seg(2, 2)), 0.1, []float64{0, 0.1, 0}},
		// ZOOM before any segment is the misuse penalty's business, not a contradiction
		{"ZOOM_IN→READ_TEXT without segment", stepsOf(Z, R), 0.2, []float64{0, 0.2}},
		// raw: step0 −0.5; step1 −0.5−0.5; step2 −0.5−0.5 → −2.5/2 = −1.25, clipped to −1
		{"clipped at −1", stepsOf(P, P, P), -1, []float64{-0.2, -0.4, -0.4}},
		{"single step", stepsOf(P), 0, []float64{0}},
		{"empty", nil, 0, []float64{}},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			checkScore(t, c.Score([]*Trajectory{answered(cs.steps...)})[0], cs.value, cs.per)
		})
	}
}

// identity embeds a 2-float observation as itself.
type identity struct{}

func (identity) Dim() int                         { return 2 }
func (identity) Embed(obs []float32, d []float32) { copy(d, obs) }

// Similarity: [0.3, 0.7] → +0.1; > 0.9 or < 0.1 → −0.1; else 0. SEG→SEG at
// different points carries no other term.
func TestCoherenceSimilarity(t *testing.T) {
	c := NewCoherence(testCoherence, identity{})
	o := func(x, y int, obs ...float32) env.Step { return withObs(seg(x, y), obs...) }
	cases := []struct {
		name  string
		steps []env.Step
		value float64
	}{
		{"identical (cos 1)", stepsOf(o(1, 1, 1, 0), o(2, 2, 1, 0)), -0.1},
		{"moderate (cos 0.6)", stepsOf(o(1, 1, 1, 0), o(2, 2, 3, 4)), 0.1},
		{"between bands (cos 0.8)", stepsOf(o(1, 1, 1, 0), o(2, 2, 4, 3)), 0},
		{"orthogonal (cos 0)", stepsOf(o(1, 1, 1, 0), o(2, 2, 0, 1)), -0.1},
		{"opposite (cos −1)", stepsOf(o(1, 1, 1, 0), o(2, 2, -1, 0)), -0.1},
		{"zero embedding", stepsOf(o(1, 1, 1, 0), o(2, 2, 0, 0)), 0},
		{"missing observation", stepsOf(o(1, 1, 1, 0), seg(2, 2)), 0},
		// +0.1 (cos 0.6) then −0.1 (cos 1): 0/2
		{"two pairs cancel", stepsOf(o(1, 1, 1, 0), o(2, 2, 3, 4), o(3, 3, 3, 4)), 0},
		// SEG→PROPS +0.2 plus cos 0.6 +0.1 = 0.3
		{"adds to the pair rules", stepsOf(o(1, 1, 1, 0), withObs(op(env.OpProperties), 3, 4)), 0.3},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			checkScore(t, c.Score([]*Trajectory{answered(cs.steps...)})[0], cs.value, nil)
		})
	}
}

// A random projection keeps cosine similarities of observation-sized vectors:
// at 512 dimensions the distortion has a standard deviation near 1/√512 ≈ 0.044,
// so 20 pairs stay within 0.15 (≈ 3.4σ).
func TestRandomProjectionKeepsCosines(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	rp, err := NewRandomProjection(env.ObsDim, 512, rng)
	if err != nil {
		t.Fatal(err)
	}
	u, v := make([]float32, env.ObsDim), make([]float32, env.ObsDim)
	pu, pv := make([]float32, 512), make([]float32, 512)
	worst := 0.0
	for range 20 {
		mix := rng.Float64()
		for i := range u {
			u[i] = float32(rng.NormFloat64())
			v[i] = float32(mix*float64(u[i]) + (1-mix)*rng.NormFloat64())
		}
		rp.Embed(u, pu)
		rp.Embed(v, pv)
		c0, _ := cosine(u, v)
		c1, _ := cosine(pu, pv)
		worst = math.Max(worst, math.Abs(c0-c1))
	}
	if worst > 0.15 {
		t.Fatalf("worst cosine distortion %.3f > 0.15", worst)
	}
	// Same seed, same projection.
	rp2, _ := NewRandomProjection(env.ObsDim, 512, rand.New(rand.NewPCG(7, 1)))
	q := make([]float32, 512)
	rp2.Embed(u, q)
	for i := range q {
		if q[i] != pu[i] {
			t.Fatal("projection depends on more than the seed")
		}
	}
}
