"""The owner watch: whether the process whose death ends the run (pixelis,
or the trainer's parent) still lives. Standard library only."""

from __future__ import annotations

import os

from ._protocol import OWNER_ENV

_HAVE_PROC = os.path.exists("/proc/self/stat")


def _proc_stat(pid):
    """/proc/PID/stat's state letter and start time (clock ticks since boot).
    The command name, in parentheses, may hold both: the fields after it
    start after the last ')'. Raises OSError when there is no such process."""
    with open("/proc/%d/stat" % pid, "rb") as f:
        data = f.read()
    fields = data[data.rindex(b")") + 1:].split()
    return fields[0].decode(), int(fields[19])  # fields 3 (state) and 22 (starttime)


class Owner:
    """The process whose death ends this run: pixelis (PIXELIS_OWNER_PID,
    told apart from a later process given its pid by its start time), or,
    without it, this process's parent at connect()."""

    def __init__(self):
        pid = os.environ.get(OWNER_ENV, "")
        self.pid = int(pid) if pid.isdigit() and int(pid) > 0 else None
        self.parent = os.getppid()
        self.start = None
        if self.pid is not None and _HAVE_PROC:
            try:
                self.start = _proc_stat(self.pid)[1]
            except (OSError, ValueError, IndexError):
                pass  # gone already: alive() says so

    def alive(self):
        if self.pid is None:
            return os.getppid() == self.parent
        if not _HAVE_PROC:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                pass
            return True
        try:
            state, start = _proc_stat(self.pid)
        except (OSError, ValueError, IndexError):
            return False
        return state not in ("Z", "X", "x") and (self.start is None or start == self.start)

    def __str__(self):
        if self.pid is None:
            return "its parent process (pid %d)" % self.parent
        return "pixelis (pid %d)" % self.pid
