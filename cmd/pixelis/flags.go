package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/suggest"
	"github.com/pixelis/pixelis/train"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// configFlags are the flags every training command shares.
type configFlags struct {
	config string
	sets   listFlag
	runDir string
	noTUI  bool
	seed   string
}

func (c *configFlags) register(fs *flag.FlagSet) {
	c.registerReading(fs)
	fs.StringVar(&c.runDir, "run-dir", "", "run directory `DIR` (default: <run.dir>/<run.name or time>)")
}

// registerReading registers the flags of a command that reads a config but
// writes no run (eval, analyze, data, config): all but --run-dir.
func (c *configFlags) registerReading(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "config `FILE` (default: the embedded default; \"smoke\" names the embedded smoke config)")
	fs.Var(&c.sets, "set", "override a config value, `key=value` with a dotted TOML path (repeatable)")
	fs.BoolVar(&c.noTUI, "no-tui", false, "plain text output instead of the console (automatic when stdout is not a terminal)")
	fs.StringVar(&c.seed, "seed", "", "run seed `N` (overrides run.seed)")
}

// load resolves the effective config: the file (or embedded default), then --seed,
// then every --set, then validation. Every problem is a usage error (exit 2).
func (c *configFlags) load() (*configs.Config, error) {
	var sets []string
	if c.seed != "" {
		if _, err := strconv.ParseUint(c.seed, 10, 64); err != nil {
			return nil, usagef("--seed %q: must be a non-negative integer", c.seed)
		}
		sets = append(sets, "run.seed="+c.seed)
	}
	sets = append(sets, c.sets...)
	cfg, err := configs.Resolve(c.config, sets)
	if err != nil {
		return nil, usageError{err}
	}
	if err := train.CheckConfig(cfg); err != nil {
		return nil, usageError{err}
	}
	return cfg, nil
}

// parse parses flags and positional arguments in any order (flag stops at the
// first positional argument; users type `resume RUN_DIR --from X`). -h prints
// the usage and returns flag.ErrHelp (exit 0); a bad flag is a usage error
// that names it and points to -h, printed once by report.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	if wantsHelp(args) {
		usage()
		return nil, flag.ErrHelp
	}
	fs.Usage = func() {} // an error is reported once, without the usage
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if msg, ok := durationError(fs, err); ok {
				return nil, usagef("%s (see '%s -h')", msg, fs.Name())
			}
			return nil, usagef("%v%s (see '%s -h')", err, flagHint(fs, err), fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagHint is "; did you mean --no-tui?" for the error of an unknown flag
// that is a slip for one of fs's, else "".
func flagHint(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if near := suggest.Closest(strings.TrimPrefix(name, "-"), names); near != "" {
		return "; did you mean --" + near + "?"
	}
	return ""
}

// badValue is the flag package's error for a value its flag refuses.
var badValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): `)

// durationError says what a duration flag wants, for a value it refused
// (the flag package says only "parse error"): "--grace "3": want a duration
// with its unit, such as 3s or 3m".
func durationError(fs *flag.FlagSet, err error) (string, bool) {
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	f := fs.Lookup(m[2])
	if f == nil {
		return "", false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "", false
	}
	if _, ok := g.Get().(time.Duration); !ok {
		return "", false
	}
	example := "30s, 2m or 1m30s"
	if x, err := strconv.ParseFloat(m[1], 64); err == nil && x > 0 {
		example = m[1] + "s or " + m[1] + "m"
	}
	return fmt.Sprintf("--%s %q: want a duration with its unit, such as %s", m[2], m[1], example), true
}

// wantArgs checks the number of positional arguments.
func wantArgs(pos []string, n int, what string) error {
	if len(pos) != n {
		return usagef("want %s, got %d argument(s): %s", what, len(pos), strings.Join(pos, " "))
	}
	return nil
}

func printf(w io.Writer, format string, args ...any) { fmt.Fprintf(w, format, args...) }
