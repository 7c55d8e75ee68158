package telemetry

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rawRequest sends one line to the socket and returns the reply line.
func rawRequest(t *testing.T, dir, line string) string {
	t.Helper()
	c, err := net.Dial("unix", filepath.Join(dir, ControlFile))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(reply)
}

func listen(t *testing.T, dir string, cmds chan Command) *ControlServer {
	t.Helper()
	s, err := ListenControl(context.Background(), dir, cmds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestControlCommandsArrive(t *testing.T) {
	dir := t.TempDir()
	cmds := make(chan Command, 4)
	listen(t, dir, cmds)
	for _, k := range []CommandKind{CmdCheckpoint, CmdPause, CmdStop} {
		if err := SendControl(dir, Command{Kind: k}); err != nil {
			t.Fatalf("send %s: %v", k, err)
		}
		if c := <-cmds; c.Kind != k {
			t.Errorf("got %s, want %s", c.Kind, k)
		}
	}
	if got := rawRequest(t, dir, `{"kind":"eval"}`+"\n"); got != `{"ok":true}` {
		t.Errorf("reply %s", got)
	}
	<-cmds
}

func TestControlSocketMode(t *testing.T) {
	old := unix.Umask(0) // the most permissive umask must not leak into the socket's mode
	dir := t.TempDir()
	s, err := ListenControl(context.Background(), dir, make(chan Command))
	unix.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Lstat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want socket 0600", fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("run dir holds %d entries, want only the socket", len(entries))
	}
}

func TestControlRefusals(t *testing.T) {
	dir := t.TempDir()
	cmds := make(chan Command, 1)
	listen(t, dir, cmds)
	for _, c := range []struct{ req, want string }{
		{"not json\n", `"error":"bad request`},
		{`{"kind":"explode"}` + "\n", `"error":"unknown command \"explode\""`},
		{`{"kind":""}` + "\n", `unknown command`},
		{`{"kind":"edit","field":"kl_coef"}` + "\n", `an edit names a \"field\" and its new \"value\"`},
		{`{"kind":"edit","value":0.1}` + "\n", `an edit names a \"field\"`},
		{`{"kind":"fork","edits":[{"value":0.1}]}` + "\n", `each of a fork's \"edits\" names a \"field\"`},
	} {
		got := rawRequest(t, dir, c.req)
		if !strings.HasPrefix(got, `{"ok":false`) || !strings.Contains(got, c.want) {
			t.Errorf("%q: reply %s, want a refusal containing %s", c.req, got, c.want)
		}
	}
	if len(cmds) != 0 {
		t.Error("a refused request reached the run")
	}
	// An edit with its field and value (0 is a value) reaches the run.
	if got := rawRequest(t, dir, `{"kind":"edit","field":"kl_coef","value":0,"source":"control"}`+"\n"); got != `{"ok":true}`+"\n" && got != `{"ok":true}` {
		t.Fatalf("edit: reply %q", got)
	}
	if c := <-cmds; c.Kind != CmdEdit || c.Field != "kl_coef" || c.Value == nil || *c.Value != 0 || c.Source != "control" {
		t.Fatalf("edit arrived as %+v", c)
	}
	// A fork with its edits reaches the run.
	if got := rawRequest(t, dir, `{"kind":"fork","edits":[{"field":"kl_coef","value":0.2}]}`+"\n"); !strings.HasPrefix(got, `{"ok":true}`) {
		t.Fatalf("fork: reply %q", got)
	}
	if c := <-cmds; c.Kind != CmdFork || len(c.Edits) != 1 || c.Edits[0] != (FieldValue{Field: "kl_coef", Value: 0.2}) {
		t.Fatalf("fork arrived as %+v", c)
	}
	// A queue the run has not drained: busy, not blocked.
	if err := SendControl(dir, Command{Kind: CmdPause}); err != nil {
		t.Fatal(err)
	}
	err := SendControl(dir, Command{Kind: CmdResume})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "busy") {
		t.Errorf("full queue: %v", err)
	}
}

func TestControlRefusesOtherUsers(t *testing.T) {
	dir := t.TempDir()
	cmds := make(chan Command, 1)
	// The server allows only a uid other than ours, so our real peer credentials are refused.
	s, err := listenControl(context.Background(), dir, cmds, uint32(os.Getuid())+1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = SendControl(dir, Command{Kind: CmdStop})
	if !errors.Is(err, ErrRefused) || !strings.HasSuffix(err.Error(), "permission denied") {
		t.Errorf("err = %v, want permission denied", err)
	}
	if len(cmds) != 0 {
		t.Error("another user's command reached the run")
	}
}

func TestControlStaleSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ControlFile)
	// A dead run's socket: the file exists, nothing listens.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatal("stale socket not left behind:", err)
	}
	if err := SendControl(dir, Command{Kind: CmdStop}); !errors.Is(err, ErrNotLive) {
		t.Errorf("stale socket: %v, want ErrNotLive", err)
	}
	cmds := make(chan Command, 1)
	listen(t, dir, cmds)
	if err := SendControl(dir, Command{Kind: CmdCheckpoint}); err != nil {
		t.Fatal(err)
	}
	<-cmds

	// A live one is not taken over.
	if _, err := ListenControl(context.Background(), dir, cmds); err == nil || !strings.Contains(err.Error(), "another run") {
		t.Errorf("second server on a live socket: %v", err)
	}
	// Nor is something that is not a socket.
	other := t.TempDir()
	writeFile(t, filepath.Join(other, ControlFile), "x")
	if _, err := ListenControl(context.Background(), other, cmds); err == nil {
		t.Error("a regular file was replaced")
	}
}

func TestControlCloseRemovesSocket(t *testing.T) {
	for _, viaCtx := range []bool{false, true} {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		s, err := ListenControl(ctx, dir, make(chan Command, 1))
		if err != nil {
			t.Fatal(err)
		}
		if viaCtx {
			cancel()
		}
		s.Close() // after a cancel, waits for the server to finish
		cancel()
		if _, err := os.Lstat(s.Path()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("viaCtx=%v: socket still there: %v", viaCtx, err)
		}
		if err := SendControl(dir, Command{Kind: CmdStop}); !errors.Is(err, ErrNotLive) {
			t.Errorf("viaCtx=%v: after Close: %v, want ErrNotLive", viaCtx, err)
		}
	}
}

// A request that names a key twice is refused, not read as its last value:
// {"kind":"pause","kind":"stop"} must not stop the run.
func TestControlRefusesDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	cmds := make(chan Command, 4)
	listen(t, dir, cmds)
	for _, line := range []string{`{"kind":"pause","kind":"stop"}`, `{"kind":"stop","x":{"a":1,"a":2}}`, `["stop"]`, `{"kind":"stop"} {"kind":"pause"}`} {
		got := rawRequest(t, dir, line+"\n")
		if !strings.Contains(got, `"ok":false`) || !strings.Contains(got, "bad request") {
			t.Errorf("%s: reply %s", line, got)
		}
	}
	select {
	case c := <-cmds:
		t.Fatalf("a refused request was delivered: %v", c)
	default:
	}
	if got := rawRequest(t, dir, `{"kind":"pause","note":{"a":1,"b":[1,{"a":2}]}}`+"\n"); got != `{"ok":true}` {
		t.Errorf("distinct keys at every depth: %s", got)
	}
}

// A run directory of 150 characters (a cluster's scratch path) still gets
// its control socket: bound at a short path that control.sock links to.
func TestControlLongRunDirectory(t *testing.T) {
	dir := t.TempDir()
	dir = filepath.Join(dir, strings.Repeat("d", 150-len(dir)-1))
	if len(dir) != 150 {
		t.Fatalf("path of %d characters", len(dir))
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmds := make(chan Command, 4)
	s := listen(t, dir, cmds)
	if len(s.Path()) > maxSocketPath {
		t.Fatalf("bound at %s, %d bytes", s.Path(), len(s.Path()))
	}
	if target, err := os.Readlink(filepath.Join(dir, ControlFile)); err != nil || target != s.Path() {
		t.Fatalf("control.sock: %q %v, want a link to %s", target, err, s.Path())
	}
	if fi, err := os.Stat(s.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi, err)
	}
	if !Live(dir) {
		t.Fatal("not live")
	}
	if err := SendControl(dir, Command{Kind: CmdCheckpoint}); err != nil {
		t.Fatal(err)
	}
	if c := <-cmds; c.Kind != CmdCheckpoint {
		t.Fatalf("got %s", c.Kind)
	}
	if _, err := ListenControl(context.Background(), dir, cmds); err == nil || !strings.Contains(err.Error(), "another run is listening") {
		t.Fatalf("a second listener: %v", err)
	}
	s.Close()
	if _, err := os.Lstat(filepath.Join(dir, ControlFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control.sock after Close: %v", err)
	}
	if _, err := os.Lstat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after Close: %v", err)
	}
	if Live(dir) {
		t.Error("live after Close")
	}
	// A link left by a killed run is replaced.
	if err := os.Symlink(s.Path(), filepath.Join(dir, ControlFile)); err != nil {
		t.Fatal(err)
	}
	listen(t, dir, cmds)
	if err := SendControl(dir, Command{Kind: CmdPause}); err != nil {
		t.Fatalf("after a stale link: %v", err)
	}
}
