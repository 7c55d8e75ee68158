package main

import (
	"context"
	"fmt"

	"github.com/pixelis/pixelis/ckpt"
)

// cmdCkpt: ckpt inspect PATH | ckpt verify PATH.
func cmdCkpt(ctx context.Context, args []string, std stdio) error {
	if len(args) != 2 || (args[0] != "inspect" && args[0] != "verify") {
		return usagef("usage: pixelis ckpt inspect|verify PATH")
	}
	path := args[1]
	switch args[0] {
	case "inspect":
		m, err := ckpt.Inspect(path)
		if err != nil {
			return err
		}
		fmt.Fprint(std.out, m.Format())
		return nil
	default:
		problems := ckpt.Verify(path)
		if len(problems) == 0 {
			fmt.Fprintf(std.out, "%s: ok (every file present, sizes, sha256 and tensor shapes match)\n", path)
			return nil
		}
		return &ckpt.VerifyError{Path: path, Problems: problems}
	}
}
