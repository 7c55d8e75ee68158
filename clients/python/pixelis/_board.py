"""The command board: the holder's commands for every rank of one node at
the same step boundary, without a collective per step. Standard library only."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import os
import struct
import tempfile
import threading
import time

from ._protocol import log

NO_NEWS = {"commands": [], "connected": True, "stage": None}  # a step boundary without news


class Board:
    """The holder's commands for every rank of one node, without a collective per step.

    A file, created by the holder at connect(), opened by every rank and then
    unlinked, holds each rank's progress (its last step boundary, counted by
    step_boundary calls) and the holder's posts: a payload (commands, a
    reconnect's stage, a lost channel) and the boundary `at` at which every
    rank carries it out. At each boundary a rank, under an exclusive lock,
    reads the posts it has not seen and writes its progress. The holder's
    reader thread posts news as it arrives, under the same lock, for the
    first boundary no rank has passed: at = 1 + max over ranks of their
    progress, or, while a pause is posted and not yet resumed, the pause's
    boundary (no rank passes it). So every rank carries out every payload at
    the same boundary, the first one after the news that is still ahead of
    every rank, and a boundary without news costs a rank four system calls
    (lock, read, write, unlock)."""

    HEAD = struct.Struct("<4sI16sQ")  # magic, world size, token, end of the posts
    MAGIC = b"PXB1"
    LEN = struct.Struct("<I")         # a post: its length, then JSON {"at", "payload"}
    PAUSED_WAIT_S = 0.05              # while paused, a rank without the channel looks for news this often

    def __init__(self, fd, world, rank, path, token):
        self.fd, self.world, self.rank, self.path, self.token = fd, world, rank, path, token
        self.base = self.HEAD.size + 8 * world  # the posts start after the progress of every rank
        self.read_to = self.base
        self.pending = collections.deque()      # (at, payload) read, not yet due
        self.hold_at = None                     # the holder's open pause: its boundary
        self.lock = threading.Lock()            # flock does not exclude this process's own threads

    @property
    def address(self):
        return (self.path, self.token.hex())

    @classmethod
    def create(cls, world, rank, channel_path):
        """The holder's board, next to the channel's socket (None when it cannot be made)."""
        try:
            fd, path = tempfile.mkstemp(prefix="pixelis-board-", dir=os.path.dirname(channel_path) or None)
        except OSError as e:
            log.warning("pixelis: no command board (%s): step boundaries are collectives", e)
            return None
        token = os.urandom(16)
        os.pwrite(fd, cls.HEAD.pack(cls.MAGIC, world, token, 0) + bytes(8 * world), 0)
        b = cls(fd, world, rank, path, token)
        os.pwrite(fd, struct.pack("<Q", b.base), cls.HEAD.size - 8)
        return b

    @classmethod
    def open(cls, address, rank):
        """The holder's board seen from another rank, or None when it is not on this node."""
        path, token = address[0], bytes.fromhex(address[1])
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            return None
        magic, world, tok, _ = cls.HEAD.unpack(os.pread(fd, cls.HEAD.size, 0).ljust(cls.HEAD.size, b"\0"))
        if (magic, tok) != (cls.MAGIC, token):  # another machine's file of the same name
            os.close(fd)
            return None
        return cls(fd, world, rank, path, token)

    @classmethod
    def agree(cls, td, board, holder):
        """The board when every rank opened it, else None (ranks on other
        nodes: step boundaries stay collectives). A collective; the holder
        unlinks the file after it."""
        opened = [None] * td.get_world_size()
        td.all_gather_object(opened, board is not None)
        if board is not None and td.get_rank() == holder:
            os.unlink(board.path)
        if all(opened):
            return board
        if board is not None:
            os.close(board.fd)
        return None

    def exchange(self, boundary, payload, paused, every):
        """The payloads due at this boundary, in order; payload: the
        holder's news (None on other ranks, NO_NEWS for none). While paused
        with nothing due it waits PAUSED_WAIT_S first."""
        with self._locked() as head:
            end = self.HEAD.unpack_from(head)[3]
            if payload is not None and payload != NO_NEWS:
                end = self._post(head, end, payload, every)
            if end > self.read_to:
                self._read(end)
            os.pwrite(self.fd, struct.pack("<q", boundary), self.HEAD.size + 8 * self.rank)
        due = []
        while self.pending and self.pending[0][0] <= boundary:
            at, p = self.pending.popleft()
            if at < boundary:  # cannot happen: a post is never for a boundary a rank has passed
                log.warning("pixelis: a command for step boundary %d seen at %d", at, boundary)
            due.append(p)
        if not due and paused:
            time.sleep(self.PAUSED_WAIT_S)
        return due

    def post(self, payload, every):
        """The holder's news, from any of its threads."""
        with self._locked() as head:
            self._post(head, self.HEAD.unpack_from(head)[3], payload, every)

    @contextlib.contextmanager
    def _locked(self):
        """The board's header and progress, read under its lock (this
        process's threads, then the other ranks' processes)."""
        with self.lock:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            try:
                yield os.pread(self.fd, self.base, 0)
            finally:
                fcntl.flock(self.fd, fcntl.LOCK_UN)

    def _post(self, head, end, payload, every):
        """Append a post for the first boundary no rank has passed (or the
        open pause's); the new end of the posts."""
        if self.hold_at is not None:
            at = self.hold_at
        else:
            at = 1 + max(struct.unpack_from("<%dq" % self.world, head, self.HEAD.size))
            at += -(at - 1) % every  # a boundary every rank looks at (boundary_every)
        for _, kind, _, verdict, _ in payload["commands"]:
            if verdict is None and kind == "pause":
                self.hold_at = at
            elif verdict is None and kind in ("resume", "stop"):
                self.hold_at = None
        if not payload["connected"]:
            self.hold_at = None
        line = json.dumps({"at": at, "payload": payload}, separators=(",", ":"), default=str).encode("utf-8")
        os.pwrite(self.fd, self.LEN.pack(len(line)) + line, end)
        end += self.LEN.size + len(line)
        os.pwrite(self.fd, struct.pack("<Q", end), self.HEAD.size - 8)
        return end

    def _read(self, end):
        data = os.pread(self.fd, end - self.read_to, self.read_to)
        off = 0
        while off < len(data):
            (n,) = self.LEN.unpack_from(data, off)
            msg = json.loads(data[off + self.LEN.size:off + self.LEN.size + n])
            self.pending.append((msg["at"], msg["payload"]))
            off += self.LEN.size + n
        self.read_to = end
