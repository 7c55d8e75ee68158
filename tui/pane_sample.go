package tui

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// samplePane shows one sampled trajectory of the latest snapshot that had
// any: its image on the left, the question, each operation with its result
// and reward parts, and the answer against the ground truth. ←/→ browse the
// samples, ↑/↓ scroll the steps when they overflow.
type samplePane struct {
	samples []telemetry.Sample
	index   int // the sample shown
	scroll  int // steps scrolled down from the first
}

func (p samplePane) update(msg tea.Msg, _ env) pane {
	u, ok := msg.(feedMsg)
	if !ok || u.Snapshot == nil || len(u.Snapshot.Samples) == 0 {
		return p
	}
	p.samples = u.Snapshot.Samples
	if p.index >= len(p.samples) {
		p.index, p.scroll = 0, 0
	}
	return p
}

func (p samplePane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	if d, ok := browseKey(e.keys, msg); ok {
		if n := len(p.samples); n > 0 {
			p.index, p.scroll = wrap(p.index+d, n), 0
		}
		return p, true
	}
	steps := 0
	if len(p.samples) > 0 {
		steps = len(p.samples[p.index].Steps)
	}
	var used bool
	p.scroll, used = scrollKey(e.keys, msg, p.scroll, steps-1, e.page(), false)
	return p, used
}

func (samplePane) nav() (string, string) { return "sample", "steps" }

func (p samplePane) view(e env) (string, []string) {
	st, w, h := e.st, e.w, e.h
	if len(p.samples) == 0 {
		if e.kind == screenSFT {
			return "Validation trajectory", []string{st.render(st.dim, "validation episodes show here after the first validation")}
		}
		return "Sample trajectory", []string{st.render(st.dim, "no sample trajectories yet")}
	}
	i := min(p.index, len(p.samples)-1)
	s := p.samples[i]
	mark := "✗"
	if s.Correct {
		mark = "✓"
	}
	title := fmt.Sprintf("Sample trajectory %d/%d · %s · %s · step %s · R %s",
		i+1, len(p.samples), clean(s.Family), mark, fmtInt(s.Step), strings.TrimSpace(fmtSigned(s.Reward)))
	if e.kind == screenSFT {
		// SFT shows greedy validation episodes: no reward is computed.
		title = fmt.Sprintf("Validation trajectory %d/%d · %s · %s · step %s",
			i+1, len(p.samples), clean(s.Family), mark, fmtInt(s.Step))
	}

	if len(s.Views) > 0 {
		title += fmt.Sprintf(" · %d images", 1+len(s.Views))
	}
	thumb := sampleImages(st, s, w/3, h)
	thumbW := 0
	for _, line := range thumb {
		thumbW = max(thumbW, ansi.StringWidth(line)+2)
	}
	textW := w - thumbW
	text := sampleText(st, s, p.scroll, textW, h)
	out := make([]string, h)
	for y := range h {
		line := ""
		if y < len(thumb) {
			line = thumb[y] + strings.Repeat(" ", thumbW-ansi.StringWidth(thumb[y]))
		} else if thumbW > 0 {
			line = strings.Repeat(" ", thumbW)
		}
		if y < len(text) {
			line += text[y]
		}
		out[y] = line
	}
	return title, out
}

// sampleImages is the left-hand side: the sample's first view and, beside
// it when the steps returned images (a launched VLM's zoomed views), the last
// of them, in maxW columns and maxH rows. Side by side, each keeps the pane's
// height, which bounds a square image more than the width does.
func sampleImages(st *styles, s telemetry.Sample, maxW, maxH int) []string {
	if len(s.Views) == 0 {
		return thumbnail(st, s.Thumb, maxW, maxH)
	}
	first := thumbnail(st, s.Thumb, maxW/2-1, maxH)
	last := thumbnail(st, s.Views[len(s.Views)-1], maxW/2-1, maxH)
	firstW := 0
	for _, l := range first {
		firstW = max(firstW, ansi.StringWidth(l))
	}
	out := make([]string, max(len(first), len(last)))
	for y := range out {
		if y < len(first) {
			out[y] = first[y] + strings.Repeat(" ", firstW-ansi.StringWidth(first[y]))
		} else {
			out[y] = strings.Repeat(" ", firstW)
		}
		if y < len(last) {
			out[y] += " " + last[y]
		}
	}
	return out
}

// sampleText is the right-hand side: question, steps (scrolled down by
// scroll when they overflow) and the answer, in h lines of w cells.
func sampleText(st *styles, s telemetry.Sample, scrolled, w, h int) []string {
	q := st.render(st.label, "Q: ") + clean(s.Question)
	verdict := st.render(st.good, "✓")
	if !s.Correct {
		verdict = st.render(st.bad, "✗") + st.render(st.dim, " truth: ") + clean(s.GroundTruth)
	}
	ans := st.render(st.label, "A: ") + clean(s.Answer) + "  " + verdict
	steps := make([]string, len(s.Steps))
	for j, step := range s.Steps {
		steps[j] = stepLine(st, j+1, step, w)
	}
	room := max(0, h-2)
	scroll := 0
	if len(steps) > room {
		scroll = min(scrolled, len(steps)-room)
		steps = steps[scroll : scroll+room]
	}
	out := []string{q}
	out = append(out, steps...)
	out = append(out, ans)
	if s.ViewSize > 0 && s.SourceSize > 0 && len(out) < h {
		// Points are the agent's, in its view; boxes are measured in the frame.
		out = append(out, st.render(st.dim, fmt.Sprintf("view (x,y): a point in the agent's %d×%d view · source …: pixels of the %d×%d frame",
			s.ViewSize, s.ViewSize, s.SourceSize, s.SourceSize)))
	}
	if scroll > 0 && h > 0 {
		out[0] = q + st.render(st.dim, fmt.Sprintf("  (steps from %d)", scroll+1))
	}
	return out
}

// stepLine is one operation: number, op, arguments, result, misuse, and the
// reward parts it earned, right-aligned when the line is wide enough.
func stepLine(st *styles, n int, step telemetry.SampleStep, w int) string {
	left := fmt.Sprintf("%d %s", n, st.render(st.accent, clean(step.Op)))
	if step.Args != "" {
		left += " " + clean(step.Args)
	}
	if step.Result != "" {
		left += " → " + clean(step.Result)
	}
	if step.Misuse != "" {
		left += " " + st.render(st.warn, "⚠ "+clean(step.Misuse))
	}
	parts := rewardParts(step.Rewards)
	if parts == "" {
		return left
	}
	right := st.render(st.info, parts)
	pw := ansi.StringWidth(parts)
	if w-pw-2 < 20 {
		return left + "  " + right
	}
	return fit(left, w-pw-2, true) + "  " + right
}

// rewardParts writes a step's reward attribution: "coh +0.20 final +1.00".
func rewardParts(r map[string]float64) string {
	if len(r) == 0 {
		return ""
	}
	short := map[string]string{"coherence": "coh", "curiosity": "cur", "penalty": "pen"}
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sortInOrder(keys, rewardComponents)
	var parts []string
	for _, k := range keys {
		name := k
		if s, ok := short[k]; ok {
			name = s
		}
		parts = append(parts, clean(name)+" "+strings.TrimSpace(fmtSigned(r[k])))
	}
	return strings.Join(parts, " ")
}

// thumbnail draws t in at most maxW columns and maxH rows with '▀' half
// blocks: each cell shows two pixels, the upper as foreground, the lower as
// background, so pixels come out square. It scales by nearest neighbour
// (down to fit, up by whole factors while room allows). Without colour it
// falls back to a luminance ramp.
func thumbnail(st *styles, t telemetry.Thumbnail, maxW, maxH int) []string {
	if t.W <= 0 || t.H <= 0 || len(t.Pix) < t.W*t.H*3 || maxW < 2 || maxH < 1 {
		return nil
	}
	// Output size in pixels: fit maxW × 2·maxH, keeping the aspect ratio.
	scale := min(float64(maxW)/float64(t.W), float64(2*maxH)/float64(t.H))
	if scale >= 1 {
		scale = float64(int(scale)) // whole factors only: crisp pixels
	}
	sc := scaledThumb{t: t, ow: max(1, int(float64(t.W)*scale)), oh: max(1, int(float64(t.H)*scale))}
	if !st.color {
		return sc.ramp()
	}
	return sc.halfBlocks()
}

// scaledThumb is a thumbnail resampled by nearest neighbour to ow×oh pixels,
// drawn two pixel rows to a line of text.
type scaledThumb struct {
	t      telemetry.Thumbnail
	ow, oh int
}

func (s scaledThumb) px(x, y int) (r, g, b byte) {
	sx := min(s.t.W-1, x*s.t.W/s.ow)
	sy := min(s.t.H-1, y*s.t.H/s.oh)
	o := (sy*s.t.W + sx) * 3
	return s.t.Pix[o], s.t.Pix[o+1], s.t.Pix[o+2]
}

// ramp draws each cell as the mean brightness of its two pixels on a
// luminance ramp: the thumbnail without colour.
func (s scaledThumb) ramp() []string {
	const ramp = " .:-=+*#%@"
	out := make([]string, (s.oh+1)/2)
	var b strings.Builder
	for y := range out {
		b.Reset()
		for x := range s.ow {
			r, g, bl := s.px(x, 2*y)
			l := luma(r, g, bl)
			if 2*y+1 < s.oh {
				r2, g2, b2 := s.px(x, 2*y+1)
				l = (l + luma(r2, g2, b2)) / 2
			}
			b.WriteByte(ramp[min(len(ramp)-1, l*len(ramp)/256)])
		}
		out[y] = b.String()
	}
	return out
}

// halfBlocks draws each cell as '▀' with the upper pixel as foreground and
// the lower as background, in raw SGR with repeated colours elided: this is
// the densest part of the frame and lipgloss would restyle every cell.
func (s scaledThumb) halfBlocks() []string {
	out := make([]string, (s.oh+1)/2)
	var b strings.Builder
	for y := range out {
		b.Reset()
		var lastFG, lastBG [3]byte
		for x := range s.ow {
			r, g, bl := s.px(x, 2*y)
			if fg := [3]byte{r, g, bl}; x == 0 || fg != lastFG {
				b.WriteString(sgrColor(38, fg))
				lastFG = fg
			}
			if 2*y+1 < s.oh {
				r2, g2, b2 := s.px(x, 2*y+1)
				if bg := [3]byte{r2, g2, b2}; x == 0 || bg != lastBG {
					b.WriteString(sgrColor(48, bg))
					lastBG = bg
				}
			} else if x == 0 {
				b.WriteString("\x1b[49m")
			}
			b.WriteString("▀")
		}
		b.WriteString("\x1b[m")
		out[y] = b.String()
	}
	return out
}

// sgrColor sets a 24-bit colour: layer 38 is the foreground, 48 the background.
func sgrColor(layer int, c [3]byte) string {
	return "\x1b[" + strconv.Itoa(layer) + ";2;" + strconv.Itoa(int(c[0])) + ";" + strconv.Itoa(int(c[1])) + ";" + strconv.Itoa(int(c[2])) + "m"
}

// luma is the Rec. 601 brightness of a pixel, 0..255.
func luma(r, g, b byte) int {
	return (299*int(r) + 587*int(g) + 114*int(b)) / 1000
}
