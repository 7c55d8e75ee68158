package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/pixelis/pixelis/train/telemetry"
)

// rewardTerms are the run's reward components in scoring order, as its
// snapshot lists them (telemetry.Snapshot.Rewards: the reward registry's terms
// the run was built with); none for a watched run or before RFT.
type rewardTerms []telemetry.RewardTerm

// termsOf is the reward components snapshot s lists.
func termsOf(s *telemetry.Snapshot) rewardTerms {
	if s == nil {
		return nil
	}
	return s.Rewards
}

// names are the components' names in scoring order.
func (ts rewardTerms) names() []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// weighted are the names of the components a curriculum stage weighs.
func (ts rewardTerms) weighted() []string {
	var out []string
	for _, t := range ts {
		if !t.Priced {
			out = append(out, t.Name)
		}
	}
	return out
}

// short is the label of component name beside a sample's step.
func (ts rewardTerms) short(name string) string {
	for _, t := range ts {
		if t.Name == name && t.Short != "" {
			return t.Short
		}
	}
	return name
}

// viewReward shows each reward component's latest batch value and its moving
// average as a bar that grows right of the axis when positive and left when
// negative. A component weighted 0 in the current stage is dimmed: it is
// computed but does not count yet. Components are raw batch means; the last
// row is what GRPO receives, Σ w·z + penalty + cost over the z-scored
// components, labelled so: it centres near zero by construction and reads
// negative when dynamic sampling dropped the groups that all succeeded. For a
// watched run the components are its reward functions (TRL's
// rewards/<name>/mean) and the last row its mean reward. It draws from the
// metric store (env.metrics): the pane has no state of its own.
func viewReward(e env) (string, []string) {
	st, metrics, w, h := e.st, e.metrics, e.w, e.h
	title, totalName := "Reward (batch · MA 100 steps)", "Σ w·z"
	if e.kind == screenWatch {
		title, totalName = "Reward · MA 100 steps", "reward"
	}
	rows, scale := rewardRows(metrics, termsOf(e.snap).names())
	if len(rows) == 0 && metrics.get("reward/total") == nil {
		msg := "no rewards until RFT starts"
		if e.kind == screenWatch {
			msg = "no reward metrics (see --map)"
		}
		return title, []string{st.render(st.dim, msg)}
	}
	total := rewardRow{name: totalName}
	if s := metrics.get("reward/total"); s != nil {
		total.v, total.ok = s.latest, true
		total.ma, _ = s.meanSteps(maWindow)
	}
	if suffix := commonSuffix(rows); suffix != "" {
		// TRL's reward functions are often all named *_reward_func: what tells
		// them apart is what comes before.
		for i := range rows {
			rows[i].name = strings.TrimSuffix(rows[i].name, suffix)
		}
		title += " · *" + suffix
	}
	nameW, weights, stds := rewardNameW, false, false
	for _, r := range rows {
		nameW = max(nameW, len([]rune(r.name))+1)
		weights = weights || r.haveWeight
		stds = stds || r.haveStd
	}
	cols := newRewardColumns(st, w, nameW, weights, stds)
	// The total keeps its row however many components there are (a blank line
	// before it when there is room): the ones that do not fit are counted, and a
	// lists them all.
	room, gap := h, ""
	if total.ok {
		room--
		if len(rows) < room {
			room, gap = room-1, "gap"
		}
	}
	var out []string
	for i, r := range rows {
		if len(rows) > room && i == room-1 {
			out = append(out, st.render(st.dim, fit(fmt.Sprintf("… %d more · a lists every metric", len(rows)-i), w, false)))
			break
		}
		out = append(out, cols.line(r, scale))
	}
	if total.ok && h > len(out) {
		if gap != "" {
			out = append(out, "")
		}
		out = append(out, cols.line(total, math.Max(scale, math.Abs(total.v))))
	}
	if h >= len(out)+1 {
		if s := metrics.get("reward/total"); s != nil {
			if lo, hi, n := s.rangeSteps(maWindow); n > 0 {
				line := fmt.Sprintf("%s, last %d steps: %s … %s", totalName, maWindow, fmtSigned(lo), fmtSigned(hi))
				out = append(out, st.render(st.dim, fit(line, w, false)))
			}
		}
	}
	if len(out) > h {
		out = out[:h]
	}
	return title, out
}

// rewardRow is one reward component: its latest batch value, moving average
// and weight in the current stage.
type rewardRow struct {
	name       string
	v, ma      float64
	ok         bool
	weight     float64
	haveWeight bool
	std        float64 // the spread over the batch, when the run logs it (TRL's rewards/<f>/std)
	haveStd    bool
}

// rewardRows reads the components from the store — pixelis's in their
// order, then any other reward/<name>/raw (a watched run's reward functions)
// by name — with the scale their bars share: the largest finite |value|, at
// least 1.
func rewardRows(metrics *store, order []string) ([]rewardRow, float64) {
	var names []string
	for name := range metrics.series {
		if c, ok := strings.CutPrefix(name, "reward/"); ok {
			if c, ok := strings.CutSuffix(c, "/raw"); ok {
				names = append(names, c)
			}
		}
	}
	sortInOrder(names, order)
	var rows []rewardRow
	scale := 1.0
	for _, c := range names {
		s := metrics.get("reward/" + c + "/raw")
		r := rewardRow{name: c, v: s.latest, ok: true}
		r.ma, _ = s.meanSteps(maWindow)
		r.weight, r.haveWeight = metrics.latestValue("curriculum/weight/" + c)
		r.std, r.haveStd = metrics.latestValue("reward/" + c + "/std")
		if !math.IsNaN(r.v) && !math.IsInf(r.v, 0) {
			scale = math.Max(scale, math.Abs(r.v))
		}
		rows = append(rows, r)
	}
	return rows, scale
}

// rewardColumns lays a reward row out in a pane w cells wide: name, bar,
// value · MA, and the weight (or a watched run's spread, ± its std) when there
// is room.
type rewardColumns struct {
	st                *styles
	showW, showStd    bool
	nameW, wcol, half int
}

const rewardNameW, rewardNumW = 11, 13

// newRewardColumns fits the columns in w cells: names as wide as the longest
// (a watched run's reward functions have long names) while the bar keeps 9
// cells, and the weights only when the run has them and there is room.
func newRewardColumns(st *styles, w, nameW int, weights, stds bool) rewardColumns {
	c := rewardColumns{st: st, showW: weights && w >= 52}
	c.showStd = stds && !c.showW && w >= 40
	switch {
	case c.showW:
		c.wcol = 6
	case c.showStd:
		c.wcol = 6
	}
	minBar := 9
	if c.showStd {
		minBar = 5 // the spread is worth more than a finer bar
	}
	c.nameW = max(rewardNameW, min(nameW, w-rewardNumW-c.wcol-1-minBar))
	barW := max(3, w-c.nameW-rewardNumW-c.wcol-1)
	c.half = (barW - 1) / 2
	return c
}

func (c rewardColumns) line(r rewardRow, scale float64) string {
	st := c.st
	var b strings.Builder
	b.WriteString(fitMiddle(r.name, c.nameW-1) + " ")
	if !r.ok {
		b.WriteString(strings.Repeat(" ", c.half) + st.render(st.dim, "│") + strings.Repeat(" ", c.half))
		b.WriteString(padLeft("—", rewardNumW))
	} else {
		b.WriteString(divergingBar(st, r.v, scale, c.half))
		b.WriteString(" " + padLeft(fmtSigned(r.v), 5) + st.render(st.dim, " · ") + padLeft(fmtSigned(r.ma), 5))
	}
	if c.showW {
		ws := ""
		if r.haveWeight {
			ws = "×" + fmtShort(r.weight)
		}
		b.WriteString(" " + padLeft(ws, c.wcol-1))
	}
	if c.showStd {
		sd := ""
		if r.haveStd {
			sd = "±" + fmtShort(r.std)
		}
		b.WriteString(" " + padLeft(sd, c.wcol-1))
	}
	s := b.String()
	if r.haveWeight && r.weight == 0 {
		// Plain text under one dim style; the sign stays in the number.
		return st.render(st.dim, ansi.Strip(s))
	}
	return s
}

// divergingBar draws v/scale over two halves of n cells around a centre axis:
// negative values fill leftwards (in half cells, the finest a left-growing
// bar can draw), positive rightwards (in eighths).
func divergingBar(st *styles, v, scale float64, n int) string {
	if math.IsNaN(v) {
		v = 0
	}
	frac := math.Max(-1, math.Min(1, v/scale))
	left := strings.Repeat(" ", n)
	right := strings.Repeat(" ", n)
	if frac < 0 {
		halves := int(math.Round(-frac * float64(2*n)))
		full, part := halves/2, halves%2
		s := strings.Repeat("█", full)
		if part == 1 {
			s = "▐" + s
		}
		left = strings.Repeat(" ", n-full-part) + st.render(st.barNeg, s)
	} else if frac > 0 {
		right = st.render(st.barPos, hbar(frac, n))
	}
	return left + st.render(st.dim, "│") + right
}

// fitMiddle fits a name in n cells, cutting from its middle: reward functions
// often share a long prefix (mixed_correctness_a, mixed_correctness_b) and differ
// at the end. a lists the full names.
func fitMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 5 {
		return fit(s, n, true)
	}
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// commonSuffix is the ending all components' names share from a "_" or "/" on
// ("_reward_func"), when they are long enough to be cut and it is 4 characters or
// more; "" otherwise.
func commonSuffix(rows []rewardRow) string {
	if len(rows) < 2 {
		return ""
	}
	longest, suffix := 0, rows[0].name
	for _, r := range rows {
		longest = max(longest, len(r.name))
		for !strings.HasSuffix(r.name, suffix) {
			suffix = suffix[1:]
		}
	}
	i := strings.IndexAny(suffix, "_/")
	if i < 0 || longest <= rewardNameW+7 {
		return ""
	}
	suffix = suffix[i:]
	for _, r := range rows {
		if len(r.name) <= len(suffix) {
			return ""
		}
	}
	if len(suffix) < 4 {
		return ""
	}
	return suffix
}
