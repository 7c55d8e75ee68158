package launch

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// A write to a trainer that closed its end of the channel fails in a way
// peerGone knows (no warning: the trainer has left), unlike a write that
// times out on a trainer that is there but does not read.
func TestPeerGone(t *testing.T) {
	dir, err := os.MkdirTemp("", "pg")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	trainer, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &conn{nc: nc.(*net.UnixConn)}
	trainer.Close()
	var werr error
	for i := 0; i < 100 && werr == nil; i++ { // the first write after the close may still be buffered
		werr = c.write(observed{Type: MsgObserved, Step: i})
	}
	if werr == nil || !peerGone(werr) {
		t.Fatalf("write to a closed trainer: %v, want an error peerGone knows", werr)
	}
	if peerGone(os.ErrDeadlineExceeded) || peerGone(errors.New("other")) {
		t.Fatal("peerGone took a timeout or another error for a trainer that left")
	}
}
