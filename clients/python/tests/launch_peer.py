"""A test peer: the pixelis side of the launch channel (protocol version 2,
docs/launch-protocol.md), written from the protocol's text so the SDK's tests
speak to a real socket peer that does what `pixelis launch` does on the wire.
It is not `pixelis launch`: no run directory, no console, no curriculum; it
answers hello with welcome (or refused), records every line the trainer
sends, sends the commands a test asks for, and counts malformed lines.

Run as a script (`python launch_peer.py SOCKET_PATH`) it serves until killed,
reading and discarding: the benchmark's peer, in a process of its own.
"""

import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time

MAX_LINE = 1 << 20
WAIT_S = 60.0  # the longest a test waits for a state of the peer


class ProtocolPeer:
    """Listens on a 0600 unix socket at a short path until close()."""

    WARMUP = {"index": 0, "name": "warmup", "weights": {"final": 1.0}}

    def __init__(self, stage=WARMUP, heartbeat_every_s=5, refuse=None, path=None, resume=None, lockstep=False,
                 welcome_commands=None):
        self.stage = stage              # None: pixelis runs no curriculum (the welcome's stage is null)
        self.resume = resume            # the welcome's resume {step, checkpoint}, when given
        self.heartbeat_every_s = heartbeat_every_s
        self.refuse = refuse            # a reason to refuse every hello with
        self.lockstep = lockstep        # answer each metrics message with observed (the welcome says so)
        self.welcome_commands = welcome_commands  # the welcome's commands (a fork's edits), when given
        self.observing = threading.Event()  # cleared: observed is held back (the trainer waits)
        self.observing.set()
        self._dir = None
        if path is None:
            self._dir = tempfile.mkdtemp(prefix="pxl-")
            path = os.path.join(self._dir, "ch.sock")
        self.path = path
        self.messages = []              # (connection number, message) in arrival order
        self.malformed = 0
        self.connections = 0
        self.refused_connections = 0
        self.reading = threading.Event()  # cleared: the peer stops reading (the trainer's writes back up)
        self.reading.set()
        self._cv = threading.Condition()
        self._next_id = 1
        self._conn = None
        self._closed = False
        old = os.umask(0o177)
        try:
            self._lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._lsock.bind(path)
        finally:
            os.umask(old)
        self._lsock.listen(4)
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def env(self):
        """The environment a launched trainer gets."""
        return dict(os.environ, PIXELIS_CHANNEL=self.path)

    # --- serving ---------------------------------------------------------------------------

    def _accept_loop(self):
        while True:
            try:
                conn, _ = self._lsock.accept()
            except OSError:
                return
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _, uid, _ = struct.unpack("3i", creds)
            if uid != os.getuid():
                conn.close()
                continue
            with self._cv:
                busy = self._conn is not None
            if busy:
                self._refuse(conn, "a trainer is connected already")
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _refuse(self, conn, reason):
        with self._cv:
            self.refused_connections += 1
        try:
            conn.sendall(json.dumps({"type": "refused", "reason": reason}).encode() + b"\n")
        finally:
            conn.close()

    def _serve(self, conn):
        rf = conn.makefile("rb")
        hello = self._read(rf)
        if hello is None or hello.get("type") != "hello":
            conn.close()
            return
        if hello.get("version") != 2 or self.refuse:
            self._record(0, hello)
            self._refuse(conn, self.refuse or "protocol version %r, pixelis speaks 2" % hello.get("version"))
            return
        with self._cv:
            self._conn = conn
            self.connections += 1
            n = self.connections
        self._record(n, hello)
        welcome = {"type": "welcome", "version": 2, "run_dir": "/nonexistent/run", "heartbeat_every_s": self.heartbeat_every_s,
                   "stage": self.stage, "lockstep": self.lockstep}
        if self.resume is not None:
            welcome["resume"] = self.resume
        if self.welcome_commands is not None:
            welcome["commands"] = self.welcome_commands
        conn.sendall(json.dumps(welcome).encode() + b"\n")
        try:
            while True:
                self.reading.wait()
                msg = self._read(rf)
                if msg is None:
                    break
                if msg is not False:
                    self._record(n, msg)
                    if self.lockstep and msg.get("type") == "metrics":
                        self.observing.wait()
                        self._send(conn, {"type": "observed", "step": msg.get("step")})
        except OSError:
            pass
        finally:
            with self._cv:
                if self._conn is conn:
                    self._conn = None
                self._cv.notify_all()
            conn.close()

    def _read(self, rf):
        """The next message; False for a malformed line (counted); None at the end."""
        line = rf.readline(MAX_LINE + 1)
        if not line:
            return None
        if len(line) > MAX_LINE:
            with self._cv:
                self.malformed += 1
            while line and not line.endswith(b"\n"):
                line = rf.readline(MAX_LINE + 1)
            return False
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if not isinstance(msg, dict) or "type" not in msg:
            with self._cv:
                self.malformed += 1
            return False
        return msg

    def _record(self, n, msg):
        with self._cv:
            self.messages.append((n, msg))
            self._cv.notify_all()

    # --- what tests do ---------------------------------------------------------------------

    def _send(self, conn, msg):
        with self._cv:
            if self._conn is conn:
                conn.sendall(json.dumps(msg, separators=(",", ":")).encode() + b"\n")  # compact, as pixelis writes

    def command(self, kind, args=None, from_step=None):
        """Send a command (a stage with the earliest step it applies from); its id."""
        with self._cv:
            while self._conn is None and not self._closed:
                if not self._cv.wait(WAIT_S):
                    raise AssertionError("no trainer connected to send %s to" % kind)
            cid = self._next_id
            self._next_id += 1
            conn = self._conn
            msg = {"type": "command", "id": cid, "kind": kind, "args": args or {}}
            if from_step is not None:
                msg["from_step"] = from_step
            conn.sendall(json.dumps(msg).encode() + b"\n")
        return cid

    def send_raw(self, data):
        with self._cv:
            conn = self._conn
        conn.sendall(data)

    def drop(self):
        """Close the trainer's connection (a drop; it may reconnect)."""
        with self._cv:
            conn, self._conn = self._conn, None
        conn.shutdown(socket.SHUT_RDWR)

    def of(self, type_, conn=None):
        """The messages of a type received so far."""
        with self._cv:
            return [m for n, m in self.messages if m.get("type") == type_ and (conn is None or n == conn)]

    def wait_for(self, pred, what, timeout=WAIT_S):
        """Wait until pred(messages) is true (messages: every message received);
        returns its value."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                v = pred([m for _, m in self.messages])
                if v:
                    return v
                left = deadline - time.monotonic()
                if left <= 0:
                    tail = [m for _, m in self.messages][-8:]
                    raise AssertionError("waited %.0f s for %s; last messages: %r" % (timeout, what, tail))
                self._cv.wait(left)

    def notify(self):
        """Wake the waiters (when something outside the peer changed, e.g. a process exited)."""
        with self._cv:
            self._cv.notify_all()

    def wait_ack(self, cid, timeout=WAIT_S):
        return self.wait_for(lambda ms: next((m for m in ms if m.get("type") == "ack" and m.get("id") == cid), None),
                             "the ack of command %d" % cid, timeout)

    def wait_type(self, type_, count=1, timeout=WAIT_S):
        return self.wait_for(lambda ms: [m for m in ms if m.get("type") == type_][count - 1:count] and
                             [m for m in ms if m.get("type") == type_], "%d %s message(s)" % (count, type_), timeout)

    def wait_disconnected(self, timeout=WAIT_S):
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._conn is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("the trainer stayed connected")
                self._cv.wait(left)

    def close(self):
        with self._cv:
            self._closed = True
            conn = self._conn
            self._cv.notify_all()
        self._lsock.close()
        if conn is not None:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.reading.set()
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)


if __name__ == "__main__":
    peer = ProtocolPeer(path=sys.argv[1])
    print("serving", peer.path, flush=True)
    threading.Event().wait()
