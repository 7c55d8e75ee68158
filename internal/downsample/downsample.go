// Package downsample keeps a bounded picture of a series of any length, as
// long-run dashboards do: once a series holds more points than its bound, the
// steps are cut into aligned buckets of a power-of-two width and only the lowest
// and the highest point of each bucket are kept. What is kept are real points —
// each a value logged at its step — and the extremes of every bucket survive, so
// a chart of the whole run keeps its range and its spikes, and every series
// downsampled this way spans the whole run in bounded memory.
package downsample

// Keep thins pts (ascending steps) to at most limit points: it keeps the lowest
// and highest point of each bucket of width steps (buckets start at multiples of
// width; width is what was applied before, 1 for raw points, so that points
// appended since are thinned alike), and doubles width until the points fit. The
// oldest and the newest point are always kept: a chart spans what the series does. It works in
// place and returns the points kept and the width reached. step and value read a
// point; a NaN is kept only when it opens its bucket.
func Keep[T any](pts []T, width, limit int, step func(T) int, value func(T) float64) ([]T, int) {
	limit = max(limit, 4)
	width = max(width, 1)
	if width > 1 {
		pts = thin(pts, width, step, value)
	}
	for len(pts) > limit {
		width *= 2
		pts = thin(pts, width, step, value)
	}
	return pts, width
}

// thin keeps the lowest and the highest point of each bucket of width steps, in
// step order (one point when they are the same), and the oldest and newest points.
func thin[T any](pts []T, width int, step func(T) int, value func(T) float64) []T {
	out := pts[:0]
	for i := 0; i < len(pts); {
		b := bucket(step(pts[i]), width)
		lo, hi := i, i
		j := i + 1
		for ; j < len(pts) && bucket(step(pts[j]), width) == b; j++ {
			switch v := value(pts[j]); {
			case v < value(pts[lo]):
				lo = j
			case v > value(pts[hi]):
				hi = j
			}
		}
		first, second := min(lo, hi), max(lo, hi)
		if i == 0 && first != 0 {
			out = append(out, pts[0]) // the oldest point: a chart starts where the series does
		}
		out = append(out, pts[first]) // first <= i's index < j: never overwrites an unread point
		if second != first {
			out = append(out, pts[second])
		}
		if j == len(pts) && second != j-1 {
			out = append(out, pts[j-1])
		}
		i = j
	}
	clear(pts[len(out):])
	return out
}

// bucket is the index of the bucket of width steps holding step (floor division,
// so that negative steps bucket alike).
func bucket(step, width int) int {
	q := step / width
	if step%width != 0 && step < 0 {
		q--
	}
	return q
}
