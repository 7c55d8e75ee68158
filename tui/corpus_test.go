package tui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/telemetry/tb"
	"github.com/pixelis/pixelis/train/telemetry/watch"
)

// corpusDir holds real runs of other trainers, published in public repositories
// (its SOURCES says whose): `pixelis watch` must read each as its files say.
const corpusDir = "../train/telemetry/watch/testdata/corpus"

// corpusRuns lists the corpus's runs.
func corpusRuns(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, e := range ents {
		if e.IsDir() {
			runs = append(runs, e.Name())
		}
	}
	if len(runs) < 11 {
		t.Fatalf("the corpus holds %d runs", len(runs))
	}
	return runs
}

// corpusClock is the watch feed's clock for the corpus: long after every run's
// last write, so each reads as done, stopped or idle wherever the test runs.
var corpusClock = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// corpusHarness is the console of `pixelis watch` on one corpus run at w×h, its
// feed's whole history folded in.
func corpusHarness(t *testing.T, run string, w, h int) *harness {
	t.Helper()
	dir := filepath.Join(corpusDir, run)
	feed, err := watch.Open(context.Background(), dir, watch.Options{Interval: time.Hour, Now: func() time.Time { return corpusClock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { feed.Close() })
	hs := newHarness(t, newFakeFeed(false), Options{Color: "never", Role: RoleWatch, RunDir: dir}, w, h)
	hs.m.feed = feed // what the console asks a watched run's feed (its runs, its settings)
	hs.send(feedMsg(feed.Take()))
	return hs
}

// Every corpus run at 120×40 and 80×24: the screen a person sees (golden), and
// every value the console holds — every point of every chart, every latest value
// a pane writes — is the file's value at that step.
func TestCorpusScreens(t *testing.T) {
	for _, run := range corpusRuns(t) {
		want := corpusValues(t, filepath.Join(corpusDir, run))
		for _, sz := range [][2]int{{120, 40}, {80, 24}} {
			w, h := sz[0], sz[1]
			t.Run(fmt.Sprintf("%s_%dx%d", run, w, h), func(t *testing.T) {
				hs := corpusHarness(t, run, w, h)
				frame := hs.frame()
				checkGeometry(t, frame, w, h)
				golden(t, fmt.Sprintf("corpus_%s_%dx%d", run, w, h), frame)
				checkValues(t, hs.m.metrics, want)
				checkKPIValues(t, hs, frame)
			})
		}
	}
}

// checkValues compares the console's store with the file's values.
func checkValues(t *testing.T, st *store, want map[string]map[int]float64) {
	t.Helper()
	if len(st.series) == 0 {
		t.Fatal("nothing read")
	}
	for name, s := range st.series {
		file, ok := want[name]
		if !ok {
			t.Errorf("%s: the file logs no such metric", name)
			continue
		}
		for _, p := range s.hist {
			if v, ok := file[p.step]; !ok || !same(v, p.v) {
				t.Errorf("%s@%d = %v on screen, %v (%v) in the file", name, p.step, p.v, v, ok)
			}
		}
		if v, ok := file[s.lastStep]; !ok || !same(v, s.latest) {
			t.Errorf("%s: newest %v at step %d, the file's %v", name, s.latest, s.lastStep, v)
		}
		last := slices.Max(mapsKeys(file))
		if s.lastStep != last {
			t.Errorf("%s: newest step %d, the file's %d", name, s.lastStep, last)
		}
	}
}

// checkKPIValues checks that each KPI chart writes its series' newest value.
func checkKPIValues(t *testing.T, hs *harness, frame string) {
	t.Helper()
	for _, c := range hs.kpi().charts {
		if c.have && !strings.Contains(frame, fmtVal(c.latest)) {
			t.Errorf("chart %s: %s not on screen", c.label, fmtVal(c.latest))
		}
	}
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func mapsKeys(m map[int]float64) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// corpusValues reads a corpus run's file as directly as its format allows — not
// through the watch feed — and names its values as the mapping does: pixelis
// name → step → value. The first value of a name at a step counts, as a trainer's
// first logging of a step does.
func corpusValues(t *testing.T, dir string) map[string]map[int]float64 {
	t.Helper()
	f, err := watch.Detect(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[int]float64{}
	var namer *watch.Namer
	add := func(step int, rec map[string]float64) {
		for k, v := range namer.Map(rec) {
			if out[k] == nil {
				out[k] = map[int]float64{}
			}
			if _, ok := out[k][step]; !ok {
				out[k][step] = v
			}
		}
	}
	m := watch.DefaultMapping()
	switch f {
	case watch.FormatTrainerState:
		namer = m.Namer(watch.NamerOptions{Trainer: "trl", HFLogs: true})
		for _, e := range trainerStateEntries(t, dir) {
			step := int(e["step"].(float64))
			rec := map[string]float64{}
			for k, v := range e {
				if x, ok := v.(float64); ok && k != "step" {
					rec[k] = x
				}
			}
			add(step, rec)
		}
	case watch.FormatTensorBoard:
		namer = m.Namer(watch.NamerOptions{})
		r := tb.NewReader(dir, true)
		steps := map[int]map[string]float64{}
		var order []int
		if _, err := r.Read(func(e *tb.Event) {
			for _, v := range e.Values {
				s := int(e.Step)
				if steps[s] == nil {
					steps[s] = map[string]float64{}
					order = append(order, s)
				}
				if _, ok := steps[s][v.Tag]; !ok {
					steps[s][v.Tag] = v.Value
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		for _, s := range order {
			add(s, steps[s])
		}
	case watch.FormatVerlJSONL, watch.FormatVerlConsole:
		namer = m.Namer(watch.NamerOptions{Trainer: "verl"})
		for _, rec := range verlRecords(t, dir, f) {
			add(rec.step, rec.values)
		}
	default:
		t.Fatalf("%s: format %q", dir, f)
	}
	return out
}

// trainerStateEntries is the log history of the trainer_state.json of the
// highest step: the output directory's own, or its last checkpoint's.
func trainerStateEntries(t *testing.T, dir string) []map[string]any {
	t.Helper()
	path := filepath.Join(dir, "trainer_state.json")
	if _, err := os.Stat(path); err != nil {
		best := -1
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "checkpoint-")); err == nil && n > best {
				best, path = n, filepath.Join(dir, e.Name(), "trainer_state.json")
			}
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		LogHistory []map[string]any `json:"log_history"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.LogHistory
}

type verlRecord struct {
	step   int
	values map[string]float64
}

// consoleLine is a verl console line: its step and the rest.
var consoleLine = regexp.MustCompile(`step:(\d+) - (.*)$`)

// verlRecords reads the one verl log of dir: a FileLogger JSONL file or a
// captured console log.
func verlRecords(t *testing.T, dir string, f watch.Format) []verlRecord {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("%s: want one log file: %v %v", dir, ents, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ents[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	var out []verlRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
	for sc.Scan() {
		line := sc.Text()
		rec := verlRecord{values: map[string]float64{}}
		if f == watch.FormatVerlJSONL {
			var j struct {
				Step int            `json:"step"`
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal([]byte(line), &j); err != nil {
				t.Fatal(err)
			}
			rec.step = j.Step
			for k, v := range j.Data {
				if x, ok := v.(float64); ok {
					rec.values[k] = x
				}
			}
		} else {
			m := consoleLine.FindStringSubmatch(ansi.ReplaceAllString(line, ""))
			if m == nil {
				continue
			}
			rec.step, _ = strconv.Atoi(m[1])
			for _, kv := range strings.Split(m[2], " - ") {
				i := strings.LastIndex(kv, ":")
				if i <= 0 {
					continue
				}
				x, err := strconv.ParseFloat(strings.TrimSpace(kv[i+1:]), 64)
				if _, dup := rec.values[strings.TrimSpace(kv[:i])]; err == nil && !dup {
					rec.values[strings.TrimSpace(kv[:i])] = x
				}
			}
		}
		out = append(out, rec)
	}
	return out
}
