package baseline

import (
	"testing"

	"github.com/pixelis/pixelis/train/env"
)

// glanceOf is a view with the given hue masses by cell (x, y) and motion.
func glanceOf(fam env.Family, colour, colour2, rel int, mass map[[3]int]float64, move map[[2]int]float64) *glance {
	g := &glance{family: int(fam), colour: colour, colour2: colour2, relation: rel, shape: -1, shape2: -1}
	for k, v := range mass {
		g.mass[k[0]][k[2]*grid+k[1]] = v
		g.fg[k[2]*grid+k[1]] += v
	}
	for k, v := range move {
		g.move[k[1]*grid+k[0]] = v
	}
	return g
}

// The fixed rules read what they say from a view: centroids compared as the
// relation states, blobs counted, masses compared, motion off a blob's centre.
func TestRulesReadTheView(t *testing.T) {
	red, cyan := int(env.Red), int(env.Cyan)
	two := map[[3]int]float64{{0, 1, 1}: 0.8, {2, 5, 1}: 0.8} // hue 0 at column 1, hue 2 at column 5
	cases := []struct {
		name string
		g    *glance
		want string
	}{
		{"left of", glanceOf(env.SpatialReasoning, red, cyan, int(env.LeftOf), two, nil), "yes"},
		{"right of", glanceOf(env.SpatialReasoning, red, cyan, int(env.RightOf), two, nil), "no"},
		{"no colours named", glanceOf(env.SpatialReasoning, -1, -1, int(env.LeftOf), two, nil), ""},
		{"two blobs", glanceOf(env.ObjectCounting, red, -1, -1, map[[3]int]float64{{0, 1, 1}: 0.8, {0, 5, 5}: 0.6, {2, 3, 3}: 0.9}, nil), "2"},
		{"heavier", glanceOf(env.GeometricComparison, red, cyan, -1, map[[3]int]float64{{0, 1, 1}: 0.3, {2, 5, 1}: 0.9, {2, 5, 2}: 0.9}, nil), "cyan"},
		{"moves right", glanceOf(env.TemporalTracking, red, -1, -1, map[[3]int]float64{{0, 3, 3}: 0.9, {0, 4, 3}: 0.5}, map[[2]int]float64{{4, 3}: 0.3, {5, 3}: 0.4}), "right"},
		{"moves up", glanceOf(env.TemporalTracking, red, -1, -1, map[[3]int]float64{{0, 3, 3}: 0.9}, map[[2]int]float64{{3, 2}: 0.4}), "up"},
		{"still", glanceOf(env.TemporalTracking, red, -1, -1, map[[3]int]float64{{0, 3, 3}: 0.9}, nil), ""},
		{"no rule", glanceOf(env.TextExtraction, red, -1, -1, two, nil), ""},
	}
	for _, c := range cases {
		if got := rule(c.g); got != c.want {
			t.Errorf("%s: rule answers %q, want %q", c.name, got, c.want)
		}
	}
}

// The hand features have one width whatever the view holds.
func TestFeaturesHaveOneWidth(t *testing.T) {
	empty := glanceOf(env.AttributeRecognition, -1, -1, -1, nil, nil)
	full := glanceOf(env.TemporalTracking, int(env.Red), int(env.Blue), int(env.Above),
		map[[3]int]float64{{0, 1, 1}: 0.8, {0, 6, 6}: 0.5, {1, 3, 3}: 1, {2, 5, 1}: 0.3, {3, 0, 7}: 0.9, {3, 7, 0}: 0.9}, map[[2]int]float64{{2, 1}: 0.5})
	if a, b := len(empty.features()), len(full.features()); a != b {
		t.Fatalf("features of an empty view %d floats, of a full one %d", a, b)
	}
}
