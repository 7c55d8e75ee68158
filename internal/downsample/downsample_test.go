package downsample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

type pt struct {
	step int
	v    float64
}

func stepOf(p pt) int      { return p.step }
func valueOf(p pt) float64 { return p.v }

func TestKeepBoundsAndExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var all []pt
	for s := range 100_000 {
		if rng.IntN(3) == 0 {
			continue // uneven logging
		}
		all = append(all, pt{s, rng.NormFloat64() + float64(s)/1e4})
	}
	all[5000].v, all[60000].v = 99, -99 // spikes must survive
	kept, width := Keep(slices.Clone(all), 1, 1000, stepOf, valueOf)
	if len(kept) > 1000 || width < 2 {
		t.Fatalf("%d points at width %d", len(kept), width)
	}
	if !slices.IsSortedFunc(kept, func(a, b pt) int { return a.step - b.step }) {
		t.Fatal("steps out of order")
	}
	byStep := map[int]float64{}
	for _, p := range all {
		byStep[p.step] = p.v
	}
	for _, p := range kept {
		if v, ok := byStep[p.step]; !ok || v != p.v {
			t.Fatalf("kept %v, which was never logged", p)
		}
	}
	// Each bucket's lowest and highest value is kept.
	lo, hi := map[int]float64{}, map[int]float64{}
	for _, p := range all {
		b := bucket(p.step, width)
		if v, ok := lo[b]; !ok || p.v < v {
			lo[b] = p.v
		}
		if v, ok := hi[b]; !ok || p.v > v {
			hi[b] = p.v
		}
	}
	klo, khi := map[int]float64{}, map[int]float64{}
	for _, p := range kept {
		b := bucket(p.step, width)
		klo[b], khi[b] = math.Min(p.v, orInf(klo, b, 1)), math.Max(p.v, orInf(khi, b, -1))
	}
	for b := range lo {
		if klo[b] != lo[b] || khi[b] != hi[b] {
			t.Fatalf("bucket %d: kept %v–%v, held %v–%v", b, klo[b], khi[b], lo[b], hi[b])
		}
	}
}

func orInf(m map[int]float64, k, sign int) float64 {
	if v, ok := m[k]; ok {
		return v
	}
	return math.Inf(sign)
}

func TestKeepLeavesShortSeries(t *testing.T) {
	pts := []pt{{0, 1}, {1, 2}, {2, 3}}
	kept, width := Keep(pts, 1, 10, stepOf, valueOf)
	if len(kept) != 3 || width != 1 {
		t.Fatalf("%v %d", kept, width)
	}
}

func TestBucketFloors(t *testing.T) {
	for _, c := range []struct{ step, width, want int }{{0, 4, 0}, {3, 4, 0}, {4, 4, 1}, {-1, 4, -1}, {-4, 4, -1}, {-5, 4, -2}} {
		if got := bucket(c.step, c.width); got != c.want {
			t.Errorf("bucket(%d, %d) = %d, want %d", c.step, c.width, got, c.want)
		}
	}
}

func BenchmarkKeepAppend(b *testing.B) {
	// The amortised cost of appending to a bounded series: thin to 3/4 of the bound
	// whenever it is passed.
	var pts []pt
	width := 1
	for i := 0; b.Loop(); i++ {
		pts = append(pts, pt{i, float64(i % 97)})
		if len(pts) > 10000 {
			pts, width = Keep(pts, width, 7500, stepOf, valueOf)
		}
	}
}

// The oldest and the newest point are kept whatever their values, and points appended after a
// thinning are thinned at the width reached rather than doubling it again.
func TestKeepNewestAndWidth(t *testing.T) {
	var pts []pt
	width := 1
	for s := range 1000 {
		pts = append(pts, pt{s, 0.5}) // flat: the newest is neither lowest nor highest
		pts[len(pts)-1].v = 0.5 + float64(s%3-1)*0.1
		if len(pts) > 100 {
			pts, width = Keep(pts, width, 75, stepOf, valueOf)
		}
		if pts[len(pts)-1].step != s || pts[0].step != 0 {
			t.Fatalf("step %d: kept %d to %d", s, pts[0].step, pts[len(pts)-1].step)
		}
	}
	if width > 32 {
		t.Fatalf("width %d for 1000 steps in 100 points", width)
	}
}
