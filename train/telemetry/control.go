package telemetry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Valid reports whether k is one of the commands a run understands.
func (k CommandKind) Valid() bool {
	switch k {
	case CmdCheckpoint, CmdPause, CmdResume, CmdEval, CmdStop, CmdEdit, CmdFork:
		return true
	}
	return false
}

// ErrRefused wraps the reason a run gave for refusing a command.
var ErrRefused = errors.New("command refused")

// Control protocol limits.
const (
	controlTimeout = 5 * time.Second // a whole exchange, either side
	maxRequest     = 4 << 10         // a request line is a few dozen bytes
)

// controlReply is the one line the server answers with.
type controlReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// ControlServer accepts commands for a run on runDir/control.sock. A connection
// sends one JSON line, {"kind":"checkpoint"}, and gets one back, {"ok":true} or
// {"ok":false,"error":"…"}. Only the user running the trainer may command it.
// A connection that closes without a request is a liveness probe and gets no reply.
type ControlServer struct {
	path       string // where the socket is bound
	link       string // runDir/control.sock when it links to path, else ""
	ln         *net.UnixListener
	id         os.FileInfo // the socket file we made, so Close never removes another run's
	cmds       chan<- Command
	allowedUID uint32

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// ListenControl creates runDir/control.sock (mode 0600) and serves it until ctx ends
// or Close is called, delivering accepted commands to cmds without waiting (a full
// channel is reported to the client as busy). A socket file left by a dead run is
// replaced; one that still answers is an error.
func ListenControl(ctx context.Context, runDir string, cmds chan<- Command) (*ControlServer, error) {
	return listenControl(ctx, runDir, cmds, uint32(os.Getuid()))
}

func listenControl(ctx context.Context, runDir string, cmds chan<- Command, allowedUID uint32) (*ControlServer, error) {
	path := filepath.Join(runDir, ControlFile)
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket && fi.Mode().Type() != os.ModeSymlink {
			return nil, fmt.Errorf("control: %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", dialPath(runDir), time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("control: another run is listening on %s", path)
		}
		// Nothing answers: a stale socket of a dead run. The rename below replaces it.
	}
	bind, err := bindPath(runDir)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	if bind != path {
		return listenShort(ctx, path, bind, cmds, allowedUID)
	}

	// Bind inside a fresh 0700 directory and chmod before the socket becomes reachable
	// under its real name, so no other user can connect between bind and chmod,
	// whatever the umask.
	tmpDir, err := os.MkdirTemp(runDir, ".control-")
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmpPath := filepath.Join(tmpDir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmpPath, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control: listen: %w", err)
	}
	ln.SetUnlinkOnClose(false) // the name moves; Close removes the file itself
	fail := func(err error) (*ControlServer, error) {
		ln.Close()
		return nil, fmt.Errorf("control: %w", err)
	}
	if err := os.Chmod(tmpPath, 0o600); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return fail(err)
	}
	id, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return serveControl(ctx, path, "", ln, id, cmds, allowedUID), nil
}

// serveControl starts serving ln, bound at path (and named by link, when
// the run directory's name is a link to it).
func serveControl(ctx context.Context, path, link string, ln *net.UnixListener, id os.FileInfo, cmds chan<- Command, allowedUID uint32) *ControlServer {
	ctx, cancel := context.WithCancel(ctx)
	s := &ControlServer{path: path, link: link, ln: ln, id: id, cmds: cmds, allowedUID: allowedUID, cancel: cancel}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		ln.Close() // unblocks Accept
	}()
	go s.serve(ctx)
	return s
}

// Path is the path the socket is bound at: runDir/control.sock, or the
// short path it links to.
func (s *ControlServer) Path() string { return s.path }

func (s *ControlServer) serve(ctx context.Context) {
	defer s.wg.Done()
	defer s.removeSocket()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Out of descriptors and the like: back off instead of spinning.
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
		}()
	}
}

// removeSocket removes the socket file if it is still the one this server
// made, and the run directory's link to it if it still points there.
func (s *ControlServer) removeSocket() {
	if fi, err := os.Lstat(s.path); err == nil && os.SameFile(fi, s.id) {
		os.Remove(s.path)
		if s.link != "" {
			if target, err := os.Readlink(s.link); err == nil && target == s.path {
				os.Remove(s.link)
			}
		}
	}
}

func (s *ControlServer) handle(c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(controlTimeout))
	reply := func(r controlReply) {
		b, _ := json.Marshal(r)
		c.Write(append(b, '\n'))
	}
	// The request is read before anything is answered, so every reply, a refusal
	// included, follows a request the client finished sending.
	line, err := bufio.NewReader(io.LimitReader(c, maxRequest)).ReadBytes('\n')
	if len(line) == 0 && err != nil {
		return // a probe: connected and closed without asking anything
	}
	uid, err := peerUID(c)
	if err != nil {
		reply(controlReply{Error: "permission denied: " + err.Error()})
		return
	}
	if uid != s.allowedUID {
		reply(controlReply{Error: "permission denied"})
		return
	}
	var cmd Command
	if err := strictObject(line); err != nil {
		reply(controlReply{Error: "bad request: " + err.Error()})
		return
	}
	if err := json.Unmarshal(line, &cmd); err != nil {
		reply(controlReply{Error: "bad request: " + err.Error()})
		return
	}
	if !cmd.Kind.Valid() {
		reply(controlReply{Error: fmt.Sprintf("unknown command %q", cmd.Kind)})
		return
	}
	if cmd.Kind == CmdEdit && (cmd.Field == "" || cmd.Value == nil) {
		reply(controlReply{Error: `bad request: an edit names a "field" and its new "value"`})
		return
	}
	if cmd.Kind == CmdFork && slices.ContainsFunc(cmd.Edits, func(e FieldValue) bool { return e.Field == "" }) {
		reply(controlReply{Error: `bad request: each of a fork's "edits" names a "field" and its new "value"`})
		return
	}
	select {
	case s.cmds <- cmd:
		reply(controlReply{OK: true})
	default:
		reply(controlReply{Error: "busy: the run has not taken earlier commands yet"})
	}
}

// Close stops the server, waits for connections in progress and removes the socket file.
func (s *ControlServer) Close() error {
	s.once.Do(func() {
		s.cancel()
		s.wg.Wait()
	})
	return nil
}

// SendControl sends c to the run in runDir over its control socket and waits (at most
// a few seconds) for the answer. It returns an error wrapping ErrNotLive when no run
// listens and one wrapping ErrRefused when the run refuses the command.
func SendControl(runDir string, c Command) error {
	conn, err := net.DialTimeout("unix", dialPath(runDir), controlTimeout)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%w: %s", ErrNotLive, runDir)
		}
		return fmt.Errorf("send %s: %w", c.Kind, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(controlTimeout))
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("send %s: %w", c.Kind, err)
	}
	_, werr := conn.Write(append(b, '\n'))
	// Even when the write failed, the server may have said why before it hung up.
	line, err := bufio.NewReader(io.LimitReader(conn, maxRequest)).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		if werr != nil {
			return fmt.Errorf("send %s: %w", c.Kind, werr)
		}
		return fmt.Errorf("send %s: no reply: %w", c.Kind, err)
	}
	var r controlReply
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("send %s: bad reply: %w", c.Kind, err)
	}
	if !r.OK {
		return fmt.Errorf("send %s: %w: %s", c.Kind, ErrRefused, r.Error)
	}
	return nil
}

// probeControl reports whether something accepts connections on runDir's control socket.
// Live reports whether a run is listening on runDir's control socket.
func Live(runDir string) bool {
	c, err := net.DialTimeout("unix", dialPath(runDir), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
