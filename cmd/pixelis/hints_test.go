package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
)

// What a mistyped command line hears: the whole of stderr, exit 2. A config
// name that is no file lists the built-in configs; an unknown flag or key
// names the one it is a slip for; a config's problems take a line each,
// naming the file, the key and the rule; a message of two lines starts on
// the first.
func TestCLIHints(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	typo := write("typo.toml", "[rft]\ngrup_size = 4\n")
	bad := write("bad.toml", "[rft]\ngroup_size = 1\n")
	twice := write("twice.toml", "[rft]\ngroup_size = 1\nlr = -1\n")
	finished := t.TempDir()
	var conf bytes.Buffer
	if err := configs.Encode(&conf, configs.Default()); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"run.json": `{"phases":["sft","rft","test"]}`, "final_eval.json": "{}", "config.toml": conf.String()} {
		if err := os.WriteFile(filepath.Join(finished, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runDir := filepath.Join(dir, "never")
	for _, c := range []struct {
		name string
		args []string
		want string // the whole of stderr
	}{
		{"config name mistyped", []string{"run", "--config", "smok", "--run-dir", runDir},
			"pixelis run: config smok: no such file, and the built-in configs are default and smoke (did you mean smoke?)\n"},
		{"built-in config as a file name", []string{"sft", "--config", "smoke.toml", "--run-dir", runDir},
			"pixelis sft: config smoke.toml: no such file, and the built-in configs are default and smoke (did you mean smoke?)\n"},
		{"config file missing", []string{"run", "--config", filepath.Join(dir, "mine.toml"), "--run-dir", runDir},
			"pixelis run: config " + filepath.Join(dir, "mine.toml") + ": no such file\n"},
		{"flag mistyped", []string{"run", "--no-tiu"},
			"pixelis run: flag provided but not defined: -no-tiu; did you mean --no-tui? (see 'pixelis run -h')\n"},
		{"flag unlike any", []string{"run", "--bogus"},
			"pixelis run: flag provided but not defined: -bogus (see 'pixelis run -h')\n"},
		{"--set key mistyped", []string{"run", "--set", "rft.grup_size=4", "--run-dir", runDir},
			"pixelis run: --set rft.grup_size=4: unknown key rft.grup_size (did you mean rft.group_size?)\n"},
		{"--set section mistyped", []string{"config", "print", "--set", "rtf.group_size=4"},
			"pixelis config: --set rtf.group_size=4: unknown key rtf (did you mean rft?)\n"},
		{"file key mistyped", []string{"run", "--config", typo, "--run-dir", runDir},
			"pixelis run: config " + typo + ": rft.grup_size: unknown key (did you mean rft.group_size?)\n"},
		{"file value out of range", []string{"run", "--config", bad, "--run-dir", runDir},
			"pixelis run: config " + bad + ": rft.group_size: must be >= 2, got 1\n"},
		{"two problems, a line each", []string{"config", "print", "--config", twice},
			"pixelis config: config " + twice + ": rft.group_size: must be >= 2, got 1\n" +
				"  config " + twice + ": rft.lr: must be > 0, got -1\n"},
		{"resume a finished run", []string{"resume", finished},
			"pixelis resume: " + finished + " finished: its last phase is done (final_eval.json), so there is nothing to resume\n" +
				"  (to train again from one of its checkpoints, pass --from " + filepath.Join(finished, "checkpoints", "DIR") + ")\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != exitBadUsage || errOut != c.want {
				t.Fatalf("exit %d, want 2\nstderr:\n%s\nwant:\n%s\nstdout:\n%s", code, errOut, c.want, out)
			}
			if strings.HasPrefix(errOut, "\n") || strings.Contains(errOut, ": \n") {
				t.Errorf("a line of stderr ends at its label:\n%s", errOut)
			}
		})
	}
	if _, err := os.Stat(runDir); err == nil {
		t.Error("a refused command created its run directory")
	}
}
