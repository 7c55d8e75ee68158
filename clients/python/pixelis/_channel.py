"""The channel: the unix socket to `pixelis launch`, its JSON lines, the
hello and welcome, heartbeats, and the reconnection after a drop.
Standard library only."""

from __future__ import annotations

import atexit
import collections
import itertools
import json
import select
import socket
import threading
import time

from ._protocol import FLUSH_TIMEOUT_S, HEARTBEAT_EVERY_S, MAX_LINE, PROTOCOL_VERSION, Refused, encode, log


# An observed line as pixelis writes it (compact JSON, the fields in this
# order): under lockstep one comes every step, and the reader thread that
# wakes for it costs the trainer CPU; read without json it costs half
# (docs/benchmarks.md, PixelisCallback's cost).
_OBSERVED = b'{"type":"observed","step":'


def observed_step(line: bytes) -> "int | None":
    """The step of an observed line in pixelis's own form, else None (then json reads it)."""
    if line.startswith(_OBSERVED) and line.endswith(b"}\n"):
        digits = line[len(_OBSERVED):-2]
        if digits.isdigit():
            return int(digits)
    return None


class Channel:
    """The socket to pixelis. Lines are written by whoever puts them (the
    training thread), with non-blocking sends: a send that would block leaves
    the lines queued (bounded for data, dropped and counted beyond) for the
    flusher thread, which also writes the heartbeats and reconnects after a
    drop. A reader thread puts commands into an inbox. So in the common case
    a step costs one send and wakes no thread."""

    def __init__(self, path, hello, queue_size, timeout, owner=None, on_owner_gone=None):
        self.path, self.hello, self.queue_size, self.timeout = path, hello, queue_size, timeout
        self.owner, self.on_owner_gone = owner, on_owner_gone
        self.dropped = 0
        self.connected = False
        self._cv = threading.Condition()
        self._lines = collections.deque()  # (bytes, control) not yet written; the first maybe in part
        self._sent = 0                     # bytes of the first line written
        self._ndata = 0                    # data lines in _lines
        self._backlog = False              # a send would block: the flusher writes until the queue is empty
        self._closing = False
        self._inbox_cv = threading.Condition()
        self._inbox = collections.deque()
        self.stop_arrived = None  # time.monotonic() when the first stop command arrived
        self._stage = None  # a reconnect's welcome stage, for the next boundary
        self._forward = None  # when set: fn(commands, stage, connected) takes news as it arrives (the board)
        self.heartbeat_every = HEARTBEAT_EVERY_S
        self.lockstep = False  # the welcome's: pixelis answers each metrics message with observed
        self.logged = None     # the newest step of a metrics line queued
        self.observed = None   # the newest step pixelis said it observed
        self.unanswered = False  # an observed timed out: not waited for until one arrives
        self._sock = None
        self.welcome = self._handshake()
        self._flusher = threading.Thread(target=self._flush_loop, name="pixelis-channel", daemon=True)
        self._flusher.start()
        atexit.register(self.close, FLUSH_TIMEOUT_S)

    # --- handshake and reading -------------------------------------------------------------

    def _handshake(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.path)
            try:
                sock.sendall(encode(self.hello))
            except (BrokenPipeError, ConnectionResetError):
                pass  # closed at once: a refused line may be waiting to be read
            rf = sock.makefile("rb")
            line = rf.readline(MAX_LINE + 1)
            if not line:
                raise ConnectionError("pixelis closed the channel %s before its welcome" % self.path)
            msg = json.loads(line)
            if msg.get("type") == "refused":
                raise Refused(msg.get("reason", "refused"))
            if msg.get("type") != "welcome":
                raise ConnectionError("pixelis answered hello with %r, not a welcome" % (msg.get("type"),))
            if msg.get("version") != PROTOCOL_VERSION:
                raise Refused("pixelis speaks protocol version %r, this SDK %d" % (msg.get("version"), PROTOCOL_VERSION))
            every = msg.get("heartbeat_every_s")
            if isinstance(every, (int, float)) and 0 < every <= HEARTBEAT_EVERY_S:
                self.heartbeat_every = float(every)
            self.lockstep = bool(msg.get("lockstep"))
            cmds = msg.get("commands")  # a fork's edits: taken as the first commands of the channel
            if isinstance(cmds, list):
                with self._inbox_cv:
                    self._inbox.extend(c for c in cmds if isinstance(c, dict))
        except BaseException:
            sock.close()
            raise
        sock.settimeout(None)
        with self._cv:
            self._sock = sock
            self.connected = True
            self.observed = self.logged  # what the lost connection carried is not waited for
            self.unanswered = False
        threading.Thread(target=self._read_loop, args=(sock, rf), name="pixelis-channel-reader", daemon=True).start()
        return msg

    def _read_loop(self, sock, rf):
        try:
            while True:
                line = rf.readline(MAX_LINE + 1)
                if not line:
                    break
                if len(line) > MAX_LINE and not line.endswith(b"\n"):
                    log.warning("pixelis sent a line over %d bytes: skipped", MAX_LINE)
                    while line and not line.endswith(b"\n"):
                        line = rf.readline(MAX_LINE + 1)
                    continue
                step = observed_step(line)
                if step is not None:
                    self._observe(step)
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    log.warning("pixelis sent a line that is not JSON: %r", line[:200])
                    continue
                if not isinstance(msg, dict):
                    log.warning("pixelis sent a line that is not a JSON object: %r", line[:200])
                elif msg.get("type") == "observed":
                    self._observe(msg.get("step"))
                elif msg.get("type") == "command":
                    if msg.get("kind") == "stop" and self.stop_arrived is None:
                        self.stop_arrived = time.monotonic()
                    with self._inbox_cv:
                        forward = self._forward
                        if forward is None:
                            self._inbox.append(msg)
                            self._inbox_cv.notify_all()
                    if forward is not None:
                        forward([msg], None, True)
                else:
                    log.warning("pixelis sent a message of unknown type %r", msg.get("type"))
        except (OSError, ValueError):
            pass
        finally:
            with self._cv:
                if self._sock is sock:
                    self.connected = False
                self._cv.notify_all()
            with self._inbox_cv:
                self._inbox_cv.notify_all()
                forward = self._forward
            if forward is not None and not self._closing:
                forward([], None, False)

    def _observe(self, step):
        with self._cv:
            if isinstance(step, int):
                self.observed = max(self.observed if self.observed is not None else step, step)
            self.unanswered = False
            self._cv.notify_all()

    def forward_to(self, fn):
        """From now on news goes to fn(commands, stage, connected) as it
        arrives; what is in the inbox stays for take_commands."""
        with self._inbox_cv:
            self._forward = fn

    def take_commands(self, wait):
        """The commands that arrived, waiting up to wait seconds for one."""
        with self._inbox_cv:
            if not self._inbox and wait > 0 and self.connected:
                self._inbox_cv.wait(wait)
            out = list(self._inbox)
            self._inbox.clear()
        return out

    def await_observed(self, timeout):
        """Under lockstep, wait until pixelis observed the newest step logged
        (or the channel is down); False when timeout passed first. After a
        timeout pixelis is alive but not answering (stopped, stuck in I/O):
        no step waits for it again until an observed arrives."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self.lockstep and self.connected and not self._closing and not self.unanswered and (
                    self.logged is not None and (self.observed is None or self.observed < self.logged)):
                left = deadline - time.monotonic()
                if left <= 0:
                    self.observed = self.logged  # not waited for again
                    self.unanswered = True
                    return False
                self._cv.wait(left)
        return True

    def take_stage(self):
        with self._cv:
            st, self._stage = self._stage, None
        return st

    # --- writing ---------------------------------------------------------------------------

    def put(self, item, control=False, step=None):
        """Write a message (control: a dict, never dropped) or a data line
        (bytes, encoded by the caller; step: a metrics line's step). A data
        line is dropped and counted when the queue is full, the channel is
        down or the line is over MAX_LINE. Never blocks on the socket."""
        line = encode(item) if control else item
        with self._cv:
            if self._closing:
                return
            if not control:
                if self._ndata >= self.queue_size or not self.connected or len(line) > MAX_LINE + 1:
                    self.dropped += 1
                    if len(line) > MAX_LINE + 1:
                        log.warning("pixelis: a message of %d bytes is over the channel's %d: dropped", len(line), MAX_LINE)
                    return
                self._ndata += 1
                if step is not None:
                    self.logged = step if self.logged is None else max(self.logged, step)
            self._lines.append((line, control))
            if self.connected and not self._backlog:
                self._flush_locked()

    def _flush_locked(self):
        """Write queued lines without blocking (the lock held); on would-block the flusher takes over."""
        while self._lines:
            first = self._lines[0][0]
            chunk = [memoryview(first)[self._sent:]] if self._sent else [first]
            size = len(chunk[0])
            for line, _ in itertools.islice(self._lines, 1, None):
                if size >= 1 << 16:
                    break
                chunk.append(line)
                size += len(line)
            try:
                n = self._sock.send(chunk[0] if len(chunk) == 1 else b"".join(chunk), socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                self._backlog = True
                self._cv.notify_all()
                return
            except OSError:
                self.connected = False
                self._cv.notify_all()
                return
            while n:
                line, control = self._lines[0]
                rest = len(line) - self._sent
                if n < rest:
                    self._sent += n
                    break
                n -= rest
                self._lines.popleft()
                self._sent = 0
                if not control:
                    self._ndata -= 1
        self._backlog = False

    def _flush_loop(self):
        """Heartbeats, the backlog after a would-block, reconnects."""
        next_beat = time.monotonic()
        while True:
            with self._cv:
                while not (self._closing or not self.connected or self._backlog):
                    wait = next_beat - time.monotonic()
                    if wait <= 0:
                        break
                    self._cv.wait(wait)
                now = time.monotonic()
                if self.connected and now >= next_beat:
                    self._lines.append((encode({"type": "heartbeat", "dropped": self.dropped}), True))
                    next_beat = now + self.heartbeat_every
                    if not self._backlog:
                        self._flush_locked()
                closing, connected, backlog, sock = self._closing, self.connected, self._backlog, self._sock
            if not connected:
                if closing or not self._reconnect():
                    return
                next_beat = time.monotonic()  # the new connection learns the drops at once
            elif backlog:
                try:
                    select.select([], [sock], [], max(0.0, min(0.5, next_beat - time.monotonic())))
                except (OSError, ValueError):
                    pass
                with self._cv:
                    if self.connected:
                        self._flush_locked()
            elif closing:
                return

    def _reconnect(self):
        """After a drop: hello again, every 0.5 s at first, then less often
        (at most every HEARTBEAT_EVERY_S), until welcome or closed, while the
        run's owner lives. False when closing or the owner is gone (then
        on_owner_gone is called, once)."""
        delay = 0.5
        try:
            self._sock.close()
        except OSError:
            pass
        while True:
            with self._cv:
                if self._closing:
                    return False
                self._cv.wait(delay)
                if self._closing:
                    return False
                if self._sent:  # a line half written on the lost connection
                    _, control = self._lines.popleft()
                    self._sent = 0
                    self._ndata -= not control
                self.dropped += self._ndata  # data waiting for the lost connection; control lines go on the new one
                self._lines = collections.deque(x for x in self._lines if x[1])
                self._ndata = 0
                self._backlog = False
            if self.owner is not None and not self.owner.alive():
                if self.on_owner_gone is not None:
                    self.on_owner_gone()
                with self._inbox_cv:
                    self._inbox_cv.notify_all()
                return False
            try:
                welcome = self._handshake()
            except Refused as e:  # the same hello was welcome before: most likely the old connection is not gone yet there
                log.warning("pixelis refused the reconnection (trying again): %s", e)
                delay = min(2 * delay, HEARTBEAT_EVERY_S)
                continue
            except (OSError, ValueError) as e:
                log.debug("pixelis channel: reconnect failed: %s", e)
                delay = min(2 * delay, HEARTBEAT_EVERY_S)
                continue
            with self._cv:
                self._stage = welcome.get("stage")
                self._flush_locked()
            if self._forward is not None:
                self._forward([], self.take_stage(), True)
            return True

    def close(self, flush_timeout=FLUSH_TIMEOUT_S):
        """Write what is queued (waiting at most flush_timeout), then close."""
        with self._cv:
            if self._closing and not self._flusher.is_alive():
                return
            self._closing = True
            self._cv.notify_all()
        self._flusher.join(flush_timeout)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._flusher.join(1.0)
        self._sock.close()
        with self._cv:
            self.connected = False
        with self._inbox_cv:
            self._inbox_cv.notify_all()
