//go:build !unix

package lockfile

import "os"

// tryLock: no file lock here.
func tryLock(f *os.File) (bool, error) { return false, ErrUnsupported }
