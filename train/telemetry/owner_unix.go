//go:build unix

package telemetry

import (
	"os"
	"syscall"
)

// ownedByUser reports whether this process's user owns the file.
func ownedByUser(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
