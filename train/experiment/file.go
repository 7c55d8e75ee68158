package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/rundir"
)

// File is an experiment file (TOML). Every field is documented here; an
// example: configs/experiments/*.toml.
type File struct {
	// Name of the experiment, used for its output directory. Required.
	Name string `toml:"name"`
	// Description says what the experiment tests; it heads results.md.
	Description string `toml:"description"`
	// Config is the base config every run starts from: "default", "smoke" or a
	// TOML file, relative to the experiment file. Default "default".
	Config string `toml:"config"`
	// Seeds are the run seeds; every arm runs once per seed. Required.
	Seeds []uint64 `toml:"seeds"`
	// Parallel is how many runs go at once; 0 uses one per core.
	Parallel int `toml:"parallel"`
	// Set are --set overrides applied to every run, before the arm's own.
	Set []string `toml:"set"`
	// SharedSFT runs each seed's SFT once, and every arm's RFT and test from
	// it; an arm's overrides then apply to RFT and the test only.
	SharedSFT bool `toml:"shared_sft"`
	// SharedRFT runs each seed's SFT and RFT once (one run), and every arm's
	// TTRL and test from its RFT model; an arm's overrides then apply to TTRL
	// and the test only. Arms may change [env] (the world TTRL adapts to,
	// e.g. env.shift), never what trained the RFT model. Not with shared_sft.
	SharedRFT bool `toml:"shared_rft"`
	// Phases of every arm's run when no model is shared, some of sft, rft,
	// ttrl, test in that order. Default ["sft", "rft", "test"].
	Phases []string `toml:"phases"`
	// Series are metrics plotted over steps, one plot each, an arm's line the
	// mean over its seeds. Default ["kpi/success_rate_ma100", "behavior/rapr"].
	Series []string `toml:"series"`
	// Report are the metrics of the results table: a training metric is its
	// mean over the run's last Tail recorded steps, a test/ metric its value.
	// Default: test pass@1 and greedy of the final model, and RFT − SFT when
	// RFT runs.
	Report []string `toml:"report"`
	// Tail is the number of last recorded steps a training metric of Report
	// averages. Default 10.
	Tail int `toml:"tail"`
	// Baseline names an arm every other arm is compared with seed by seed: the
	// paired differences (arm − baseline, same seed, so the same SFT model and
	// tasks) get their own table, narrower than the arms' own intervals when
	// seeds differ more than arms do. Default "" (no paired table).
	Baseline string `toml:"baseline"`
	// MaxResubmits caps the automatic resubmissions of a job the cluster
	// interrupted (preempted, timed out, a node lost) while the experiment
	// command follows it; each new `pixelis experiment` starts counting again.
	// Default 3.
	MaxResubmits int `toml:"max_resubmits"`
	// Scheduler says where the jobs run, and with which resources on a Slurm
	// cluster. It is no part of any run's config: changing it never blocks a
	// resume.
	Scheduler SchedulerTable `toml:"scheduler"`
	// From is a checkpoint every arm starts from (an arm's own from replaces
	// it): see Arm.From. Default "" (arms train from the start).
	From string `toml:"from"`
	// Arms are the variants compared. At least one.
	Arms []Arm `toml:"arms"`

	path string // where the file was read from
}

// Arm is one variant: a name, optionally its own base config, and its --set
// overrides.
type Arm struct {
	// Name of the arm, a directory name. Required, unique.
	Name string `toml:"name"`
	// Description is shown in results.md.
	Description string `toml:"description"`
	// Config replaces the experiment's base config for this arm (a TOML file
	// relative to the experiment file, or an embedded name), for changes --set
	// cannot express, such as other curriculum stages. With shared SFT its
	// [policy] must equal the experiment's.
	Config string `toml:"config"`
	// Set are the arm's --set overrides.
	Set []string `toml:"set"`
	// From is a checkpoint of another run the arm starts from
	// (RUN/checkpoints/NAME, relative to the experiment file), "{seed}" in it
	// standing for the seed (one checkpoint per seed; without it, list one
	// seed): the arm continues that run's phases from the checkpoint's step
	// with its config (the file's and the arm's set applied over it; they may
	// change nothing that run trained with), its models and its data and
	// sampling streams, as `pixelis run --from` does. Not with shared_sft or
	// shared_rft, nor with config.
	From string `toml:"from"`
	// Edits are FIELD=VALUE live edits (as `pixelis edit` takes them: the
	// fields of the checkpoint's phase) the arm applies at its first step,
	// recorded as edit events. Only with from.
	Edits []string `toml:"edits"`
}

// Phase names, as pixelis run --phases takes them.
var phaseOrder = []string{"sft", "rft", "ttrl", "test"}

var armName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Load reads and checks an experiment file. Every problem is reported at
// once, each naming its key; every run's config is resolved, so a bad
// override is refused before anything starts.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	f := &File{path: path}
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(f)
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", path, err)
	}
	var errs []error
	for _, k := range md.Undecoded() {
		errs = append(errs, fmt.Errorf("%s: unknown key", k))
	}
	if serrs := checkSeedSigns(b); len(serrs) > 0 {
		// Every later check would name the wrapped seed, not the key.
		return nil, fmt.Errorf("experiment %s:\n%w", path, errors.Join(append(errs, serrs...)...))
	}
	if !md.IsDefined("max_resubmits") {
		f.MaxResubmits = 3
	}
	f.defaults()
	errs = append(errs, f.check()...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("experiment %s:\n%w", path, err)
	}
	return f, nil
}

func (f *File) defaults() {
	if f.Config == "" {
		f.Config = "default"
	}
	if len(f.Phases) == 0 {
		f.Phases = []string{"sft", "rft", "test"} // TTRL is off unless asked for
	}
	if len(f.Series) == 0 {
		f.Series = []string{"kpi/success_rate_ma100", "behavior/rapr"}
	}
	if f.Tail == 0 {
		f.Tail = 10
	}
	if len(f.Report) == 0 {
		f.Report = f.defaultReport()
	}
}

// defaultReport: the final model's test pass@1 and greedy, and the paired
// change when RFT runs after an SFT the run knows.
func (f *File) defaultReport() []string {
	if f.SharedRFT || strings.Contains(strings.Join(f.Phases, ","), "ttrl") {
		return []string{"test/ttrl/all/pass@1", "test/ttrl_minus_rft/pass@1", "test/rft/all/pass@1", "test/ttrl/all/greedy", "test/ttrl_minus_rft/greedy"}
	}
	model := "rft"
	if !f.SharedSFT && !strings.Contains(strings.Join(f.Phases, ","), "rft") {
		model = "sft"
	}
	r := []string{"test/" + model + "/all/pass@1", "test/" + model + "/all/greedy"}
	if model == "rft" {
		r = append(r, "test/rft_minus_sft/pass@1", "test/rft_minus_sft/greedy")
	}
	return r
}

func (f *File) check() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if !armName.MatchString(f.Name) {
		bad("name", "must be a directory name (letters, digits, _ . -), got %q", f.Name)
	}
	if len(f.Seeds) == 0 {
		bad("seeds", "must list at least one seed")
	}
	seen := map[uint64]bool{}
	for i, s := range f.Seeds {
		if seen[s] {
			bad(fmt.Sprintf("seeds[%d]", i), "repeats %d", s)
		}
		seen[s] = true
	}
	if f.Parallel < 0 {
		bad("parallel", "must be >= 0, got %d", f.Parallel)
	}
	if f.Tail < 1 {
		bad("tail", "must be >= 1, got %d", f.Tail)
	}
	if f.MaxResubmits < 0 {
		bad("max_resubmits", "must be >= 0, got %d", f.MaxResubmits)
	}
	for i, m := range f.Report {
		if err := checkMetric(m); err != nil {
			bad(fmt.Sprintf("report[%d]", i), "%v", err)
		}
	}
	for i, m := range f.Series {
		if err := checkMetric(m); err != nil {
			bad(fmt.Sprintf("series[%d]", i), "%v", err)
		}
	}
	errs = append(errs, f.Scheduler.check()...)
	errs = append(errs, f.checkPhases()...)
	if len(f.Arms) == 0 {
		bad("arms", "must list at least one arm")
	}
	names := map[string]bool{}
	for i, a := range f.Arms {
		key := fmt.Sprintf("arms[%d]", i)
		switch {
		case !armName.MatchString(a.Name) || a.Name == "sft" || a.Name == "rft":
			bad(key+".name", "must be a directory name other than sft and rft (letters, digits, _ . -), got %q", a.Name)
		case names[a.Name]:
			bad(key+".name", "repeats %q", a.Name)
		}
		names[a.Name] = true
		errs = append(errs, f.checkArm(key, a)...)
	}
	if f.Baseline != "" && !names[f.Baseline] {
		bad("baseline", "names no arm: %q", f.Baseline)
	}
	return errs
}

func (f *File) checkPhases() []error {
	if f.SharedSFT && f.SharedRFT {
		return []error{fmt.Errorf("shared_rft: the shared RFT run trains its own SFT model; leave shared_sft out")}
	}
	if f.SharedSFT || f.SharedRFT {
		return nil
	}
	next := 0
	for i, p := range f.Phases {
		j := indexOf(phaseOrder, p)
		if j < next {
			return []error{fmt.Errorf("phases[%d]: must be some of sft, rft, ttrl, test in that order, got %q", i, p)}
		}
		next = j + 1
	}
	return nil
}

// checkArm resolves the arm's config for the first seed, and refuses SFT
// settings an arm cannot change when SFT is shared.
func (f *File) checkArm(key string, a Arm) []error {
	var errs []error
	shared, what := []string{"sft.", "data.", "policy."}, "SFT"
	if f.SharedRFT {
		shared, what = append(shared, "rft.", "reward.", "curriculum."), "RFT model"
	}
	if f.SharedSFT || f.SharedRFT {
		for j, s := range a.Set {
			k := strings.TrimSpace(strings.SplitN(s, "=", 2)[0])
			if slices.ContainsFunc(shared, func(p string) bool { return strings.HasPrefix(k, p) }) {
				errs = append(errs, fmt.Errorf("%s.set[%d]: %s cannot differ between arms that share their %s", key, j, k, what))
			}
		}
	}
	if f.armFrom(&a) != "" || len(a.Edits) > 0 {
		return append(errs, f.checkFrom(key, &a)...)
	}
	cfg, err := f.resolve(a, f.Seeds0())
	if err != nil {
		return append(errs, fmt.Errorf("%s (%s): %w", key, a.Name, err))
	}
	if (f.SharedSFT || f.SharedRFT) && a.Config != "" {
		base, err := configs.Resolve(f.BaseConfig(), f.sets(nil, f.Seeds0()))
		if err == nil && !reflect.DeepEqual(base.Policy, cfg.Policy) {
			errs = append(errs, fmt.Errorf("%s.config: its [policy] differs from the experiment's, which the shared SFT trains", key))
		}
	}
	return errs
}

// Path is the file the experiment was read from.
func (f *File) Path() string { return f.path }

// Seeds0 is the first seed, for checks.
func (f *File) Seeds0() uint64 {
	if len(f.Seeds) == 0 {
		return 1
	}
	return f.Seeds[0]
}

// BaseConfig is the --config argument of the experiment's runs; see configPath.
func (f *File) BaseConfig() string { return f.configPath(f.Config) }

// ArmConfig is the --config argument of an arm's runs: its own, else the
// experiment's.
func (f *File) ArmConfig(a *Arm) string {
	if a == nil || a.Config == "" {
		return f.BaseConfig()
	}
	return f.configPath(a.Config)
}

// configPath is a file relative to the experiment file, made absolute, or an
// embedded config's name when no such file exists.
func (f *File) configPath(name string) string {
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(f.path), p)
	}
	if _, err := os.Stat(p); err != nil && (name == "default" || name == "smoke") {
		return name
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// sets are the overrides of arm a's run of a seed (nil arm: the shared SFT).
func (f *File) sets(a *Arm, seed uint64) []string {
	out := append([]string{}, f.Set...)
	if a != nil {
		out = append(out, a.Set...)
	}
	return append(out, fmt.Sprintf("run.seed=%d", seed))
}

// resolve is the effective config of an arm's run of a seed.
func (f *File) resolve(a Arm, seed uint64) (*configs.Config, error) {
	return configs.Resolve(f.runConfig(&a, seed))
}

// runConfig is the config file and the overrides of arm a's run of a seed
// (nil arm: the shared run): an arm from a checkpoint has that run's config
// and seed, with the file's and the arm's overrides.
func (f *File) runConfig(a *Arm, seed uint64) (string, []string) {
	if from := f.From1(a, seed); from != "" {
		return filepath.Join(fromRun(from), rundir.ConfigFile), append(append([]string{}, f.Set...), a.Set...)
	}
	return f.ArmConfig(a), f.sets(a, seed)
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// checkSeedSigns refuses negative seeds by their index: TOML integers are
// signed, the seeds' type is not, so a -1 would otherwise become 2⁶⁴−1.
func checkSeedSigns(b []byte) []error {
	var raw struct {
		Seeds []int64 `toml:"seeds"`
	}
	if _, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&raw); err != nil {
		return nil // the main decode reports what is wrong
	}
	var errs []error
	for i, s := range raw.Seeds {
		if s < 0 {
			errs = append(errs, fmt.Errorf("seeds[%d]: must be >= 0, got %d", i, s))
		}
	}
	return errs
}

// metricNamespaces are the namespaces a pixelis run records metrics under
// (docs/metrics.md).
var metricNamespaces = []string{"reward", "kpi", "grpo", "policy", "sft", "behavior", "tools", "curriculum",
	"data_curriculum", "val", "test", "perf", "timing_s", "curiosity", "critic", "ttrl"}

// checkMetric refuses a metric name no run can record: one outside the
// namespaces a run writes. A name inside them that no run recorded is
// refused when the results are collected.
func checkMetric(name string) error {
	ns, rest, ok := strings.Cut(name, "/")
	if !ok || rest == "" || !slices.Contains(metricNamespaces, ns) {
		return fmt.Errorf("unknown metric %q: a run records metrics named namespace/name, the namespaces %s", name, strings.Join(metricNamespaces, ", "))
	}
	return nil
}
