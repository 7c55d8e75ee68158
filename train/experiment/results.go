package experiment

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Stat is one metric of one arm over its seeds: the mean and the half-width
// of its 95 % confidence interval, mean ± t₀.₉₇₅,ₙ₋₁ · sd/√n (Student's t; no
// interval from one seed).
type Stat struct {
	Mean   float64   `json:"mean"`
	CI95   float64   `json:"ci95"`
	N      int       `json:"n"`
	Values []float64 `json:"values"` // per seed, in the file's seed order (NaN: missing)
}

// ArmResult is one arm's report metrics and series.
type ArmResult struct {
	Name        string                   `json:"name"`
	Description string                   `json:"description,omitempty"`
	Metrics     map[string]Stat          `json:"metrics"`
	Series      map[string][]SeriesPoint `json:"series"`
	// Paired are the report metrics minus the baseline arm's, seed by seed
	// (absent for the baseline itself and without one).
	Paired map[string]Stat `json:"paired,omitempty"`
}

// SeriesPoint is a series' mean over seeds at one step, with its interval.
type SeriesPoint struct {
	Step int     `json:"step"`
	Mean float64 `json:"mean"`
	CI95 float64 `json:"ci95"`
	N    int     `json:"n"`
}

// Results are an experiment's tables.
type Results struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Seeds       []uint64    `json:"seeds"`
	Report      []string    `json:"report"`
	Baseline    string      `json:"baseline,omitempty"`
	Arms        []ArmResult `json:"arms"`
}

// Collect reads every arm's runs under out (finished or not) into Results.
func Collect(f *File, out string) (*Results, error) {
	res := &Results{Name: f.Name, Description: f.Description, Seeds: f.Seeds, Report: f.Report, Baseline: f.Baseline}
	want := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(f.Report), f.Series...))))
	for _, a := range f.Arms {
		ar := ArmResult{Name: a.Name, Description: a.Description, Metrics: map[string]Stat{}, Series: map[string][]SeriesPoint{}}
		perSeed := make([]runMetrics, len(f.Seeds))
		for i, seed := range f.Seeds {
			rm, err := readRun(filepath.Join(out, "runs", a.Name, fmt.Sprintf("seed-%d", seed)), want)
			if err != nil {
				return nil, err
			}
			perSeed[i] = rm
		}
		for _, m := range f.Report {
			vals := make([]float64, len(perSeed))
			for i, rm := range perSeed {
				vals[i] = rm.value(m, f.Tail)
			}
			ar.Metrics[m] = stat(vals)
		}
		for _, m := range f.Series {
			ar.Series[m] = seriesStats(perSeed, m)
		}
		res.Arms = append(res.Arms, ar)
	}
	res.pair()
	return res, unrecorded(f, out, res)
}

// unrecorded refuses, once every run has finished, a report or series metric
// that no run recorded: a name a run never writes (checkMetric caught the
// namespaces; this catches the rest).
func unrecorded(f *File, out string, res *Results) error {
	for _, j := range Plan(f, out) {
		if j.Arm != "" && j.Status() != StateDone {
			return nil // runs to come may record it
		}
	}
	var errs []error
	for _, list := range []struct {
		key   string
		names []string
	}{{"report", f.Report}, {"series", f.Series}} {
		for i, m := range list.names {
			seen := false
			for _, a := range res.Arms {
				seen = seen || a.Metrics[m].N > 0 || len(a.Series[m]) > 0
			}
			if !seen {
				errs = append(errs, fmt.Errorf("%s[%d]: no run of the experiment recorded %q (docs/metrics.md lists the metrics a run records)", list.key, i, m))
			}
		}
	}
	if len(errs) > 0 {
		return &RefusedError{errors.Join(errs...)}
	}
	return nil
}

// pair fills every other arm's Paired from the baseline's per-seed values.
func (res *Results) pair() {
	var base *ArmResult
	for i := range res.Arms {
		if res.Arms[i].Name == res.Baseline {
			base = &res.Arms[i]
		}
	}
	if base == nil {
		return
	}
	for i := range res.Arms {
		a := &res.Arms[i]
		if a == base {
			continue
		}
		a.Paired = map[string]Stat{}
		for _, m := range res.Report {
			x, y := a.Metrics[m].Values, base.Metrics[m].Values
			d := make([]float64, len(x))
			for k := range x {
				d[k] = x[k] - y[k] // NaN when either seed is missing
			}
			a.Paired[m] = stat(d)
		}
	}
}

// runMetrics are one run's recorded values of the wanted metrics, by step.
type runMetrics map[string][]point

type point struct {
	step int
	v    float64
}

// readRun reads metrics.jsonl of a run directory; a run not started yet has none.
func readRun(dir string, want []string) (runMetrics, error) {
	rm := runMetrics{}
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if os.IsNotExist(err) {
		return rm, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec struct {
			Step int                `json:"step"`
			M    map[string]float64 `json:"m"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue // a line cut by a kill; the run's own resume trims it
		}
		for _, w := range want {
			if v, ok := rec.M[w]; ok {
				rm[w] = append(rm[w], point{rec.Step, v})
			}
		}
	}
	return rm, sc.Err()
}

// value is a test metric's last value, or a training metric's mean over its
// last tail points; NaN when the run never recorded it.
func (rm runMetrics) value(name string, tail int) float64 {
	ps := rm[name]
	if len(ps) == 0 {
		return math.NaN()
	}
	if strings.HasPrefix(name, "test/") {
		return ps[len(ps)-1].v
	}
	ps = ps[max(0, len(ps)-tail):]
	var s float64
	for _, p := range ps {
		s += p.v
	}
	return s / float64(len(ps))
}

func seriesStats(runs []runMetrics, name string) []SeriesPoint {
	bySteps := map[int][]float64{}
	for _, rm := range runs {
		for _, p := range rm[name] {
			bySteps[p.step] = append(bySteps[p.step], p.v)
		}
	}
	steps := make([]int, 0, len(bySteps))
	for s := range bySteps {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	out := make([]SeriesPoint, len(steps))
	for i, s := range steps {
		st := stat(bySteps[s])
		out[i] = SeriesPoint{Step: s, Mean: st.Mean, CI95: st.CI95, N: st.N}
	}
	return out
}

// stat is the mean and 95 % interval of the finite values.
// NewStat is the mean of vals and its 95 % interval (Student's t), as the
// experiment reports each arm's metrics and paired differences; NaN and
// infinite values are left out.
func NewStat(vals []float64) Stat { return stat(vals) }

func stat(vals []float64) Stat {
	st := Stat{Values: vals}
	var xs []float64
	for _, v := range vals {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			xs = append(xs, v)
		}
	}
	st.N = len(xs)
	if st.N == 0 {
		st.Mean, st.CI95 = math.NaN(), math.NaN()
		return st
	}
	for _, x := range xs {
		st.Mean += x
	}
	st.Mean /= float64(st.N)
	if st.N < 2 {
		st.CI95 = math.NaN()
		return st
	}
	var ss float64
	for _, x := range xs {
		ss += (x - st.Mean) * (x - st.Mean)
	}
	sd := math.Sqrt(ss / float64(st.N-1))
	st.CI95 = tQuantile975(st.N-1) * sd / math.Sqrt(float64(st.N))
	return st
}

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of freedom.
func tQuantile975(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df >= 1 && df <= len(table) {
		return table[df-1]
	}
	return 1.96
}

// Write puts results.json, results.csv, results.md and the series plots into out.
func (res *Results) Write(out string) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.json"), b, 0o644); err != nil {
		return err
	}
	if err := res.writeCSV(filepath.Join(out, "results.csv")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(res.Markdown()), 0o644); err != nil {
		return err
	}
	return res.plot(out)
}

// writeCSV writes one row per (arm, seed, metric): the tidy form spreadsheets
// and pandas read directly.
func (res *Results) writeCSV(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"arm", "seed", "metric", "value"})
	for _, a := range res.Arms {
		for _, m := range res.Report {
			for i, v := range a.Metrics[m].Values {
				_ = w.Write([]string{a.Name, strconv.FormatUint(res.Seeds[i], 10), m, formatCSV(v)})
			}
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func formatCSV(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// Markdown is results.md: the description, then one table of the report
// metrics, mean ± 95 % interval over seeds, each arm a row.
func (res *Results) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", res.Name)
	if res.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(res.Description))
	}
	fmt.Fprintf(&b, "Seeds %v. Each cell: mean ± half-width of the 95 %% confidence interval over seeds (Student's t).\n\n", res.Seeds)
	res.table(&b, "arm", func(a ArmResult) map[string]Stat { return a.Metrics }, "%.3f")
	if res.Baseline != "" {
		fmt.Fprintf(&b, "\nPaired with **%s**: each arm minus %s on the same seed (the same SFT model and tasks), mean ± 95 %% interval over seeds.\n\n", res.Baseline, res.Baseline)
		res.table(&b, "arm − "+res.Baseline, func(a ArmResult) map[string]Stat { return a.Paired }, "%+.3f")
	}
	for _, a := range res.Arms {
		if a.Description != "" {
			fmt.Fprintf(&b, "\n- **%s**: %s", a.Name, a.Description)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// table writes one row per arm that has stats (of stats(arm)), one column per
// report metric, each cell the mean in format ± the interval.
func (res *Results) table(b *strings.Builder, first string, stats func(ArmResult) map[string]Stat, format string) {
	fmt.Fprintf(b, "| %s | n |", first)
	for _, m := range res.Report {
		fmt.Fprintf(b, " %s |", m)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(res.Report)) + "\n")
	for _, a := range res.Arms {
		st := stats(a)
		if st == nil {
			continue
		}
		n := 0
		for _, m := range res.Report {
			n = max(n, st[m].N)
		}
		fmt.Fprintf(b, "| %s | %d |", a.Name, n)
		for _, m := range res.Report {
			fmt.Fprintf(b, " %s |", formatStat(st[m], format))
		}
		b.WriteString("\n")
	}
}

// formatStat is "mean ± interval" with the mean in format, "—" without a value.
func formatStat(s Stat, format string) string {
	switch {
	case s.N == 0:
		return "—"
	case math.IsNaN(s.CI95):
		return fmt.Sprintf(format, s.Mean)
	}
	return fmt.Sprintf(format+" ± %.3f", s.Mean, s.CI95)
}

// MarshalJSON writes NaN (no value, no interval) as null.
func (s Stat) MarshalJSON() ([]byte, error) {
	vals := make([]*float64, len(s.Values))
	for i := range s.Values {
		if v := s.Values[i]; !math.IsNaN(v) {
			vals[i] = &v
		}
	}
	return json.Marshal(struct {
		Mean   *float64   `json:"mean"`
		CI95   *float64   `json:"ci95"`
		N      int        `json:"n"`
		Values []*float64 `json:"values"`
	}{nanNull(s.Mean), nanNull(s.CI95), s.N, vals})
}

// MarshalJSON writes a NaN interval as null.
func (p SeriesPoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Step int      `json:"step"`
		Mean *float64 `json:"mean"`
		CI95 *float64 `json:"ci95"`
		N    int      `json:"n"`
	}{p.Step, nanNull(p.Mean), nanNull(p.CI95), p.N})
}

func nanNull(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}
