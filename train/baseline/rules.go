package baseline

import (
	"math"
	"strconv"

	"github.com/pixelis/pixelis/train/env"
)

// rule is a fixed rule over the adversary's features, with no training: the
// answer it gives a glance, "" where the family has none.
//
//	counting   the number of blobs of the asked hue
//	spatial    the asked hues' centroids compared as the relation states
//	geometric  the asked hue with more mass
//	tracking   among the asked hue's blobs the one with the most motion
//	           within two cells of its centroid (the tracked object moves, a
//	           look-alike may not): the direction of that motion's centroid
//	           from the blob's, along its larger component
func rule(g *glance) string {
	a, b := askedHue(g.colour), askedHue(g.colour2)
	switch env.Family(g.family) {
	case env.ObjectCounting:
		if a < 0 {
			return ""
		}
		return strconv.Itoa(min(len(g.blobs(a)), 5))
	case env.SpatialReasoning:
		if a < 0 || b < 0 || g.relation < 0 {
			return ""
		}
		if margin(g.relation, g.hue(a).m, g.hue(b).m) > 0 {
			return "yes"
		}
		return "no"
	case env.GeometricComparison:
		if a < 0 || b < 0 {
			return ""
		}
		if g.hue(a).m.mass >= g.hue(b).m.mass {
			return env.Colour(g.colour).String()
		}
		return env.Colour(g.colour2).String()
	case env.TemporalTracking:
		if a < 0 {
			return ""
		}
		b, ok := moving(g.blobs(a))
		if !ok {
			return ""
		}
		return direction(b.disc.x-b.m.x, b.disc.y-b.m.y)
	}
	return ""
}

// direction names the larger component of (dx, dy), y pointing down.
func direction(dx, dy float64) string {
	if math.Abs(dx) >= math.Abs(dy) {
		if dx < 0 {
			return env.Directions[0]
		}
		return env.Directions[1]
	}
	if dy < 0 {
		return env.Directions[2]
	}
	return env.Directions[3]
}
