package baseline

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/pixelis/pixelis/train/env"
)

// Options size the probe.
type Options struct {
	TrainTasks int     // training-split tasks of all families; the last ValShare of each family's is the validation slice
	TestTasks  int     // test-split tasks the probes are scored on
	ValShare   float64 // share of the training tasks held out for early stopping and for choosing the best probe
	// NetTasks caps the training tasks per family that the two large networks
	// (the MLP on the whole observation and the CNN) learn from; 0: all.
	NetTasks  int
	MaxEpochs int // epochs of the large networks at most (the hand-feature MLP gets three times as many)
	Patience  int // epochs without a better validation accuracy before a network stops
	Workers   int // families trained at once; 0: 1
	Seed      uint64
}

// FullOptions is the probe of `pixelis data probe`: 10,000 training tasks a
// family, every network trained until its validation accuracy stops improving.
func FullOptions(seed uint64) Options {
	return Options{TrainTasks: 60000, TestTasks: 12000, ValShare: 0.1, MaxEpochs: 40, Patience: 4, Workers: 2, Seed: seed}
}

// ReducedOptions is the probe of the CI test: the hand features and the rules
// as in the full probe, the networks on fewer tasks for fewer epochs.
func ReducedOptions(seed uint64) Options {
	return Options{TrainTasks: 60000, TestTasks: 6000, ValShare: 0.1, NetTasks: 3000, MaxEpochs: 6, Patience: 2, Workers: 2, Seed: seed}
}

// Validate names the first bad option.
func (o Options) Validate() error {
	switch {
	case o.TrainTasks < 10:
		return fmt.Errorf("train tasks %d: must be at least 10", o.TrainTasks)
	case o.TestTasks < 1:
		return fmt.Errorf("test tasks %d: must be at least 1", o.TestTasks)
	case !(o.ValShare > 0 && o.ValShare < 1):
		return fmt.Errorf("validation share %v: must be in (0, 1)", o.ValShare)
	case o.NetTasks < 0:
		return fmt.Errorf("network tasks %d: must not be negative", o.NetTasks)
	case o.MaxEpochs < 1 || o.Patience < 1:
		return fmt.Errorf("epochs %d and patience %d: must be at least 1", o.MaxEpochs, o.Patience)
	}
	return nil
}

// Probe names, in the report's column order.
const (
	ProbeMLP  = "mlp"  // an MLP on the whole first observation
	ProbeCNN  = "cnn"  // a CNN over the 8×8 cells, with the global block and the hand features
	ProbeHand = "hand" // the hand features into a small MLP
	ProbeRule = "rule" // a fixed rule over the hand features
)

// Probes lists the probe names in column order.
var Probes = []string{ProbeMLP, ProbeCNN, ProbeHand, ProbeRule}

// Score is one probe's result on one family.
type Score struct {
	Probe     string  `json:"probe"`
	Val       float64 `json:"val"`        // accuracy on the validation slice
	Test      float64 `json:"test"`       // accuracy on the test tasks
	Clear     float64 `json:"clear"`      // on the test tasks drawn without a look-alike
	LookAlike float64 `json:"look_alike"` // on those drawn confusable
	Epochs    int     `json:"epochs,omitempty"`
}

// Family is one family's result: every probe's score, and the best by
// validation accuracy, which is the family's no-tool baseline.
type Family struct {
	Family         string  `json:"family"`
	Shortcut       bool    `json:"shortcut"` // a declared shortcut family (env.Family.Shortcut)
	Tasks          int     `json:"tasks"`
	ClearTasks     int     `json:"clear_tasks"`
	Majority       float64 `json:"majority"` // share of test tasks whose answer is the training split's most common
	Scores         []Score `json:"scores"`   // in Probes order; a family without a rule has no rule score
	Best           Score   `json:"best"`
	BestOnTestOnly float64 `json:"best_on_test"` // the highest test accuracy of any probe (for reference)
}

// Report is the probe's result, in the config's family order.
type Report struct {
	Options  Options  `json:"options"`
	Families []Family `json:"families"`
}

// sample is a task's first observation with what it is scored on.
type sample struct {
	obs        []float32
	hand       []float32
	rule       string
	family     env.Family
	answer     string
	confusable bool
}

// Run probes cfg's world: generates the tasks, trains every probe of every
// family and scores them on the test tasks.
func Run(ctx context.Context, cfg env.Config, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rd, err := newReader(env.Layout())
	if err != nil {
		return nil, err
	}
	workers := max(opts.Workers, 1)
	train, err := observe(ctx, cfg, rd, env.Train, opts.TrainTasks, workers)
	if err != nil {
		return nil, err
	}
	test, err := observe(ctx, cfg, rd, env.Test, opts.TestTasks, workers)
	if err != nil {
		return nil, err
	}
	rep := &Report{Options: opts, Families: make([]Family, len(cfg.Families))}
	var wg sync.WaitGroup
	errs := make([]error, len(cfg.Families))
	sem := make(chan struct{}, workers)
	for i, f := range cfg.Families {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fr, err := probeFamily(ctx, f, of(train, f), of(test, f), opts, rd)
			rep.Families[i], errs[i] = fr, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rep, nil
}

// observe is the first observation of n tasks of a split, with their hand
// features and rule answers, computed by workers goroutines.
func observe(ctx context.Context, cfg env.Config, rd *reader, split env.Split, n, workers int) ([]sample, error) {
	out := make([]sample, n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ep := env.NewEpisode(cfg)
			for i := w; i < n && ctx.Err() == nil; i += workers {
				t := env.Generate(cfg, split, i)
				ep.Reset(t)
				obs := make([]float32, env.ObsDim)
				ep.Observe(obs)
				g := rd.read(obs)
				out[i] = sample{obs: obs, hand: g.features(), rule: rule(g), family: t.Family, answer: t.Answer, confusable: t.Confusable}
			}
		}()
	}
	wg.Wait()
	return out, ctx.Err()
}

// of is the samples of family f, in order.
func of(s []sample, f env.Family) []sample {
	var out []sample
	for i := range s {
		if s[i].family == f {
			out = append(out, s[i])
		}
	}
	return out
}

func probeFamily(ctx context.Context, f env.Family, train, test []sample, opts Options, rd *reader) (Family, error) {
	fr := Family{Family: f.String(), Shortcut: f.Shortcut(), Tasks: len(test)}
	nVal := max(1, int(float64(len(train))*opts.ValShare))
	if len(train)-nVal < 2 || len(test) == 0 {
		return fr, fmt.Errorf("%s: too few tasks to probe (%d training, %d test)", f, len(train), len(test))
	}
	fit, val := train[:len(train)-nVal], train[len(train)-nVal:]
	classes := answers(train)
	major := majority(train)
	for _, s := range test {
		if s.answer == major {
			fr.Majority++
		}
		if !s.confusable {
			fr.ClearTasks++
		}
	}
	fr.Majority /= float64(len(test))
	rng := rand.New(rand.NewPCG(opts.Seed, uint64(f)+0x9b0be))
	netFit := fit
	if opts.NetTasks > 0 && len(netFit) > opts.NetTasks {
		netFit = netFit[:opts.NetTasks]
	}
	for _, p := range Probes {
		var predict func([]sample) ([]string, error)
		var epochs int
		var err error
		switch p {
		case ProbeRule:
			if !slices.ContainsFunc(train, func(s sample) bool { return s.rule != "" }) {
				continue // no rule answers this family's questions
			}
			predict = func(s []sample) ([]string, error) {
				out := make([]string, len(s))
				for i := range s {
					out[i] = s[i].rule
				}
				return out, nil
			}
		default:
			predict, epochs, err = trainProbe(ctx, p, netFit, fit, val, classes, opts, rng)
			if err != nil {
				return fr, fmt.Errorf("%s: %s probe: %w", f, p, err)
			}
		}
		sc, err := score(p, predict, val, test)
		if err != nil {
			return fr, fmt.Errorf("%s: %s probe: %w", f, p, err)
		}
		sc.Epochs = epochs
		fr.Scores = append(fr.Scores, sc)
	}
	for i, sc := range fr.Scores {
		if i == 0 || sc.Val > fr.Best.Val {
			fr.Best = sc
		}
		fr.BestOnTestOnly = max(fr.BestOnTestOnly, sc.Test)
	}
	return fr, nil
}

// score is a probe's accuracy on the validation and the test samples.
func score(p string, predict func([]sample) ([]string, error), val, test []sample) (Score, error) {
	sc := Score{Probe: p}
	pv, err := predict(val)
	if err != nil {
		return sc, err
	}
	pt, err := predict(test)
	if err != nil {
		return sc, err
	}
	var right, clear, rightClear int
	for i := range val {
		if pv[i] == val[i].answer {
			right++
		}
	}
	sc.Val = ratio(right, len(val))
	right = 0
	for i, s := range test {
		ok := pt[i] == s.answer
		if ok {
			right++
		}
		if !s.confusable {
			clear++
			if ok {
				rightClear++
			}
		}
	}
	sc.Test = ratio(right, len(test))
	sc.Clear = ratio(rightClear, clear)
	sc.LookAlike = ratio(right-rightClear, len(test)-clear)
	return sc, nil
}

// answers are the distinct answers of the samples, sorted: a family's classes.
func answers(s []sample) []string {
	var out []string
	for i := range s {
		if !slices.Contains(out, s[i].answer) {
			out = append(out, s[i].answer)
		}
	}
	slices.Sort(out)
	return out
}

// majority is the most common answer (the first in sorted order on ties).
func majority(s []sample) string {
	counts := map[string]int{}
	for i := range s {
		counts[s[i].answer]++
	}
	best := ""
	for _, a := range answers(s) {
		if best == "" || counts[a] > counts[best] {
			best = a
		}
	}
	return best
}

// share formats an accuracy over n tasks, "—" when there are none.
func share(v float64, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", v)
}

// String renders the report as a table: every probe's test accuracy, then
// the best probe by validation accuracy with its clear / look-alike split.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %5s %8s", "family", "tasks", "majority")
	for _, p := range Probes {
		fmt.Fprintf(&b, " %6s", p)
	}
	fmt.Fprintf(&b, "  %-11s %6s %10s  %s\n", "best", "clear", "look-alike", "")
	for _, f := range r.Families {
		fmt.Fprintf(&b, "%-22s %5d %8.3f", f.Family, f.Tasks, f.Majority)
		for _, p := range Probes {
			i := slices.IndexFunc(f.Scores, func(s Score) bool { return s.Probe == p })
			if i < 0 {
				fmt.Fprintf(&b, " %6s", "—")
				continue
			}
			fmt.Fprintf(&b, " %6.3f", f.Scores[i].Test)
		}
		kind := "needs operations"
		if f.Shortcut {
			kind = "shortcut"
		}
		fmt.Fprintf(&b, "  %-4s %6.3f %6s %10s  %s\n", f.Best.Probe, f.Best.Test, share(f.Best.Clear, f.ClearTasks), share(f.Best.LookAlike, f.Tasks-f.ClearTasks), kind)
	}
	return b.String()
}
