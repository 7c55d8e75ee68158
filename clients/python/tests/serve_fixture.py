"""A real `pixelis serve` for the tests: built from this repository with `go
build` (or $PIXELIS_BIN), on a free loopback port, with a bearer token."""

import ctypes
import os
import re
import secrets
import signal
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
IN_CI = os.environ.get("CI") == "true"


def binary(tmp):
    path = os.environ.get("PIXELIS_BIN")
    if path:
        return path
    path = os.path.join(tmp, "pixelis")
    subprocess.run(["go", "build", "-o", path, "./cmd/pixelis"], cwd=REPO, check=True)
    return path


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a child gets when its parent dies


def die_with_parent():
    """In the child before exec: SIGKILL when the test process dies, so a test
    killed mid-run (a timeout, ^C twice) leaves no server behind."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Server:
    """pixelis serve --config smoke (and extra flags) until stop()."""

    def __init__(self, *flags):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = binary(self.tmp.name)
        self.token = secrets.token_hex(16)
        env = dict(os.environ, PIXELIS_SERVE_TOKEN=self.token)
        self.proc = subprocess.Popen(
            [self.bin, "serve", "--config", "smoke", "--addr", "127.0.0.1:0", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
            preexec_fn=die_with_parent)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError("pixelis serve did not start: %r %s" % (line, self.proc.stderr.read()))
        self.url = m.group(1)

    def stop(self):
        """SIGTERM: the server finishes what is in flight and exits 0."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=120)  # a safety net against a hang
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.stdout.close()
            self.proc.stderr.close()
            self.tmp.cleanup()
        if code != 0:
            raise AssertionError("pixelis serve exited %d after SIGTERM" % code)


def need(module_name):
    """Import an optional module, or skip the test — except under CI=true,
    where its absence fails the test."""
    try:
        return __import__(module_name)
    except ImportError as e:
        if IN_CI:
            raise AssertionError("CI=true and %s is missing: %s" % (module_name, e))
        raise unittest.SkipTest("%s is not installed" % module_name)
