package main

import (
	"context"

	"github.com/pixelis/pixelis/configs"
)

// cmdConfig: pixelis config print [--config F] [--set k=v]
func cmdConfig(ctx context.Context, args []string, std stdio) error {
	switch {
	case len(args) == 0:
		subcommandUsage(std.err, "config")
		return usagef("config needs a subcommand: print")
	case wantsHelp(args[:1]):
		subcommandUsage(std.out, "config")
		return nil
	case args[0] != "print":
		return usagef("unknown config subcommand %q (want print)", args[0])
	}
	fs := newFlagSet("config print", std)
	var cf configFlags
	cf.registerReading(fs)
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	return configs.Encode(std.out, cfg)
}
