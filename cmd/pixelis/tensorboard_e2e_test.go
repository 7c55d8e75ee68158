package main

import (
	"bufio"
	endian "encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/pyenv"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// Runs' tb/ directories read by the real TensorBoard (the pinned tensorboard
// stack, clients/python/locks/tensorboard.txt), through its HTTP API, with its
// Python loader (--load_fast=false) and its Rust data server
// (--load_fast=true): every scalar of metrics.jsonl at every step once, with
// its value as a float32, nothing more; the samples of samples.jsonl, one text
// record a step, on the same run-wide axis; and the events of events.jsonl, one
// text record a step (a fresh run's each at its step; a resumed run's own first
// ones, at steps before the one it resumed at, at that step).
//
// The runs: a fresh run of both phases (SFT's steps, then RFT's after them); the
// same run trained again from an SFT checkpoint and then from an RFT one (the
// steps after each were written before); one killed (SIGKILL) past a
// checkpoint, resumed from an earlier one and stopped (SIGTERM); one whose
// first file has no SessionLog START, as files had before every file opened
// with one, resumed from an SFT checkpoint; and what `pixelis export --tb`
// writes of the second.
func TestTensorBoardShowsRuns(t *testing.T) {
	py := pyenv.Python(t, "tensorboard")
	bin := buildPixelis(t)
	root := t.TempDir()
	smoke := []string{"--no-tui", "--config", "smoke", "--set", "checkpoint.every=5", "--set", "checkpoint.keep=0"}

	fresh := filepath.Join(root, "fresh")
	pixelisOK(t, bin, append([]string{"run", "--run-dir", fresh}, smoke...)...)

	resumed := filepath.Join(root, "resumed")
	pixelisOK(t, bin, append([]string{"run", "--run-dir", resumed}, smoke...)...)
	for _, ck := range []string{"step_000015", "step_000022_stage"} {
		pixelisOK(t, bin, "resume", "--no-tui", "--from", filepath.Join(resumed, "checkpoints", ck), resumed)
	}

	killed := filepath.Join(root, "killed")
	killResumeStop(t, bin, killed)

	older := filepath.Join(root, "older")
	pixelisOK(t, bin, append([]string{"run", "--run-dir", older}, smoke...)...)
	dropSessionStart(t, filepath.Join(older, tb.Dir))
	pixelisOK(t, bin, "resume", "--no-tui", "--from", filepath.Join(older, "checkpoints", "step_000015"), older)

	exported := filepath.Join(root, "exported")
	pixelisOK(t, bin, "export", resumed, "--tb", exported)

	want := map[string]tbRun{}
	for _, dir := range []string{fresh, resumed, killed, older} {
		want[filepath.Base(dir)+"/"+tb.Dir] = runFiles(t, dir)
	}
	want["exported"] = runFiles(t, resumed)
	for _, run := range []string{"fresh/" + tb.Dir, "exported"} {
		r := want[run]
		r.eventSteps = true
		want[run] = r
	}
	for _, fast := range []bool{false, true} {
		t.Run(fmt.Sprintf("load_fast=%v", fast), func(t *testing.T) {
			base := startTensorBoard(t, py, root, fast)
			var got map[string]tbRun
			var diff string
			shown := waitFor(3*time.Minute, func() bool {
				got, diff = readTensorBoard(base), ""
				for run, w := range want {
					diff += w.diff(run, got[run])
				}
				return diff == ""
			})
			if !shown {
				t.Fatalf("TensorBoard (--load_fast=%v) does not show the runs' metrics.jsonl, samples.jsonl and events.jsonl:\n%s", fast, diff)
			}
		})
	}
}

// killResumeStop trains SFT in dir, kills the run (SIGKILL) once its step-60
// checkpoint is saved, resumes it from step 40, and stops it (SIGTERM) past
// step 80: TensorBoard sees the steps 41 to about 60 twice, the first time in a
// file whose last record may be cut.
func killResumeStop(t *testing.T, bin, dir string) {
	t.Helper()
	args := []string{"--no-tui", "--run-dir", dir, "--config", "smoke", "--set", "sft.steps=3000",
		"--set", "sft.eval_every=25", "--set", "checkpoint.every=20", "--set", "checkpoint.keep=0"}
	p := startProcess(t, bin, nil, append([]string{"sft"}, args...)...)
	if !waitFor(3*time.Minute, func() bool { return dirExists(filepath.Join(dir, "checkpoints", "step_000060")) }) {
		t.Fatalf("no step-60 checkpoint\nstdout:\n%s\nstderr:\n%s", p.out, p.errOut)
	}
	p.signal(t, syscall.SIGKILL)
	p.exit(t)
	p = startProcess(t, bin, nil, "resume", "--no-tui", "--from", filepath.Join(dir, "checkpoints", "step_000040"), dir)
	// Its event file is made once metrics.jsonl is cut back to step 40 (the
	// killed run may have gone past 80).
	resuming := func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, tb.Dir, tb.FilePrefix+"*"))
		return len(files) == 2
	}
	if !waitFor(3*time.Minute, resuming) {
		t.Fatalf("the resumed run made no event file\nstdout:\n%s\nstderr:\n%s", p.out, p.errOut)
	}
	if !waitFor(3*time.Minute, func() bool { return stepWritten(filepath.Join(dir, "metrics.jsonl")) > 80 }) {
		t.Fatalf("the resumed run did not pass step 80\nstdout:\n%s\nstderr:\n%s", p.out, p.errOut)
	}
	p.signal(t, syscall.SIGTERM)
	p.exit(t)
}

// dropSessionStart rewrites the one event file in dir without its second
// record, the SessionLog START a file opens with: as files were written before.
func dropSessionStart(t *testing.T, dir string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, tb.FilePrefix+"*"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("event files in %s: %v, %v", dir, paths, err)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	// A record: its length (8 bytes, little-endian), the length's checksum
	// (4), the data, the data's checksum (4).
	size := func(off int) int { return 8 + 4 + int(endian.LittleEndian.Uint64(b[off:])) + 4 }
	second := size(0)
	b = append(b[:second:second], b[second+size(second):]...)
	if err := os.WriteFile(paths[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	restarts := 0
	if _, err := tb.NewReader(dir, false).Read(func(e *tb.Event) {
		if e.Restart {
			restarts++
		}
	}); err != nil || restarts != 0 {
		t.Fatalf("rewritten %s: %d STARTs left, %v", paths[0], restarts, err)
	}
}

func pixelisOK(t *testing.T, bin string, args ...string) {
	t.Helper()
	p := startProcess(t, bin, nil, args...)
	if code := p.exit(t); code != 0 {
		t.Fatalf("pixelis %s: exit status %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, p.out, p.errOut)
	}
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// stepWritten is the step of the last whole line of a metrics.jsonl, 0 when none.
func stepWritten(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 2; i >= 0; i-- { // the last is "" or a line being written
		var p telemetry.Point
		if json.Unmarshal([]byte(lines[i]), &p) == nil {
			return p.Step
		}
	}
	return 0
}

// tbRun is what TensorBoard should show of a run: each scalar tag's (step,
// value) series, the steps of the "samples" text records and the "events" ones.
type tbRun struct {
	scalars map[string][]stepValue
	samples []int
	events  []stepValue // value: how many events the step's record holds
	// eventSteps: the events at their steps in events.jsonl (else only as many,
	// one record a step: a resumed run's own first ones move).
	eventSteps bool
}

type stepValue struct {
	step  int
	value float32 // what the event file holds
}

// runFiles reads a run directory's metrics.jsonl and samples.jsonl.
func runFiles(t *testing.T, dir string) tbRun {
	t.Helper()
	r := tbRun{scalars: map[string][]stepValue{}}
	eachLine(t, filepath.Join(dir, "metrics.jsonl"), func(line []byte) {
		var p telemetry.Point
		if err := json.Unmarshal(line, &p); err != nil {
			t.Fatalf("%s/metrics.jsonl: %v", dir, err)
		}
		for tag, v := range p.Metrics {
			r.scalars[tag] = append(r.scalars[tag], stepValue{p.Step, float32(v)})
		}
	})
	eachLine(t, filepath.Join(dir, "samples.jsonl"), func(line []byte) {
		var s struct {
			Step int `json:"step"`
		}
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("%s/samples.jsonl: %v", dir, err)
		}
		if n := len(r.samples); n == 0 || r.samples[n-1] != s.Step {
			r.samples = append(r.samples, s.Step)
		}
	})
	var steps []int
	eachLine(t, filepath.Join(dir, "events.jsonl"), func(line []byte) {
		var e telemetry.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s/events.jsonl: %v", dir, err)
		}
		steps = append(steps, e.Step)
	})
	slices.Sort(steps) // a resumed run's first events follow the steps after them
	for _, step := range steps {
		if n := len(r.events); n > 0 && r.events[n-1].step == step {
			r.events[n-1].value++
		} else {
			r.events = append(r.events, stepValue{step, 1})
		}
	}
	if len(r.scalars) == 0 || len(r.samples) == 0 {
		t.Fatalf("%s: %d scalar tags, %d sample steps: nothing to compare", dir, len(r.scalars), len(r.samples))
	}
	return r
}

func eachLine(t *testing.T, path string, fn func([]byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// diff says how got differs from r, "" when it shows r exactly.
func (r tbRun) diff(run string, got tbRun) string {
	var b strings.Builder
	for _, tag := range unionKeys(r.scalars, got.scalars) {
		w, g := r.scalars[tag], got.scalars[tag]
		if !slices.EqualFunc(w, g, sameStepValue) {
			fmt.Fprintf(&b, "%s %s: shows %v, metrics.jsonl has %v\n", run, tag, clip(g), clip(w))
		}
	}
	if !slices.Equal(r.samples, got.samples) {
		fmt.Fprintf(&b, "%s samples: text at steps %v, samples.jsonl has %v\n", run, got.samples, r.samples)
	}
	if r.eventSteps && !slices.Equal(r.events, got.events) || !r.eventSteps && !sameEvents(r.events, got.events) {
		fmt.Fprintf(&b, "%s events: text records (step, events) %v, events.jsonl has %v\n", run, got.events, r.events)
	}
	return b.String()
}

// sameEvents: as many events, one record a step.
func sameEvents(want, got []stepValue) bool {
	count := func(s []stepValue) (n float32) {
		for _, x := range s {
			n += x.value
		}
		return n
	}
	increasing := slices.IsSortedFunc(got, func(a, b stepValue) int { return a.step - b.step }) &&
		len(slices.CompactFunc(slices.Clone(got), func(a, b stepValue) bool { return a.step == b.step })) == len(got)
	return count(want) == count(got) && increasing
}

func sameStepValue(a, b stepValue) bool {
	nan := func(v float32) bool { return math.IsNaN(float64(v)) }
	return a.step == b.step && (a.value == b.value || nan(a.value) && nan(b.value))
}

func unionKeys(a, b map[string][]stepValue) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// clip keeps a failure's message readable: a series' first twelve points.
func clip(s []stepValue) string {
	if len(s) > 12 {
		return fmt.Sprintf("%v … (%d points)", s[:12], len(s))
	}
	return fmt.Sprint(s)
}

// startTensorBoard starts the stack's `tensorboard` on logdir, on a free
// loopback port, and returns its base URL once it listens. The process (and
// the data server it starts, which ends with it) is killed when the test ends.
func startTensorBoard(t *testing.T, py, logdir string, fast bool) string {
	t.Helper()
	exe := filepath.Join(filepath.Dir(py), "tensorboard")
	// TMPDIR: where it notes itself for notebooks (.tensorboard-info), which a
	// killed server leaves behind, and its data server's port file.
	p := startProcess(t, exe, []string{"TMPDIR=" + t.TempDir()}, "--logdir", logdir, "--host", "127.0.0.1", "--port", "0",
		"--load_fast", strconv.FormatBool(fast), "--reload_interval", "1",
		// Every text record: by default TensorBoard keeps a sample of 10 a tag
		// (and of 1,000 scalars a tag, more than these runs' steps). Not 0,
		// "keep all": its text plugin then returns none.
		"--samples_per_plugin", "text=1000")
	listening := regexp.MustCompile(`TensorBoard \S+ at (http://127\.0\.0\.1:\d+/)`)
	var base string
	if !waitFor(2*time.Minute, func() bool { base = firstGroup(listening, p.errOut.String()); return base != "" }) {
		t.Fatalf("tensorboard did not start:\n%s\n%s", p.out, p.errOut)
	}
	return base
}

// readTensorBoard reads every run's scalars and sample texts through
// TensorBoard's HTTP API: /data/plugin/scalars/tags, then
// /data/plugin/scalars/scalars for each run and tag; /data/plugin/text/tags,
// then /data/plugin/text/text. A request that fails reads as no data: the
// caller polls until TensorBoard has loaded the files.
func readTensorBoard(base string) map[string]tbRun {
	out := map[string]tbRun{}
	var tags map[string]map[string]json.RawMessage
	if getJSON(base+"data/plugin/scalars/tags", &tags) != nil {
		return out
	}
	for run, byTag := range tags {
		r := tbRun{scalars: map[string][]stepValue{}}
		for tag := range byTag {
			var points [][3]float64 // wall time, step, value
			if getJSON(base+"data/plugin/scalars/scalars?"+url.Values{"run": {run}, "tag": {tag}}.Encode(), &points) != nil {
				return out
			}
			for _, p := range points {
				r.scalars[tag] = append(r.scalars[tag], stepValue{int(p[1]), float32(p[2])})
			}
		}
		out[run] = r
	}
	var texts map[string][]string // run → its text tags
	if getJSON(base+"data/plugin/text/tags", &texts) != nil {
		return out
	}
	for run := range texts {
		samples, err := readTexts(base, run, "samples")
		if err != nil {
			return out
		}
		events, err := readTexts(base, run, "events")
		if err != nil {
			return out
		}
		r := out[run]
		for _, rec := range samples {
			r.samples = append(r.samples, rec.Step)
		}
		for _, rec := range events {
			// The Text tab's HTML: each event opens with its kind in bold.
			r.events = append(r.events, stepValue{rec.Step, float32(strings.Count(rec.Text, "<strong>"))})
		}
		out[run] = r
	}
	return out
}

type textRecord struct {
	Step int    `json:"step"`
	Text string `json:"text"`
}

func readTexts(base, run, tag string) ([]textRecord, error) {
	var records []textRecord
	err := getJSON(base+"data/plugin/text/text?"+url.Values{"run": {run}, "tag": {tag}}.Encode(), &records)
	return records, err
}

// nonFinite are the tokens Python's json writes for NaN and the infinities,
// which are not JSON: they are read as strings that ParseFloat takes.
var nonFinite = strings.NewReplacer("-Infinity", `"-Inf"`, "Infinity", `"+Inf"`, "NaN", `"NaN"`)

func getJSON(u string, v any) error {
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var b strings.Builder
	if _, err := bufio.NewReader(resp.Body).WriteTo(&b); err != nil {
		return err
	}
	if pts, ok := v.(*[][3]float64); ok {
		return decodePoints(nonFinite.Replace(b.String()), pts)
	}
	return json.Unmarshal([]byte(b.String()), v)
}

// decodePoints reads [[wall_time, step, value], …] where a value may be a
// string naming a non-finite number.
func decodePoints(s string, out *[][3]float64) error {
	var raw [][3]any
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return err
	}
	*out = (*out)[:0]
	for _, r := range raw {
		var p [3]float64
		for i, x := range r {
			switch x := x.(type) {
			case float64:
				p[i] = x
			case string:
				f, err := strconv.ParseFloat(x, 64)
				if err != nil {
					return err
				}
				p[i] = f
			}
		}
		*out = append(*out, p)
	}
	return nil
}
