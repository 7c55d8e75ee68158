package main

import (
	"context"
	"fmt"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train"
)

// cmdCkpt: ckpt inspect PATH | ckpt verify PATH.
func cmdCkpt(ctx context.Context, args []string, std stdio) error {
	switch {
	case len(args) == 0:
		subcommandUsage(std.err, "ckpt")
		return usagef("ckpt needs a subcommand: inspect or verify")
	case wantsHelp(args[:1]):
		subcommandUsage(std.out, "ckpt")
		return nil
	case args[0] != "inspect" && args[0] != "verify":
		return usagef("unknown ckpt subcommand %q (want inspect or verify)", args[0])
	}
	fs := newFlagSet("ckpt "+args[0], std)
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "PATH"); err != nil {
		return err
	}
	path := pos[0]
	switch args[0] {
	case "inspect":
		m, err := ckpt.Inspect(path)
		if err != nil {
			return err
		}
		fmt.Fprint(std.out, m.Format())
		return nil
	default:
		if ckpt.IsAdapterExport(path) {
			if _, err := ckpt.ReadAdapter(path); err != nil {
				return err
			}
			fmt.Fprintf(std.out, "%s: ok (an adapter export: its config and tensors read, every value finite)\n", path)
			return nil
		}
		problems := train.VerifyCheckpoint(path)
		if len(problems) == 0 {
			fmt.Fprintf(std.out, "%s: ok (every file present, sizes, sha256 and tensor shapes match, every value finite, state.json decodes as a resume reads it)\n", path)
			return nil
		}
		return &ckpt.VerifyError{Path: path, Problems: problems}
	}
}
