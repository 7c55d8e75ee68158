"""The tests' own serve dies with the test process that started it."""

import os
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def alive(pid):
    """Whether pid is a process that has not exited (a zombie counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


class ServerDiesWithItsTest(unittest.TestCase):
    def test_a_killed_test_leaves_no_server(self):
        code = ("import sys, time; sys.path.insert(0, %r); import serve_fixture; "
                "s = serve_fixture.Server(); print(s.proc.pid, flush=True); time.sleep(600)") % HERE
        test = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        try:
            server = int(test.stdout.readline())
            self.assertTrue(alive(server))
            test.send_signal(signal.SIGKILL)
            test.wait()
            deadline = time.monotonic() + 60
            while alive(server) and time.monotonic() < deadline:
                time.sleep(0.05)  # polling the state, not waiting for it
            self.assertFalse(alive(server), "serve %d outlived the test process that started it" % server)
        finally:
            if test.poll() is None:
                test.kill()
            test.stdout.close()


if __name__ == "__main__":
    unittest.main()
