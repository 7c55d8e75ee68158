package experiment

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/lockfile"
	"github.com/pixelis/pixelis/train/rundir"
)

// The experiment directory's own files, beside its runs, logs and results.
const (
	// RecordFile is experiment.json: which experiment the directory holds, its
	// jobs (the plan, so attach needs no experiment file), their scheduler ids
	// and the states last seen.
	RecordFile = "experiment.json"
	// LockFile is held by the one `pixelis experiment` that runs the directory.
	LockFile = ".lock"
)

// Record is experiment.json.
type Record struct {
	Name      string      `json:"name"`
	File      string      `json:"file"`      // the experiment file it was last run from
	Scheduler string      `json:"scheduler"` // local or slurm
	Jobs      []JobRecord `json:"jobs"`      // in plan order
	Updated   time.Time   `json:"updated"`
}

// JobRecord is one job of the record.
type JobRecord struct {
	Name   string   `json:"name"`
	Arm    string   `json:"arm,omitempty"`
	Seed   uint64   `json:"seed"`
	Dir    string   `json:"dir"` // the run directory, relative to the experiment's
	Phases []string `json:"phases"`
	Needs  string   `json:"needs,omitempty"` // the job that must be done first
	Index  int      `json:"index"`           // the seed's place: its Slurm array task id
	State  State    `json:"state"`
	Err    string   `json:"error,omitempty"`
	// Submits counts the job's submissions since the experiment command last
	// started; automatic resubmissions stop at the file's max_resubmits.
	Submits int `json:"submits,omitempty"`
	// Submitted is when the job was last submitted, Seen when its state was
	// last read, Ended when it was first seen done, failed or cancelled.
	Submitted time.Time `json:"submitted,omitzero"`
	Seen      time.Time `json:"seen,omitzero"`
	Ended     time.Time `json:"ended,omitzero"`
	Sched     *Sched    `json:"sched,omitempty"` // where the scheduler has it (nil: never submitted)
}

// ReadRecord reads dir's experiment.json.
func ReadRecord(dir string) (*Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RecordFile), err)
	}
	return &r, nil
}

// Plan is the recorded jobs as Jobs (without their command lines), for
// following an experiment without its file.
func (r *Record) Plan(dir string) []*Job {
	jobs := make([]*Job, len(r.Jobs))
	byName := map[string]*Job{}
	for i, jr := range r.Jobs {
		d := jr.Dir
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		jobs[i] = &Job{Arm: jr.Arm, Seed: jr.Seed, Index: jr.Index, Dir: d, Phases: jr.Phases}
		byName[jr.Name] = jobs[i]
	}
	for i, jr := range r.Jobs {
		jobs[i].Needs = byName[jr.Needs]
	}
	return jobs
}

// Job is the record of the job named name (nil if none).
func (r *Record) Job(name string) *JobRecord {
	for i := range r.Jobs {
		if r.Jobs[i].Name == name {
			return &r.Jobs[i]
		}
	}
	return nil
}

// save writes the record atomically: a reader sees the old or the new.
func (r *Record) save(dir string) error {
	r.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+RecordFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, RecordFile))
}

// Dir is an experiment directory held by this process: its lock and record.
type Dir struct {
	Path   string
	Record *Record
	lock   *lockfile.Lock
}

// OpenDir takes the experiment directory out for f and the scheduler named
// sched: it refuses a directory another live `pixelis experiment` runs, one
// that holds another experiment, one whose jobs are queued or running in
// another scheduler, and runs whose config is not their arm's. The plan's jobs
// are recorded, keeping what was known of them.
func OpenDir(f *File, out, sched string, jobs []*Job) (*Dir, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	lock, err := lockDir(out)
	if err != nil {
		return nil, &RefusedError{err}
	}
	d := &Dir{Path: out, lock: lock}
	if err := d.load(f, sched, jobs); err != nil {
		lock.Release()
		return nil, &RefusedError{err}
	}
	return d, nil
}

// RefusedError is OpenDir refusing the directory: another experiment's,
// runs made with another config, another live experiment process, a
// filesystem without locks. The user's to resolve.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

func (d *Dir) load(f *File, sched string, jobs []*Job) error {
	old, err := ReadRecord(d.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		old = nil
	case err != nil:
		return err
	case old.Name != f.Name:
		return fmt.Errorf("%s holds the experiment %q (run from %s), not %q: choose another --out", d.Path, old.Name, old.File, f.Name)
	case old.Scheduler != sched:
		for _, j := range old.Jobs {
			if j.Sched != nil && j.Sched.Active() && !j.Sched.Adopted {
				return fmt.Errorf("%s: job %s (%s) is still %s in the %s scheduler: follow it with --scheduler %s, or cancel the experiment's jobs first (pixelis experiment cancel %s)",
					d.Path, j.Name, j.Sched.ID, strings.ToLower(j.Sched.State), old.Scheduler, old.Scheduler, d.Path)
			}
		}
	}
	if err := CheckRuns(f, jobs); err != nil {
		return err
	}
	abs, _ := filepath.Abs(f.path)
	rec := &Record{Name: f.Name, File: abs, Scheduler: sched}
	for _, j := range jobs {
		jr := JobRecord{Name: j.Name(), Arm: j.Arm, Seed: j.Seed, Dir: relTo(d.Path, j.Dir), Phases: j.Phases,
			Index: j.Index, State: j.Status()}
		if j.Needs != nil {
			jr.Needs = j.Needs.Name()
		}
		if old != nil {
			if o := old.Job(jr.Name); o != nil {
				jr.Sched, jr.Submitted, jr.Ended, jr.Err = o.Sched, o.Submitted, o.Ended, o.Err
				if o.State != StateNew && jr.State != StateDone {
					jr.State = o.State
				}
			}
		}
		rec.Jobs = append(rec.Jobs, jr)
	}
	d.Record = rec
	return rec.save(d.Path)
}

// Save writes the record.
func (d *Dir) Save() error { return d.Record.save(d.Path) }

// Close releases the directory.
func (d *Dir) Close() error { return d.lock.Release() }

// lockDir takes the experiment directory's lock. A filesystem without file
// locks (NFS mounted without them) is refused: without the lock two
// processes could train one run.
func lockDir(out string) (*lockfile.Lock, error) {
	l, err := lockfile.Acquire(filepath.Join(out, LockFile), "pixelis experiment")
	var held *lockfile.HeldError
	switch {
	case errors.As(err, &held):
		return nil, fmt.Errorf("%s is run by a live `pixelis experiment`: %v; watch it with `pixelis attach %s`", out, held, out)
	case errors.Is(err, lockfile.ErrUnsupported), errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP):
		return nil, fmt.Errorf("%s: its filesystem does not support file locks (%v); pixelis refuses to run an experiment there, since nothing would keep two processes from training one run: use a filesystem with locks (local disk, NFSv4, Lustre mounted with flock)", out, err)
	case err != nil:
		return nil, fmt.Errorf("%s: cannot lock the experiment directory: %w", out, err)
	}
	return l, nil
}

// CheckRuns refuses a run directory of the plan whose recorded config trains
// other numbers than its arm's: it was made by another experiment, or the
// file changed since. Moving the scheduler, the workers or the console never
// counts (configs.Config.TrainingHash), nor, for a job without a ttrl phase (a shared
// SFT or RFT run), the [ttrl] settings it never reads.
func CheckRuns(f *File, jobs []*Job) error {
	var errs []error
	for _, j := range jobs {
		got, err := configs.Load(filepath.Join(j.Dir, rundir.ConfigFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", j.Name(), err))
			continue
		}
		want, err := configs.Resolve(f.runConfig(j.arm, j.Seed))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", j.Name(), err))
			continue
		}
		got, want = jobConfig(got, j.Phases), jobConfig(want, j.Phases)
		if got.TrainingHash() != want.TrainingHash() {
			errs = append(errs, fmt.Errorf("%s was trained with another config than %s asks (%s): it belongs to another experiment, or the experiment file changed since; choose another --out, or move the run away",
				j.Dir, armLabel(j), configDiff(want, got)))
		}
	}
	return errors.Join(errs...)
}

// jobConfig is what of cfg a job of these phases can train on: without a
// ttrl phase, [ttrl] is left out.
func jobConfig(cfg *configs.Config, phases []string) *configs.Config {
	if slices.Contains(phases, "ttrl") {
		return cfg
	}
	c := cfg.Clone()
	c.TTRL = configs.TTRL{}
	return c
}

func armLabel(j *Job) string {
	if j.Arm == "" {
		return "the shared " + strings.ToUpper(j.Phases[len(j.Phases)-1])
	}
	return "arm " + j.Arm
}

// configDiff names the first setting, in the config's order, where got
// differs from want: "section.key = got, the experiment's: want".
func configDiff(want, got *configs.Config) string {
	wk, wv := trainingLines(want)
	gk, gv := trainingLines(got)
	for _, k := range wk {
		if gv[k] != wv[k] {
			return fmt.Sprintf("%s = %s, the experiment's: %s", k, orNone(gv[k]), wv[k])
		}
	}
	for _, k := range gk {
		if _, ok := wv[k]; !ok {
			return fmt.Sprintf("%s = %s, the experiment's: none", k, gv[k])
		}
	}
	return "their encodings differ"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// trainingLines is the training config's TOML as its keys in order and key →
// value, each key prefixed with its table ("curriculum.stages[1].name" for
// the second of an array of tables).
func trainingLines(cfg *configs.Config) (keys []string, vals map[string]string) {
	var b bytes.Buffer
	_ = configs.Encode(&b, cfg.Training())
	vals = map[string]string{}
	seen := map[string]int{}
	table := ""
	sc := bufio.NewScanner(&b)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "[["):
			name := strings.Trim(line, "[] ")
			table = fmt.Sprintf("%s[%d]", name, seen[name])
			seen[name]++
		case strings.HasPrefix(line, "["):
			table = strings.Trim(line, "[] ")
			for name, n := range seen { // a table inside the last element of an array of tables
				if rest, ok := strings.CutPrefix(table, name+"."); ok {
					table = fmt.Sprintf("%s[%d].%s", name, n-1, rest)
				}
			}
		case strings.Contains(line, "="):
			k, v, _ := strings.Cut(line, "=")
			key := strings.TrimSpace(k)
			if table != "" {
				key = table + "." + key
			}
			keys = append(keys, key)
			vals[key] = strings.TrimSpace(v)
		}
	}
	return keys, vals
}

func relTo(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return r
	}
	return path
}
