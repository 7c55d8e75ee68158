package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// seedMark in a from path stands for the seed.
const seedMark = "{seed}"

// armFrom is the checkpoint path arm a starts from as the file writes it
// (its own from, else the file's), "" for an arm that trains from the start.
func (f *File) armFrom(a *Arm) string {
	if a == nil {
		return ""
	}
	if a.From != "" {
		return a.From
	}
	return f.From
}

// From1 is the checkpoint arm a's run of a seed starts from, absolute, ""
// for none (a nil arm, the shared run, has none).
func (f *File) From1(a *Arm, seed uint64) string {
	p := f.armFrom(a)
	if p == "" {
		return ""
	}
	p = strings.ReplaceAll(p, seedMark, strconv.FormatUint(seed, 10))
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(f.path), p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// fromRun is the run directory a checkpoint belongs to: RUN/checkpoints/NAME.
func fromRun(checkpoint string) string { return filepath.Dir(filepath.Dir(checkpoint)) }

// fromPhases are the phases a run from the checkpoint runs: those of the run
// it belongs to (def when its run.json cannot be read; Load refused that).
func fromPhases(checkpoint string, def []string) []string {
	info, err := rundir.ReadInfo(fromRun(checkpoint))
	if err != nil {
		return def
	}
	return info.Phases
}

// checkFrom checks an arm that starts from a checkpoint, for every seed: the
// checkpoint is there, in a run directory, written under the config the arm
// resolves to (the overrides change nothing it trained with), and every edit
// is a field of the checkpoint's phase with a value its rule takes.
func (f *File) checkFrom(key string, a *Arm) []error {
	var errs []error
	bad := func(k, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", k, fmt.Sprintf(format, args...)))
	}
	fromKey := key + ".from"
	if a.From == "" {
		fromKey = "from"
	}
	switch {
	case f.armFrom(a) == "":
		bad(key+".edits", "only an arm that starts from a checkpoint (from) takes edits; an arm from the start changes its config with set")
		return errs
	case f.SharedSFT || f.SharedRFT:
		bad(fromKey, "an arm from a checkpoint shares that checkpoint's run; leave shared_sft and shared_rft out")
		return errs
	case a.Config != "":
		bad(key+".config", "an arm from a checkpoint runs with that run's config; leave config out")
		return errs
	case len(f.Seeds) > 1 && !strings.Contains(f.armFrom(a), seedMark):
		bad(fromKey, "names one checkpoint for %d seeds: write %s in its path for one checkpoint per seed, or list one seed", len(f.Seeds), seedMark)
		return errs
	}
	for _, seed := range f.Seeds {
		path := f.From1(a, seed)
		cfg, phase, err := f.fromConfig(a, path, seed)
		if err != nil {
			bad(fromKey, "%v", err)
			continue
		}
		for j, e := range a.Edits {
			if err := checkEdit(cfg, phase, e); err != nil {
				bad(fmt.Sprintf("%s.edits[%d]", key, j), "%v", err)
			}
		}
		if len(errs) > 0 {
			break // the same problems for every seed
		}
	}
	return errs
}

// fromConfig is the config of arm a's run from the checkpoint at path, and
// the checkpoint's phase, refused unless the checkpoint was written under it.
func (f *File) fromConfig(a *Arm, path string, seed uint64) (*configs.Config, telemetry.Phase, error) {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return nil, "", fmt.Errorf("no checkpoint at %s (seed %d)", path, seed)
	}
	if _, err := rundir.ReadInfo(fromRun(path)); err != nil {
		return nil, "", fmt.Errorf("%s is not a checkpoint of a pixelis run (RUN/checkpoints/NAME): %v", path, err)
	}
	m, err := ckpt.Inspect(path)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", path, err)
	}
	cfg, err := configs.Resolve(f.runConfig(a, seed))
	if err != nil {
		return nil, "", err
	}
	if cfg.TrainingHash() != m.ConfigHash {
		return nil, "", fmt.Errorf("%s was written under another config than the arm's (the run's config.toml with set): set may change nothing that run trained with", path)
	}
	return cfg, telemetry.Phase(m.Phase), nil
}

// checkEdit checks FIELD=VALUE as an edit of phase under cfg.
func checkEdit(cfg *configs.Config, phase telemetry.Phase, arg string) error {
	name, val, ok := strings.Cut(arg, "=")
	if !ok {
		return fmt.Errorf("%q: want FIELD=VALUE", arg)
	}
	v, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return fmt.Errorf("edit %s: must be a number, got %q", name, val)
	}
	_, err = edit.Make(edit.Live{Cfg: cfg}, phase, name, v)
	return err
}
