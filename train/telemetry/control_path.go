package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// A unix socket's path is limited (sun_path: 108 bytes on Linux, 104 on the
// BSDs and macOS, with its NUL), and cluster scratch directories are deep. A
// run directory whose control.sock would pass the limit gets its socket at a
// short path instead, under $XDG_RUNTIME_DIR/pixelis (else <tmp>/pixelis-UID,
// a 0700 directory of the user's) named by a hash of the run directory, and
// runDir/control.sock is a symbolic link to it: clients read the link and
// dial where it points. On another machine than the run's the link points
// nowhere, and the run reads as not answering.

// maxSocketPath is the longest socket path used, the BSDs' limit less its NUL.
const maxSocketPath = 103

// bindPath is where runDir's control socket is bound: runDir/control.sock
// when that path (and the temporary one it is bound at first) fits,
// else the short path.
func bindPath(runDir string) (string, error) {
	path := filepath.Join(runDir, ControlFile)
	if len(filepath.Join(runDir, ".control-0123456789", "s")) <= maxSocketPath {
		return path, nil
	}
	dir, err := shortSocketDir()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	bind := filepath.Join(dir, hex.EncodeToString(sum[:8])+".sock")
	if len(bind) > maxSocketPath {
		return "", fmt.Errorf("the run directory's socket path is %d bytes, over a unix socket's %d, and so is %s", len(path), maxSocketPath, bind)
	}
	return bind, nil
}

// shortSocketDir is a directory only this user can enter, for sockets.
func shortSocketDir() (string, error) {
	base := os.Getenv("XDG_RUNTIME_DIR")
	name := "pixelis"
	if base == "" || len(base) > 60 {
		base, name = os.TempDir(), fmt.Sprintf("pixelis-%d", os.Getuid())
	}
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	// Another user's directory, or one others may enter, would let them reach
	// or replace the socket.
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 || !ownedByUser(fi) {
		return "", fmt.Errorf("%s must be a directory of this user's with mode 0700 (it holds control sockets)", dir)
	}
	return dir, nil
}

// dialPath is the path a client dials for runDir's control socket: the
// short one runDir/control.sock links to, or that name itself.
func dialPath(runDir string) string {
	name := filepath.Join(runDir, ControlFile)
	if target, err := os.Readlink(name); err == nil {
		return target
	}
	return name
}

// listenShort binds the socket at bind, in the user's 0700 socket directory
// (no other user can reach it between bind and chmod), and makes name a link
// to it, replacing a stale one.
func listenShort(ctx context.Context, name, bind string, cmds chan<- Command, allowedUID uint32) (*ControlServer, error) {
	if c, err := net.DialTimeout("unix", bind, controlTimeout); err == nil {
		c.Close()
		return nil, fmt.Errorf("control: another run is listening on %s (%s)", bind, name)
	}
	os.Remove(bind) // a stale socket of a dead run of this directory
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: bind, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control: listen: %w", err)
	}
	ln.SetUnlinkOnClose(false) // Close removes the file itself, if still ours
	fail := func(err error) (*ControlServer, error) {
		ln.Close()
		os.Remove(bind)
		return nil, fmt.Errorf("control: %w", err)
	}
	if err := os.Chmod(bind, 0o600); err != nil {
		return fail(err)
	}
	id, err := os.Lstat(bind)
	if err != nil {
		return fail(err)
	}
	tmp := name + ".link"
	os.Remove(tmp)
	if err := os.Symlink(bind, tmp); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fail(err)
	}
	return serveControl(ctx, bind, name, ln, id, cmds, allowedUID), nil
}
