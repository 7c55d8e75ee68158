// Package configs holds the configuration of a pixelis run: the Go types (one per TOML
// section, each field documented with its meaning and default), the embedded TOML files
// default.toml (the real run) and smoke.toml (the whole pipeline in seconds, for tests), and
// strict loading.
//
// Start with Config in config.go. Load reads a user file on top of Default, Apply applies
// --set overrides, Validate checks every range; all three report every problem at once, each a
// *FieldError naming its key path and rule, joined with errors.Join so they print one per line.
// Encode writes the effective config back as TOML and Hash digests that encoding for
// checkpoint compatibility checks.
//
// The package imports only the standard library and BurntSushi/toml, and never prints.
package configs
