package configs

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
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
// joined under a first line naming the file ("config my.toml:"), one per line.
func Load(path string) (*Config, error) { return Resolve(path, nil) }

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
		return nil, fmt.Errorf("%s:\n%w", heading(name, sets), capProblems(err))
	}
	return cfg, nil
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
