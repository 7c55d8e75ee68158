//go:build unix

package crash

import (
	"os"

	"golang.org/x/sys/unix"
)

// Terminal returns a copy of the process's standard error (file descriptor 2)
// that stays on the terminal after Redirect moves descriptor 2 elsewhere: what
// the program means the user to read goes there.
func Terminal() *os.File {
	fd, err := unix.Dup(2)
	if err != nil {
		return os.Stderr
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "/dev/stderr")
}

// Redirect points file descriptor 2 at the file path (appending, created when
// needed) until restore is called: a fatal runtime error, which Go reports on
// descriptor 2 as it ends the process, then lands in that file, with nothing
// on the terminal. restore puts descriptor 2 back and removes the file if
// nothing was written to it.
func Redirect(path string) (restore func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	saved, err := unix.Dup(2)
	if err != nil {
		f.Close()
		return nil, err
	}
	unix.CloseOnExec(saved)
	if err := unix.Dup2(int(f.Fd()), 2); err != nil {
		f.Close()
		unix.Close(saved)
		return nil, err
	}
	f.Close()
	return func() {
		unix.Dup2(saved, 2)
		unix.Close(saved)
		if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
			os.Remove(path)
		}
	}, nil
}
