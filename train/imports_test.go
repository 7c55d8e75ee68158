package train_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// The import directions that keep the runner thin (the package comment, run.go):
//
//   - no package under train/ depends on train, the runner: the parts it runs
//     (setup, rollout, rundir, stream, grpo, ttrl, …) are leaves it imports,
//     and the tools beside it (analysis, serve, experiment, …) build what they
//     need from those leaves;
//   - the runner depends on nothing of the launch side, the packages that run
//     and steer another trainer (launchSide): what both sides need (the
//     [curriculum] mapping, say) lives in a leaf both import.
//
// Tests are left out: a test may run the whole pipeline to check a tool on a
// real run directory.

const runner = "github.com/pixelis/pixelis/train"

// launchSide are the packages of `pixelis launch`, their subpackages included.
var launchSide = []string{runner + "/launch", runner + "/steer"}

// goPackage is what `go list -json` says of a package.
type goPackage struct {
	ImportPath string
	Deps       []string // every package it depends on, transitively, tests left out
}

func listPackages(t *testing.T, pattern string) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", pattern).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list %s: %v\n%s", pattern, err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", pattern, err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %s: no packages", pattern)
	}
	return pkgs
}

func inLaunchSide(path string) bool {
	for _, l := range launchSide {
		if path == l || strings.HasPrefix(path, l+"/") {
			return true
		}
	}
	return false
}

func TestNothingUnderTrainImportsTheRunner(t *testing.T) {
	for _, p := range listPackages(t, "github.com/pixelis/pixelis/train/...") {
		if p.ImportPath == runner {
			continue
		}
		for _, d := range p.Deps {
			if d == runner {
				t.Errorf("%s depends on the runner %s: move what it needs into a leaf package", p.ImportPath, runner)
			}
		}
	}
}

func TestRunnerImportsNothingOfTheLaunchSide(t *testing.T) {
	pkgs := listPackages(t, runner)
	for _, d := range pkgs[0].Deps {
		if inLaunchSide(d) {
			t.Errorf("the runner depends on %s, of the launch side: move what both need into a leaf package", d)
		}
	}
}
