package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// PrivateSocket is a unix socket of a run other than its control socket (a
// launched trainer's channel): bound in the user's 0700 socket directory
// (shortSocketDir), so its path is short whatever the run directory and no
// other user can reach it between bind and chmod; mode 0600; runDir/name is
// a symbolic link to it, for people looking at the run directory.
type PrivateSocket struct {
	*net.UnixListener
	Path string // where the socket is bound: what a client dials
	link string
	id   os.FileInfo
}

// ListenPrivate binds runDir's socket called name. A socket of a dead run of
// the same directory is replaced; one that answers is an error.
func ListenPrivate(runDir, name string) (*PrivateSocket, error) {
	dir, err := shortSocketDir()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(abs))
	bind := filepath.Join(dir, hex.EncodeToString(sum[:8])+"-"+name)
	if len(bind) > maxSocketPath {
		return nil, fmt.Errorf("the socket path %s is %d bytes, over a unix socket's %d", bind, len(bind), maxSocketPath)
	}
	if c, err := net.DialTimeout("unix", bind, controlTimeout); err == nil {
		c.Close()
		return nil, fmt.Errorf("another run is listening on %s", bind)
	}
	os.Remove(bind)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: bind, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false) // Close removes the file itself, if still ours
	s := &PrivateSocket{UnixListener: ln, Path: bind, link: filepath.Join(runDir, name)}
	fail := func(err error) (*PrivateSocket, error) {
		ln.Close()
		os.Remove(bind)
		return nil, err
	}
	if err := os.Chmod(bind, 0o600); err != nil {
		return fail(err)
	}
	if s.id, err = os.Lstat(bind); err != nil {
		return fail(err)
	}
	tmp := s.link + ".link"
	os.Remove(tmp)
	if err := os.Symlink(bind, tmp); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, s.link); err != nil {
		os.Remove(tmp)
		return fail(err)
	}
	return s, nil
}

// Close stops listening and removes the socket and the run directory's link
// to it, when they are still this socket's.
func (s *PrivateSocket) Close() error {
	err := s.UnixListener.Close()
	if fi, lerr := os.Lstat(s.Path); lerr == nil && os.SameFile(fi, s.id) {
		os.Remove(s.Path)
		if target, lerr := os.Readlink(s.link); lerr == nil && target == s.Path {
			os.Remove(s.link)
		}
	}
	return err
}

// PeerUID is the uid of the process at the other end of c, as the kernel
// recorded it when it connected (an error where that cannot be known).
func PeerUID(c *net.UnixConn) (uint32, error) { return peerUID(c) }
