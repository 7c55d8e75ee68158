package configs

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pixelis/pixelis/internal/suggest"
)

//go:embed default.toml smoke.toml
var files embed.FS

// Names are the embedded configurations, in the order a help text lists them.
var Names = []string{"default", "smoke"}

// embedded reads an embedded file; the names are fixed at compile time.
func embedded(name string) string {
	b, err := files.ReadFile(name + ".toml")
	if err != nil {
		panic(err) // unreachable: both files are embedded
	}
	return string(b)
}

// base is default.toml decoded onto a zero Config: default.toml sets every field.
var base = sync.OnceValues(func() (*Config, error) {
	cfg := new(Config)
	if err := decode(cfg, embedded("default")); err != nil {
		return nil, err
	}
	return cfg, cfg.Validate()
})

// Default returns a fresh copy of the embedded default configuration (default.toml):
// data generation, SFT, RFT and the test evaluation, sized for a 2-core CPU.
func Default() *Config {
	cfg, err := base()
	if err != nil {
		panic("configs: embedded default.toml is invalid:\n" + err.Error()) // the package tests load it
	}
	return cfg.Clone()
}

// Named returns an embedded configuration: "default", or "smoke" (default.toml with smoke.toml
// on top: the whole pipeline in seconds).
func Named(name string) (*Config, error) {
	switch name {
	case "default":
		return Default(), nil
	case "smoke":
		return resolve("smoke (embedded)", embedded("smoke"), nil)
	}
	return nil, fmt.Errorf("unknown embedded config %q (want default or smoke)", name)
}

// Load reads a TOML file on top of the defaults and validates the result: keys the file leaves
// out keep their default values. Path "" is the embedded default. A path "default" or "smoke"
// that names no existing file is the embedded config of that name (see Named).
//
// Every unknown key, wrong type and out-of-range value is reported at once, each a *FieldError,
// one per line, each line naming the file: "config my.toml: rft.group_size: must be >= 2, got 1".
// A path that is neither a file nor a built-in config's name is an error that lists the
// built-in configs.
func Load(path string) (*Config, error) { return Resolve(path, nil) }

// Parse decodes a configuration's TOML text (a run's config.toml as the console
// holds it) on top of the defaults and validates it; name labels its errors.
func Parse(name, text string) (*Config, error) { return resolve(name, text, nil) }

// Resolve is Load and Apply in one, validating only the final result, so that a --set can
// repair a file that is invalid on its own. It reports the file's problems, the bad --set
// arguments and the rule violations of the result together.
func Resolve(path string, sets []string) (*Config, error) {
	name, text := "default (embedded)", ""
	if path != "" {
		b, err := readCapped(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && (path == "default" || path == "smoke"):
			name, text = path+" (embedded)", embedded(path)
		case errors.Is(err, fs.ErrNotExist):
			return nil, notFound(path)
		case err != nil:
			return nil, fmt.Errorf("config: %w", err)
		default:
			name, text = path, string(b)
		}
	}
	if err := checkSets(sets); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return resolve(name, text, sets)
}

// resolve decodes text onto the defaults, applies sets and validates; name labels errors.
// A syntax error stops before anything else; every other problem is reported together.
func resolve(name, text string, sets []string) (*Config, error) {
	cfg := Default()
	derr := decode(cfg, text)
	if derr != nil && len(FieldErrors(derr)) == 0 {
		return nil, fmt.Errorf("config %s: %w", name, derr) // the parser's message has the line
	}
	errs := []error{derr}
	for _, arg := range sets {
		if err := applyOne(cfg, arg); err != nil {
			errs = append(errs, &SetError{Arg: arg, Err: err})
		}
	}
	verr := cfg.Validate()
	if err := errors.Join(append(errs, verr)...); err != nil {
		if derr == nil && verr == nil {
			// Only --set arguments are at fault, and each line names its own:
			// a heading naming the file would blame it.
			return nil, capProblems(err)
		}
		return nil, capProblems(fromSource(heading(name, sets), err))
	}
	return cfg, nil
}

// notFound is the error of a config path that names neither a file nor a
// built-in config. A bare name (no directory: what one types for a built-in
// config) is answered with the built-in ones, and the one it is likely a slip
// for.
func notFound(path string) error {
	if strings.ContainsRune(path, filepath.Separator) {
		return &SourceError{Source: "config " + path, Err: missingError("no such file")}
	}
	msg := fmt.Sprintf("config %s: no such file, and the built-in configs are %s", path, strings.Join(Names, " and "))
	near := strings.TrimSuffix(path, ".toml")
	if !slices.Contains(Names, near) {
		near = suggest.Closest(near, Names)
	}
	if near != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", near)
	}
	return &SourceError{Source: "config " + path, Err: missingError(msg[len("config "+path+": "):])}
}

// missingError is a config file that is not there: it is fs.ErrNotExist.
type missingError string

func (e missingError) Error() string        { return string(e) }
func (e missingError) Is(target error) bool { return target == fs.ErrNotExist }

// SourceError is a problem of a config with where the config came from: the
// file (or built-in config) and the --set arguments applied on top, as
// "config my.toml" or "config my.toml with --set rft.lr=0.1".
type SourceError struct {
	Source string
	Err    error
}

func (e *SourceError) Error() string { return e.Source + ": " + e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// fromSource is err with every problem in it on a line of its own that names
// source, "config my.toml: rft.group_size: must be >= 2, got 1"; a --set
// argument's problem names the argument instead.
func fromSource(source string, err error) error {
	var out []error
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var se *SetError
		switch {
		case err == nil:
		case errors.As(err, &se):
			out = append(out, err)
		default:
			out = append(out, &SourceError{Source: source, Err: err})
		}
	}
	walk(err)
	return errors.Join(out...)
}

// heading names what a config was resolved from, for its errors: the file (or
// embedded config) and the --set overrides applied on top.
func heading(name string, sets []string) string {
	h := "config " + name
	if len(sets) == 0 {
		return h
	}
	shown := sets[:min(len(sets), 3)]
	h += " with --set " + strings.Join(shown, " --set ")
	if len(sets) > len(shown) {
		h += fmt.Sprintf(" (and %d more --set)", len(sets)-len(shown))
	}
	return h
}
