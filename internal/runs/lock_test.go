package runs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pixelis/pixelis/internal/lockfile"
)

// A run directory another process holds is refused at once, naming the
// holder's pid and how to watch the run; once it is released the next
// command gets it.
func TestLockRefusesAHeldRunNamingThePID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	held, err := Lock(dir, "--run-dir", "run")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(dir, "--run-dir", "resume")
	wantRefusal(t, err, dir+" is being trained by a live process", fmt.Sprintf("pid %d", os.Getpid()), "pixelis attach "+dir)
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Lock(dir, "--run-dir", "resume")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release()
	if h, _ := lockfile.Holder(filepath.Join(dir, LockFile)); h != nil {
		t.Fatalf("released, yet held by %v", h)
	}
}

// A path that cannot be a directory is the user's input, named by what chose it.
func TestLockRefusesAPathThatCannotBeADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Lock(filepath.Join(file, "run"), "run.dir", "run")
	wantRefusal(t, err, "run.dir: cannot create the run directory "+filepath.Join(file, "run")+": not a directory")
}
