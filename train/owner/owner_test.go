package owner_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/owner"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The owner runs pixelis's own trainer here, in process, as cmd/pixelis does;
// the end-to-end tests of the stop contract (signals, the console in tmux)
// are cmd/pixelis's TestStopHeadless and TestStopConsole.

type runner struct{ *train.Runner }

func (r runner) Train(ctx context.Context, w owner.Wiring) error {
	r.Wire(w.Sink, w.Commands, w.Stop, w.Log)
	if err := r.Run(ctx); !errors.Is(err, train.ErrStopped) {
		return err
	}
	return owner.ErrStopped
}

func smokeRunner(t *testing.T, dir string, sets ...string) runner {
	t.Helper()
	cfg, err := configs.Resolve("smoke", sets)
	if err != nil {
		t.Fatal(err)
	}
	r, err := train.New(cfg, train.Options{RunDir: dir, Phases: []string{train.PhaseSFT}})
	if err != nil {
		t.Fatal(err)
	}
	return runner{r}
}

func options(dir string, stdout io.Writer, c owner.Console) owner.Options {
	return owner.Options{RunDir: dir, Console: c, Stdout: stdout, Stderr: io.Discard, ResumeStep: -1,
		Plain: func(w io.Writer) telemetry.Sink { return plain{w} }}
}

// plain is a printer of events, one a line.
type plain struct{ w io.Writer }

func (p plain) Record(telemetry.Point)     {}
func (p plain) Publish(telemetry.Snapshot) {}
func (p plain) Emit(e telemetry.Event)     { io.WriteString(p.w, e.Message+"\n") }

// console stands for the terminal's console: it acts once the run is held at
// the start of a step, then shows the run until the owner ends it.
type console struct {
	act   func(feed telemetry.Feed) error
	ended bool // Show returned because the owner ended it
}

func (c *console) Show(ctx context.Context, feed telemetry.Feed) error {
	if err := c.act(feed); err != nil {
		return err
	}
	<-ctx.Done()
	c.ended = true
	return nil
}

// announced waits for the owner's word that it took a request.
func announced(feed telemetry.Feed) {
	for range feed.Ready() {
		for _, e := range feed.Take().Events {
			if _, ok := e.Data["request"]; ok {
				return
			}
		}
	}
}

// holdStep holds the run at the start of its n-th step until released.
func holdStep(n int) (reached <-chan struct{}, release func()) {
	r, go_ := make(chan struct{}), make(chan struct{})
	steps := 0
	restore := faults.Set(func(ctx context.Context, point string) {
		if point != faults.TrainingStep {
			return
		}
		if steps++; steps == n {
			close(r)
			select {
			case <-go_:
			case <-ctx.Done():
			}
		}
	})
	return r, func() { close(go_); restore() }
}

// A stop from the console: the owner takes it, the run stops with a
// checkpoint, the owner ends the console, and the closing line goes to the
// terminal the console leaves (and to console.log), the plain lines not.
func TestConsoleStopEndsTheConsole(t *testing.T) {
	dir := t.TempDir()
	reached, release := holdStep(3)
	c := &console{act: func(feed telemetry.Feed) error {
		<-reached
		err := feed.Send(telemetry.Command{Kind: telemetry.CmdStop})
		announced(feed)
		release()
		return err
	}}
	var out bytes.Buffer
	if err := owner.Run(context.Background(), smokeRunner(t, dir, "checkpoint.every=0"), options(dir, &out, c)); err != nil {
		t.Fatal(err)
	}
	want := "stopped at step 3 with checkpoint step_000003; resume with: pixelis resume " + dir + "\n"
	if !c.ended || out.String() != want {
		t.Fatalf("console ended by the owner: %v; terminal %q, want %q", c.ended, out.String(), want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "console.log")); !strings.Contains(string(b), "the console: stopping at the end of this step") ||
		!strings.HasSuffix(string(b), want) {
		t.Errorf("console.log:\n%s", b)
	}
}

// Two stops from the console: the second ends the run at once (the held
// step's context ends), exit 1 with the steps lost; no checkpoint is written.
func TestSecondConsoleStopIsAtOnce(t *testing.T) {
	dir := t.TempDir()
	reached, release := holdStep(4)
	defer release()
	c := &console{act: func(feed telemetry.Feed) error {
		<-reached
		feed.Send(telemetry.Command{Kind: telemetry.CmdStop})
		return feed.Send(telemetry.Command{Kind: telemetry.CmdStop})
	}}
	err := owner.Run(context.Background(), smokeRunner(t, dir, "checkpoint.every=2"), options(dir, io.Discard, c))
	want := "stopped at once by a second stop (the console) at step 4: 2 steps since checkpoint step_000002 lost; resume with: pixelis resume " + dir
	if err == nil || err.Error() != want {
		t.Fatalf("Run = %v, want %q", err, want)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "step_*")); len(names) != 1 {
		t.Errorf("checkpoints %v, want step_000002 alone", names)
	}
}

// A console that quits a live run without having asked for a stop leaves it
// stopped without a checkpoint, never training unseen.
func TestConsoleQuitStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	reached, release := holdStep(3)
	c := &console{act: func(feed telemetry.Feed) error {
		<-reached
		go func() { announced(feed); release() }()
		return owner.ErrQuit
	}}
	var out bytes.Buffer
	if err := owner.Run(context.Background(), smokeRunner(t, dir, "checkpoint.every=0"), options(dir, &out, c)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "stopped at step 3, before any checkpoint") {
		t.Errorf("terminal %q", out.String())
	}
}

// The stop a console sends with its last key (q, n) is its stop, however late
// the owner takes it: one stop, not a second one at once.
func TestConsoleLastKeyIsOneStop(t *testing.T) {
	dir := t.TempDir()
	reached, release := holdStep(3)
	c := &console{act: func(feed telemetry.Feed) error {
		<-reached
		go func() { announced(feed); release() }()
		if err := feed.Send(telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true}); err != nil {
			return err
		}
		return owner.ErrQuit
	}}
	var out bytes.Buffer
	if err := owner.Run(context.Background(), smokeRunner(t, dir, "checkpoint.every=2"), options(dir, &out, c)); err != nil {
		t.Fatal(err)
	}
	if want := "stopped at step 3 without a checkpoint of it; resume continues from step_000002 (step 2)"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("terminal %q, want %q", out.String(), want)
	}
}

// failAfter is a stdout whose reader went away after n writes: a pipe whose
// reader exited (EPIPE), a terminal that hung up (EIO).
type failAfter struct {
	n     int
	wrote bytes.Buffer
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, syscall.EPIPE
	}
	f.n--
	return f.wrote.Write(p)
}

// blocked is a stdout whose reader never reads.
type blocked struct{ forever chan struct{} }

func (b blocked) Write(p []byte) (int, error) { <-b.forever; return len(p), nil }

// Headless, a stdout that fails or never takes a line neither ends nor
// stalls the run: it finishes, console.log holds every line, and says what
// the terminal missed (lines after a failed write used to be missing from
// console.log too; a stdout that blocked held the run in its first line).
func TestHeadlessStdoutGoneOrStalled(t *testing.T) {
	whole := t.TempDir()
	if err := owner.Run(context.Background(), smokeRunner(t, whole), options(whole, io.Discard, nil)); err != nil {
		t.Fatal(err)
	}
	want := readLines(t, whole)
	for _, c := range []struct {
		name   string
		stdout io.Writer
		note   string
	}{
		{"fails after its first line", &failAfter{n: 1}, "pixelis: standard output is gone (broken pipe)"},
		{"never read", blocked{make(chan struct{})}, "pixelis: standard output was not read to the end"},
	} {
		dir := t.TempDir()
		if err := owner.Run(context.Background(), smokeRunner(t, dir), options(dir, c.stdout, nil)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		var noted bool
		for _, l := range readLines(t, dir) {
			if strings.HasPrefix(l, "pixelis: ") {
				noted = noted || strings.HasPrefix(l, c.note)
				continue
			}
			l = strings.ReplaceAll(l, dir, whole) // the runs differ in their directory and its name only
			got = append(got, strings.Replace(l, "run "+filepath.Base(dir)+" ", "run "+filepath.Base(whole)+" ", 1))
		}
		if !slices.Equal(got, want) || !noted {
			t.Errorf("%s: console.log\n%s\nwant\n%s\nand a line %q", c.name, strings.Join(got, "\n"), strings.Join(want, "\n"), c.note)
		}
	}
}

func readLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "console.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
