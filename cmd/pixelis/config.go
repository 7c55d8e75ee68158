package main

import (
	"context"

	"github.com/pixelis/pixelis/configs"
)

// cmdConfig: pixelis config print [--config F] [--set k=v]
func cmdConfig(ctx context.Context, args []string, io stdio) error {
	if len(args) == 0 || args[0] != "print" {
		return usagef("usage: pixelis config print [--config FILE] [--set key=value]")
	}
	fs := newFlagSet("config print", io)
	var cf configFlags
	cf.register(fs)
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
	return configs.Encode(io.out, cfg)
}
