package watch

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/pyenv"
	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// Event files written by the SummaryWriters users hold, torch.utils.tensorboard's
// and tensorboardX's at the tensorboard stack's versions
// (clients/python/locks/tensorboard.txt; testdata/summary_writers.py writes
// them): the reader reads exactly the scalars written, each at its step with
// the value the file holds (simple_value, and torch's rank-0 float and double
// tensors), and skips the histograms, texts and images beside them; the watch
// feed shows the same series.
func TestSummaryWritersRead(t *testing.T) {
	py := pyenv.Python(t, "tensorboard")
	out := t.TempDir()
	script, err := filepath.Abs(filepath.Join("testdata", "summary_writers.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script, out)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, b)
	}
	var written map[string]map[string][][2]float64 // writer → tag → [step, value]
	b, err := os.ReadFile(filepath.Join(out, "written.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	for _, writer := range []string{"torch", "tensorboardx"} {
		t.Run(writer, func(t *testing.T) {
			dir := filepath.Join(out, writer)
			want := seriesLines(written[writer])
			if len(want) == 0 {
				t.Fatalf("%s wrote no scalars", writer)
			}
			read := map[string][][2]float64{}
			if _, err := tb.NewReader(dir, false).Read(func(e *tb.Event) {
				for _, v := range e.Values {
					read[v.Tag] = append(read[v.Tag], [2]float64{float64(e.Step), v.Value})
				}
			}); err != nil {
				t.Fatal(err)
			}
			if d := seriesDiff(seriesLines(read), want); d != "" {
				t.Errorf("the reader on %s's files:\n%s", writer, d)
			}

			f := openTest(t, dir, Options{}, time.Now())
			var h history
			h.fold(f.Take())
			shown := map[string][][2]float64{}
			for name, byStep := range h.values {
				for step, v := range byStep {
					shown[name] = append(shown[name], [2]float64{float64(step), v})
				}
				slices.SortFunc(shown[name], func(a, b [2]float64) int { return int(a[0] - b[0]) })
			}
			// The feed names series as pixelis does (train/loss is loss): the
			// series themselves must be those written, each once.
			if d := seriesDiff(bySeries(shown), bySeries(read)); d != "" {
				t.Errorf("the watch feed on %s's files (series by their points):\n%s", writer, d)
			}
			t.Logf("%s: %d scalar tags read and shown: %v", writer, len(want), slices.Sorted(maps.Keys(shown)))
		})
	}
}

// seriesLines renders each tag's points as one line, for comparing and for
// readable failures.
func seriesLines(m map[string][][2]float64) map[string]string {
	out := map[string]string{}
	for tag, pts := range m {
		var b strings.Builder
		for _, p := range pts {
			fmt.Fprintf(&b, "%d:%v ", int(p[0]), p[1])
		}
		out[tag] = b.String()
	}
	return out
}

// bySeries keys each series by its points, counting repeats: a comparison
// that ignores the names.
func bySeries(m map[string][][2]float64) map[string]string {
	out := map[string]string{}
	for _, line := range seriesLines(m) {
		out[line] += "+"
	}
	return out
}

func seriesDiff(got, want map[string]string) string {
	var b strings.Builder
	for k, w := range want {
		if g, ok := got[k]; !ok {
			fmt.Fprintf(&b, "missing %s: %s\n", k, w)
		} else if g != w {
			fmt.Fprintf(&b, "%s: read %s\n   written %s\n", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "not written %s: %s\n", k, g)
		}
	}
	return b.String()
}
