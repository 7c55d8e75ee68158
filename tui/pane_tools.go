package tui

import (
	"math"
	"strconv"
	"strings"
)

// toolOrder is the pixel world's operations in the order an expert uses them.
var toolOrder = []string{"SEGMENT_OBJECT_AT", "GET_PROPERTIES", "ZOOM_IN", "READ_TEXT", "TRACK_OBJECT", "ANSWER"}

// toolLabel shortens an operation name: SEGMENT_OBJECT_AT → SEGMENT,
// GET_PROPERTIES → PROPERTIES.
func toolLabel(op string) string {
	op = strings.TrimPrefix(op, "GET_")
	if i := strings.IndexByte(op, '_'); i > 0 {
		return op[:i]
	}
	return op
}

// viewTools is a bar chart of the latest step's calls per operation over
// every episode rolled out in it (metrics tools/<OP>). It draws from the
// metric store (env.metrics): the pane has no state of its own.
func viewTools(e env) (string, []string) {
	st, metrics, w, h := e.st, e.metrics, e.w, e.h
	title := "Tools (last step)"
	ops := toolOps(metrics)
	if len(ops) == 0 {
		return title, []string{st.render(st.dim, "no tool calls reported yet")}
	}
	vals := make([]float64, len(ops))
	top := 0.0
	labelW := 0
	for i, op := range ops {
		vals[i] = metrics.series["tools/"+op].latest
		if !math.IsNaN(vals[i]) {
			top = math.Max(top, vals[i])
		}
		labelW = max(labelW, len(toolLabel(op)))
	}
	labelW = min(labelW, 10)
	const numW = 6
	barW := max(1, w-labelW-numW-2)
	var out []string
	for i, op := range ops {
		if len(out) == h {
			break
		}
		frac := 0.0
		if top > 0 {
			frac = vals[i] / top
		}
		out = append(out, fit(toolLabel(op), labelW, true)+" "+st.render(st.bar, hbar(frac, barW))+" "+padLeft(fmtCount(vals[i]), numW))
	}
	return title, out
}

// toolOps is the operations the store has a tools/<OP> series for, in
// toolOrder, then any others by name.
func toolOps(metrics *store) []string {
	var ops []string
	for name := range metrics.series {
		if op, ok := strings.CutPrefix(name, "tools/"); ok {
			ops = append(ops, op)
		}
	}
	sortInOrder(ops, toolOrder)
	return ops
}

// fmtCount writes a count as an integer when it is one.
func fmtCount(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e7 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return fmtVal(v)
}
