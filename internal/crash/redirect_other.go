//go:build !unix

package crash

import (
	"errors"
	"os"
)

// Terminal is standard error where descriptors cannot be duplicated.
func Terminal() *os.File { return os.Stderr }

// Redirect is not available here: a fatal runtime error reaches the terminal.
func Redirect(path string) (restore func(), err error) {
	return nil, errors.New("crash: redirecting standard error is not supported on this platform")
}
