package configs

// TrainingHash is the config hash a checkpoint records: the config with the
// fields that cannot change a later number (run naming, console, exports,
// checkpoint cadence, the memory cap, the divergence guard, which only decide
// whether a run may go on, and the alerts, whose every change to the run is an
// edit its checkpoints keep) set to fixed values, so a resume may change those.
// Two configs with the same TrainingHash train the same numbers.
func (cfg *Config) TrainingHash() string { return cfg.Training().Hash() }

// Training is the copy of cfg that TrainingHash digests.
func (cfg *Config) Training() *Config {
	c := cfg.Clone()
	c.Run.Name, c.Run.Dir, c.Run.Workers, c.Run.LogEvery, c.Run.MaxMemoryGB = "", "", 0, 0, 0
	c.Divergence = Divergence{}
	c.UI = UI{}
	c.Export = Export{}
	c.Checkpoint = Checkpoint{}
	c.Alerts = Alerts{}
	return c
}
