package crash

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A panic in a worker goroutine reaches the waiting goroutine's Recover as an
// *Error carrying the worker's stack; the process lives on.
func TestGroupForwardsPanic(t *testing.T) {
	var err error
	func() {
		defer Recover(&err)
		var g Group
		for i := range 4 {
			g.Go(func() {
				if i == 2 {
					workerThatPanics()
				}
			})
		}
		g.Wait()
	}()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *crash.Error", err)
	}
	if err.Error() != "internal error: runtime error: index out of range [3] with length 2" {
		t.Errorf("message %q", err.Error())
	}
	if !bytes.Contains(ce.Stack, []byte("workerThatPanics")) {
		t.Errorf("the stack is not the worker's:\n%s", ce.Stack)
	}
	path := filepath.Join(t.TempDir(), "crash.log")
	if err := WriteReport(path, ce); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte("workerThatPanics")) || !bytes.Contains(b, []byte("all goroutines:")) {
		t.Errorf("report:\n%s", b)
	}
}

func workerThatPanics() {
	s := []int{1, 2}
	i := 3
	_ = s[i]
}
